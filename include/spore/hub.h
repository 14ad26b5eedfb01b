// `spore pull`: a model from a Hugging Face-compatible hub, pinned (NOTE [Model hub] in
// docs/design.md). The revision is listed with GET {endpoint}/api/models/{repo}/revision/{rev}
// ?blobs=true (the commit "sha" and "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256",
// "size"}}]), each file fetched from {endpoint}/{repo}/resolve/{commit}/{file} (redirects followed,
// an interrupted transfer resumed with Range), its size checked, and its hash: the SHA-256 of an
// LFS file (from the listing, or X-Linked-Etag / ETag), the git blob SHA-1 of a small file. Files
// reach their real names only once verified; spore.lock.json records the commit and every file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spore/artifact_lock.h"

namespace spore::hub {

struct HubFile {
  std::string name;                   // rfilename: a relative path, checked
  std::optional<uint64_t> size;       // bytes, when the listing gives them
  std::string blob_id;                // git blob SHA-1 (40 hex), or empty
  std::string lfs_sha256;             // 64 hex for LFS files, or empty
};

struct HubRevision {
  std::string sha;  // the commit (40 lowercase hex)
  std::vector<HubFile> files;
};

// Parses the revision API's JSON. kFormat naming `source` and the field for anything malformed:
// no "sha" of 40 hex digits, a sibling without a string rfilename, a file name that is absolute,
// contains "..", a backslash or a control character, a duplicate name, sizes that are not
// non-negative integers, hashes that are not hex of the right length.
HubRevision parse_hub_revision(std::string_view json_text, std::string_view source = "<hub response>");

// True for a 40-hex commit id (an immutable revision); branch and tag names are mutable.
bool is_commit_sha(std::string_view revision);

// The endpoint to use: `flag` when given, else $HF_ENDPOINT, else https://huggingface.co (no
// trailing slash).
std::string default_endpoint(const std::string& flag = "");

struct PullOptions {
  std::string repo, revision;
  std::string endpoint;            // empty: default_endpoint()
  std::filesystem::path out;       // empty: ./<repo name>
  bool allow_mutable = false;      // resolve a branch or tag to its commit instead of refusing
  int max_attempts = 5;            // per file, for interrupted transfers
  // Progress lines (stderr in the CLI); may be empty.
  std::function<void(const std::string&)> log;
};

struct PulledFile {
  std::string name;
  uint64_t bytes = 0;
  std::string sha256;
  bool reused = false;   // already present and verified, not downloaded again
  int attempts = 0;      // transfers it took (more than 1: resumed)
};

struct PullResult {
  std::filesystem::path dir, lock_path;
  std::string repo, requested_revision, commit;
  std::vector<PulledFile> files;
  uint64_t downloaded_bytes = 0;
};

// Lists, downloads, verifies and locks. Throws kValue for a mutable revision without
// allow_mutable, kIO for network failures and HTTP errors (naming the URL and status),
// kFormat for a size or hash mismatch (naming the file; the bad bytes are removed, never left
// under the file's name).
PullResult pull(const PullOptions& options);

}  // namespace spore::hub
