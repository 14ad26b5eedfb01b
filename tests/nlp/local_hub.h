// tools/test_hub.py as a child process on 127.0.0.1, for spore pull's tests (pull_test.cc,
// pull_hostile_test.cc): started on a folder of repositories (ROOT/<owner>/<name>/<files>), it
// serves them as the Hub does, and acts out a failure for repositories named for one (see the
// script's docstring).
#pragma once
#include <openssl/evp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace spore::test {

inline std::string hub_read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void hub_write_text(const std::filesystem::path& p, const std::string& s) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// The commit tools/test_hub.py gives a repository: sha1("spore-test-hub:" + repo).
inline std::string hub_commit_of(const std::string& repo) {
  const std::string s = "spore-test-hub:" + repo;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha1(), nullptr);
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

class LocalHub {
 public:
  // Serves `repos` (a folder of owner/name folders); `work` holds the port file and the log.
  LocalHub(const std::filesystem::path& repos, const std::filesystem::path& work) : log_(work / "requests.log") {
    const std::filesystem::path port_file = work / "port";
    std::filesystem::create_directories(work);
    std::filesystem::remove(port_file);
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string script = std::string(SPORE_SOURCE_DIR) + "/tools/test_hub.py";
      const std::string hub = repos.string(), pf = port_file.string(), lg = log_.string();
      ::execlp("python3", "python3", script.c_str(), "--root", hub.c_str(), "--port-file", pf.c_str(), "--log",
               lg.c_str(), (char*)nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !std::filesystem::exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::filesystem::exists(port_file)) endpoint_ = "http://127.0.0.1:" + hub_read_text(port_file);
  }
  ~LocalHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  LocalHub(const LocalHub&) = delete;
  LocalHub& operator=(const LocalHub&) = delete;

  bool started() const { return !endpoint_.empty(); }
  const std::string& endpoint() const { return endpoint_; }
  // Every request, a JSON line each: {"method", "path", "range"}.
  const std::filesystem::path& log() const { return log_; }

 private:
  std::filesystem::path log_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace spore::test
