// The hub's revision listing (include/spore/hub.h): parsed and checked before anything is fetched,
// since its file names become paths on disk.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "spore/error.h"
#include "spore/hub.h"

namespace spore::hub {

namespace {

using nlohmann::json;

bool is_hex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw Error(ErrorCode::kFormat, "hub listing " + std::string(source) + ": " + what);
}

// A repository file name becomes a path under the output directory: nothing that could leave it.
void check_name(std::string_view source, const std::string& name) {
  if (name.empty() || name.size() > 4096) fail(source, "a sibling has an empty or over-long rfilename");
  if (name.front() == '/') fail(source, "rfilename '" + name + "' is absolute");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '\\') fail(source, "rfilename '" + json(name).dump() + "' holds a control character or a backslash");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view part(name.data() + start, end - start);
    if (part.empty() || part == "." || part == "..")
      fail(source, "rfilename '" + name + "' has an empty, '.' or '..' path component");
    start = end + 1;
  }
}

uint64_t size_field(std::string_view source, const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail(source, what + " is " + j.dump().substr(0, 40) + ", not a non-negative integer");
  return j.get<uint64_t>();
}

}  // namespace

bool is_commit_sha(std::string_view revision) { return is_hex(revision, 40); }

HubRevision parse_hub_revision(std::string_view text, std::string_view source) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) fail(source, "is not valid JSON");
  if (!j.is_object()) fail(source, "is not a JSON object");
  HubRevision r;
  if (!j.contains("sha") || !j["sha"].is_string()) fail(source, "has no string 'sha' (the commit)");
  r.sha = j["sha"].get<std::string>();
  if (!is_commit_sha(r.sha)) fail(source, "'sha' is '" + r.sha.substr(0, 80) + "', not 40 lowercase hex digits");
  if (!j.contains("siblings") || !j["siblings"].is_array()) fail(source, "has no 'siblings' array (the files)");
  std::set<std::string> seen;
  size_t k = 0;
  for (const json& s : j["siblings"]) {
    const std::string at = "siblings[" + std::to_string(k++) + "]";
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
      fail(source, at + " has no string 'rfilename'");
    HubFile f;
    f.name = s["rfilename"].get<std::string>();
    check_name(source, f.name);
    if (!seen.insert(f.name).second) fail(source, "rfilename '" + f.name + "' appears twice");
    if (s.contains("size") && !s["size"].is_null()) f.size = size_field(source, s["size"], at + ".size");
    if (s.contains("blobId") && !s["blobId"].is_null()) {
      if (!s["blobId"].is_string() || !is_hex(s["blobId"].get<std::string>(), 40))
        fail(source, at + ".blobId is not 40 lowercase hex digits");
      f.blob_id = s["blobId"].get<std::string>();
    }
    if (s.contains("lfs") && !s["lfs"].is_null()) {
      const json& l = s["lfs"];
      if (!l.is_object()) fail(source, at + ".lfs is not an object");
      if (!l.contains("sha256") || !l["sha256"].is_string() || !is_hex(l["sha256"].get<std::string>(), 64))
        fail(source, at + ".lfs.sha256 is not 64 lowercase hex digits");
      f.lfs_sha256 = l["sha256"].get<std::string>();
      if (l.contains("size")) {
        const uint64_t lfs_size = size_field(source, l["size"], at + ".lfs.size");
        if (f.size && *f.size != lfs_size)
          fail(source, at + " has size " + std::to_string(*f.size) + " but lfs.size " + std::to_string(lfs_size));
        f.size = lfs_size;
      }
    }
    r.files.push_back(std::move(f));
  }
  return r;
}

std::string default_endpoint(const std::string& flag) {
  std::string e = flag;
  if (e.empty())
    if (const char* env = std::getenv("HF_ENDPOINT"); env && *env) e = env;
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

}  // namespace spore::hub
