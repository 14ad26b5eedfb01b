// Helpers of the data tests: fixture paths, scratch files, and checks of spore::Error.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "spore/data.h"
#include "test_util.h"

namespace spore::data::test {

inline std::string fixture(const std::string& name) {
  return std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/data/" + name;
}

// A directory of scratch files, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    // /dev/shm when there is one: the fuzz tests write hundreds of small files.
    std::error_code ec;
    std::filesystem::path root =
        std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
            ? std::filesystem::path("/dev/shm")
            : std::filesystem::temp_directory_path();
    dir_ =
        root / ("spore_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(bytes.data(), (std::streamsize)bytes.size());
    return path(name);
  }

 private:
  std::filesystem::path dir_;
};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

using spore::test::expect_error;  // tests/test_util.h

// Reads every row of a pass.
inline std::vector<Row> collect(const Dataset& ds) {
  std::vector<Row> rows;
  auto it = ds.create_tuple_iterator();
  while (auto r = it.next()) rows.push_back(std::move(*r));
  return rows;
}

// The bytes of every value of every row: equality means identical pipelines' output.
inline std::vector<std::vector<uint8_t>> fingerprint(const std::vector<Row>& rows) {
  std::vector<std::vector<uint8_t>> out;
  for (const Row& r : rows)
    for (const Tensor& t : r) {
      out.push_back(t.to_bytes());
      std::string s = t.shape().str() + dtype_name(t.dtype());
      out.emplace_back(s.begin(), s.end());
    }
  return out;
}

}  // namespace spore::data::test
