// libFuzzer target: the hub's revision listing parser (src/nlp/hub/hub_json.cc), whose file
// names become paths under `spore pull`'s output directory.
//
// Contract checked: any input either parses into a 40-hex commit and at most kMaxHubFiles files
// whose names are relative paths without empty, "." or ".." components, control characters or
// backslashes, each component a safe file name (NOTE [Safe file names]; one leading dot allowed),
// none under kPartialDir, unique, with hashes of the right length, or throws spore::Error. The
// corpus holds a listing nested 2,000 deep (nested_size.json): depth is refused while parsing.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "spore/error.h"
#include "spore/hub.h"
#include "spore/safe_file_name.h"

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
    require(r.files.size() <= hub::kMaxHubFiles);
    for (const hub::HubFile& f : r.files) {
      require(f.name.rfind(std::string(hub::kPartialDir) + "/", 0) != 0);
      for (size_t start = 0; start <= f.name.size();) {
        size_t end = f.name.find('/', start);
        if (end == std::string::npos) end = f.name.size();
        const std::string part = f.name.substr(start, end - start);
        require(spore::is_safe_file_name(part) || (part.size() > 1 && part[0] == '.' && part[1] != '.' &&
                                                   spore::is_safe_file_name(part.substr(1))));
        start = end + 1;
      }
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
