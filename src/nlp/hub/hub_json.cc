// The hub's revision listing (include/spore/hub.h): parsed and checked before anything is fetched,
// since its file names become paths on disk. The text is parsed with the harness's depth-bounded
// parser (NOTE [Hostile JSON]): a listing nested 100,000 deep is refused while parsing, before any
// walk over it could recurse.
#include <cstdlib>
#include <set>

#include "spore/error.h"
#include "spore/hub.h"
#include "spore/probe/report.h"
#include "spore/safe_file_name.h"

namespace spore::hub {

namespace {

using json = probe::Json;

bool is_hex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw Error(ErrorCode::kFormat, "hub listing " + std::string(source) + ": " + what);
}

// A name as JSON text (quoted, control characters escaped), for messages.
std::string shown_name(const std::string& name) {
  return json(name.substr(0, 200)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// One component of a repository path. Its characters follow safe_file_name's rules (NOTE [Safe
// file names]), so what the hub names is exactly what lands on disk; a leading dot is allowed once
// (repositories hold .gitattributes), "." and ".." never.
bool hub_component_ok(std::string_view part) {
  if (part.empty() || part == "." || part == "..") return false;
  if (part.front() == '.') return part.size() > 1 && part[1] != '.' && is_safe_file_name(part.substr(1));
  return is_safe_file_name(part);
}

// A repository file name becomes a path under the output directory: nothing that could leave it,
// and nothing spore pull keeps there itself.
void check_name(std::string_view source, const std::string& name) {
  if (name.empty() || name.size() > 4096) fail(source, "a sibling has an empty or over-long rfilename");
  if (name.front() == '/') fail(source, "rfilename " + shown_name(name) + " is absolute");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '\\')
      fail(source, "rfilename " + shown_name(name) + " holds a control character or a backslash");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view part(name.data() + start, end - start);
    if (part.empty() || part == "." || part == "..")
      fail(source, "rfilename " + shown_name(name) + " has an empty, '.' or '..' path component");
    if (!hub_component_ok(part))
      fail(source, "rfilename " + shown_name(name) + " has the component " + shown_name(std::string(part)) +
                       ", which is not a portable file name (safe_file_name makes it " +
                       shown_name(safe_file_name(part)) + "; NOTE [Safe file names]); spore pull keeps a "
                       "repository's names as they are, so it refuses the listing rather than rename the file");
    start = end + 1;
  }
  if (name == kPartialDir || name.rfind(std::string(kPartialDir) + "/", 0) == 0)
    fail(source, "rfilename " + shown_name(name) + " is in " + kPartialDir + ", the folder spore pull keeps partial downloads in");
}

uint64_t size_field(std::string_view source, const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail(source, what + " is " + (j.is_number() ? j.dump() : std::string("a ") + j.type_name()) +
                     ", not a non-negative integer");
  return j.get<uint64_t>();
}

}  // namespace

bool is_commit_sha(std::string_view revision) { return is_hex(revision, 40); }

HubRevision parse_hub_revision(std::string_view text, std::string_view source) {
  if (text.size() > kMaxListingBytes)
    fail(source, "is " + std::to_string(text.size()) + " bytes, over the " + std::to_string(kMaxListingBytes >> 20) +
                     " MiB a listing may have");
  const json j = probe::parse_json(text, "hub listing " + std::string(source));
  if (!j.is_object()) fail(source, "is not a JSON object");
  HubRevision r;
  if (!j.contains("sha") || !j["sha"].is_string()) fail(source, "has no string 'sha' (the commit)");
  r.sha = j["sha"].get<std::string>();
  if (!is_commit_sha(r.sha)) fail(source, "'sha' is " + shown_name(r.sha) + ", not 40 lowercase hex digits");
  if (!j.contains("siblings") || !j["siblings"].is_array()) fail(source, "has no 'siblings' array (the files)");
  if (j["siblings"].size() > kMaxHubFiles)
    fail(source, "lists " + std::to_string(j["siblings"].size()) + " files, over the " + std::to_string(kMaxHubFiles) +
                     " spore pull takes from one repository");
  std::set<std::string> seen;
  size_t k = 0;
  for (const json& s : j["siblings"]) {
    const std::string at = "siblings[" + std::to_string(k++) + "]";
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
      fail(source, at + " has no string 'rfilename'");
    HubFile f;
    f.name = s["rfilename"].get<std::string>();
    check_name(source, f.name);
    if (!seen.insert(f.name).second) fail(source, "rfilename " + shown_name(f.name) + " appears twice");
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
  // A name that is also the folder of another ("a" and "a/b") cannot be both on disk.
  for (const std::string& name : seen)
    if (auto it = seen.lower_bound(name + "/"); it != seen.end() && it->rfind(name + "/", 0) == 0)
      fail(source, "rfilename " + shown_name(name) + " is a file, and " + shown_name(*it) + " puts a folder of that name");
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
