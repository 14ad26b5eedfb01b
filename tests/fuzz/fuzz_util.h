// Helpers of the libFuzzer targets (tests/fuzz, docs/fuzzing.md).
//
// The contract every target checks: an input either reads or throws spore::Error. Any other
// exception escapes LLVMFuzzerTestOneInput and libFuzzer reports it, as it reports sanitizer
// findings, timeouts and broken invariants (require()).
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "spore/error.h"
#include "spore/ir.h"
#include "spore/tensor.h"

namespace spore::fuzz {

// Aborts (a finding) when an invariant of a successful read does not hold.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz contract broken: %s\n", what);
    std::abort();
  }
}

// An imported graph refers only to values it has: every node has an op, and every node input and
// output and graph input and output is a value index in range (the importers' fuzz targets).
inline void require_graph_in_range(const ir::Graph& g) {
  const size_t n = g.values.size();
  for (const ir::Node& node : g.nodes) {
    require(node.def != nullptr, "a node without an op");
    for (uint32_t id : node.inputs) require(id < n, "a node input out of range");
    for (uint32_t id : node.outputs) require(id < n, "a node output out of range");
  }
  for (uint32_t id : g.inputs) require(id < n, "a graph input out of range");
  for (uint32_t id : g.outputs) require(id < n, "a graph output out of range");
}

// The scratch files this process wrote, removed when it exits normally (libFuzzer exits at
// -max_total_time); a crash leaves them beside its reproducer.
inline std::set<std::string>& scratch_paths() {
  static std::set<std::string> paths;
  static const bool cleanup = [] {
    return std::atexit([] {
      for (const std::string& p : scratch_paths()) std::remove(p.c_str());
    }) == 0;
  }();
  (void)cleanup;
  return paths;
}

// Writes the bytes to this process's scratch file (in /dev/shm when it exists) and returns its
// path, for readers that take a path. One file per process and suffix, overwritten each time.
inline std::string scratch_file(const void* data, size_t size, const char* suffix) {
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path = dir + "/spore_fuzz_" + std::to_string(getpid()) + suffix;
  scratch_paths().insert(path);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  require(f != nullptr, "cannot create the scratch file");
  require(size == 0 || std::fwrite(data, 1, size, f) == size, "cannot write the scratch file");
  require(std::fclose(f) == 0, "cannot close the scratch file");
  return path;
}

// Reads a whole-array file (.npy, IDX) with `load`: an array read must fit in its file and copy
// out; a refusal must be a spore::Error.
template <class Load>
void load_array(Load load, const std::string& path, size_t file_size) {
  try {
    Tensor t = load(path);
    require(t.nbytes() <= file_size, "an array larger than its file");
    (void)t.to_bytes();
  } catch (const Error&) {
  }
}

// Rows a target reads from a source: a hostile header may declare billions of empty rows, which
// is legal and only slow.
inline constexpr int64_t kMaxRows = 64;

}  // namespace spore::fuzz
