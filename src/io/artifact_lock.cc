// Lock files and artifact verification (NOTE [Artifact locks]).
#include "spore/artifact_lock.h"

#include <nlohmann/json.hpp>

#include <set>
#include <system_error>

#include "spore/error.h"
#include "spore/format.h"

namespace spore {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void bad_lock(const fs::path& path, const std::string& what) {
  throw Error(ErrorCode::kFormat, "artifact lock " + path.string() + ": " + what +
                                      " (regenerate it with `spore pull`, or fix the file)");
}

const json& member(const fs::path& path, const json& obj, const char* key, json::value_t type,
                   const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad_lock(path, where + "missing field '" + key + "'");
  const bool ok = type == json::value_t::number_unsigned ? it->is_number_unsigned() : it->type() == type;
  if (!ok) bad_lock(path, where + "field '" + key + "' has the wrong type");
  return *it;
}

bool is_hex_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Relative, no "..", no empty components: a lock cannot name a file outside its artifact.
bool is_safe_relative(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos) return false;
  for (const auto& part : fs::path(name))
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

}  // namespace

const char* file_check_name(FileCheck c) {
  switch (c) {
    case FileCheck::kOk: return "ok";
    case FileCheck::kMissing: return "missing";
    case FileCheck::kSizeMismatch: return "size mismatch";
    case FileCheck::kHashMismatch: return "SHA-256 mismatch";
  }
  return "?";
}

ArtifactLock read_artifact_lock(const fs::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  json doc = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) bad_lock(path, "not a JSON object");
  ArtifactLock lock;
  if (auto it = doc.find("name"); it != doc.end() && it->is_string()) lock.name = *it;
  lock.source = member(path, doc, "source", json::value_t::string, "").get<std::string>();
  lock.revision = member(path, doc, "revision", json::value_t::string, "").get<std::string>();
  const json& files = member(path, doc, "files", json::value_t::array, "");
  if (files.empty()) bad_lock(path, "'files' is empty");
  std::set<std::string> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string where = "files[" + std::to_string(i) + "]: ";
    if (!files[i].is_object()) bad_lock(path, where + "not an object");
    LockedFile f;
    f.name = member(path, files[i], "name", json::value_t::string, where).get<std::string>();
    f.bytes = member(path, files[i], "bytes", json::value_t::number_unsigned, where).get<uint64_t>();
    f.sha256 = member(path, files[i], "sha256", json::value_t::string, where).get<std::string>();
    if (!is_safe_relative(f.name)) bad_lock(path, where + "name '" + f.name + "' is not a relative path inside the artifact");
    if (!is_hex_digest(f.sha256)) bad_lock(path, where + "sha256 is not 64 lowercase hex digits");
    if (!seen.insert(f.name).second) bad_lock(path, where + "'" + f.name + "' is listed twice");
    lock.files.push_back(std::move(f));
  }
  return lock;
}

void write_artifact_lock(const fs::path& path, const ArtifactLock& lock) {
  json doc = json::object();
  doc["name"] = lock.name;
  doc["source"] = lock.source;
  doc["revision"] = lock.revision;
  doc["files"] = json::array();
  for (const auto& f : lock.files) doc["files"].push_back({{"name", f.name}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  const std::string text = doc.dump(2) + "\n";
  atomic_write_file(path, std::span<const uint8_t>((const uint8_t*)text.data(), text.size()));
}

ArtifactLock make_artifact_lock(const fs::path& dir, const std::vector<std::string>& names, std::string name,
                                std::string source, std::string revision) {
  ArtifactLock lock{std::move(name), std::move(source), std::move(revision), {}};
  for (const auto& n : names) {
    if (!is_safe_relative(n))
      throw Error(ErrorCode::kValue, "artifact lock: '" + n + "' is not a relative path inside " + dir.string());
    const fs::path p = dir / n;
    std::error_code ec;
    const uint64_t size = fs::file_size(p, ec);
    if (ec) throw Error(ErrorCode::kIO, "artifact lock: cannot read " + p.string() + ": " + ec.message());
    lock.files.push_back({n, size, sha256_file(p)});
  }
  return lock;
}

fs::path find_artifact_lock(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && path.extension() == ".json") return path;
  const fs::path inside = path / "spore.lock.json";
  if (fs::is_regular_file(inside, ec)) return inside;
  fs::path beside = path;
  if (!beside.has_filename()) beside = beside.parent_path();  // "dir/" -> "dir"
  beside += ".lock.json";
  if (fs::is_regular_file(beside, ec)) return beside;
  throw Error(ErrorCode::kIO, "no artifact lock for " + path.string() + ": looked for " + inside.string() +
                                  " and " + beside.string() + " (`spore pull` writes one)");
}

VerifyResult verify_artifact(const fs::path& dir, const ArtifactLock& lock) {
  VerifyResult r;
  r.dir = dir;
  r.lock = lock;
  for (const auto& f : lock.files) {
    FileVerdict v{f, FileCheck::kOk, 0, {}};
    const fs::path p = dir / f.name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      v.check = FileCheck::kMissing;
    } else {
      v.actual_bytes = fs::file_size(p, ec);
      if (ec || v.actual_bytes != f.bytes) {
        v.check = FileCheck::kSizeMismatch;
      } else {
        v.actual_sha256 = sha256_file(p);
        if (v.actual_sha256 != f.sha256) v.check = FileCheck::kHashMismatch;
      }
    }
    r.files.push_back(std::move(v));
  }
  return r;
}

VerifyResult verify_artifact(const fs::path& path) {
  const fs::path lock_path = find_artifact_lock(path);
  std::error_code ec;
  fs::path dir;
  if (fs::is_directory(path, ec)) {
    dir = path;
  } else {  // the lock itself: its directory, or for "<dir>.lock.json" the directory beside it
    const std::string file = lock_path.filename().string();
    const std::string suffix = ".lock.json";
    dir = lock_path.parent_path();
    if (file != "spore.lock.json" && file.size() > suffix.size() &&
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0)
      dir /= file.substr(0, file.size() - suffix.size());
  }
  VerifyResult r = verify_artifact(dir, read_artifact_lock(lock_path));
  r.lock_path = lock_path;
  return r;
}

void require_verified(const VerifyResult& result) {
  if (result.ok()) return;
  std::string msg = "artifact " + result.dir.string() + " does not match its lock " + result.lock_path.string() + ":";
  for (const auto& f : result.files) {
    if (f.check == FileCheck::kOk) continue;
    msg += "\n  " + f.expected.name + ": " + file_check_name(f.check);
    if (f.check == FileCheck::kSizeMismatch)
      msg += " (" + std::to_string(f.actual_bytes) + " bytes, locked " + std::to_string(f.expected.bytes) + ")";
    if (f.check == FileCheck::kHashMismatch) msg += " (" + f.actual_sha256 + ", locked " + f.expected.sha256 + ")";
  }
  msg += "\nRe-download it (`spore pull`), or pass --allow-unverified to load it anyway (every report records that).";
  throw Error(ErrorCode::kFormat, msg);
}

}  // namespace spore
