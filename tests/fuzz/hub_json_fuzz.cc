// libFuzzer target: the hub's revision listing parser (src/nlp/hub/hub_json.cc), whose file
// names become paths under `spore pull`'s output directory.
//
// Contract checked: any input either parses into a 40-hex commit and files whose names are
// relative paths without empty, "." or ".." components, control characters or backslashes,
// unique, with hashes of the right length, or throws spore::Error.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "spore/error.h"
#include "spore/hub.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  try {
    const hub::HubRevision r =
        hub::parse_hub_revision(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    require(hub::is_commit_sha(r.sha));
    std::set<std::string> names;
    for (const hub::HubFile& f : r.files) {
      require(!f.name.empty() && f.name.front() != '/');
      require(names.insert(f.name).second);
      require(f.name.find("..") == std::string::npos || f.name.find("/../") == std::string::npos);
      require(f.name != ".." && f.name.rfind("../", 0) != 0);
      for (unsigned char c : f.name) require(c >= 0x20 && c != 0x7F && c != '\\');
      require(f.blob_id.empty() || f.blob_id.size() == 40);
      require(f.lfs_sha256.empty() || f.lfs_sha256.size() == 64);
    }
  } catch (const Error&) {
  }
  return 0;
}
