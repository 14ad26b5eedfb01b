// `spore pull`: a model from a Hugging Face-compatible hub, pinned (NOTE [Model hub] in
// docs/design.md). The revision is listed with GET {endpoint}/api/models/{repo}/revision/{rev}
// ?blobs=true (the commit "sha" and "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256",
// "size"}}]), each file fetched from {endpoint}/{repo}/resolve/{commit}/{file} (redirects followed,
// an interrupted transfer resumed with Range), its size checked, and its hash: the SHA-256 of an
// LFS file (from the listing, or X-Linked-Etag / ETag), the git blob SHA-1 of a small file. Files
// reach their real names only once verified; spore.lock.json records the commit and every file.
// What a hub sends is bounded: the listing's bytes, depth and file count, each file's bytes (its
// declared size, else max_undeclared_bytes), and the time a transfer may go without progress.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spore/artifact_lock.h"

namespace spore::hub {

// Bounds on a listing: its bytes (the Hub's listing of a large repository is a few MB) and its
// files. Objects and arrays nest at most probe::kMaxJsonDepth deep (NOTE [Hostile JSON]).
inline constexpr size_t kMaxListingBytes = size_t{16} << 20;
inline constexpr size_t kMaxHubFiles = 65536;
// The folder under the output directory where transfers in progress live, each as
// "<16 hex of the name's SHA-256>-<file name>.part", apart from every listed name (a listing may
// name neither this folder nor anything in it), so a partial file can never be taken for a file.
inline constexpr const char* kPartialDir = ".spore-pull";

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
// text over kMaxListingBytes or nested deeper than probe::kMaxJsonDepth, no "sha" of 40 hex digits,
// more than kMaxHubFiles siblings, a sibling without a string rfilename, a file name that is
// absolute, contains "..", a backslash or a control character, or a component that is not a safe
// file name (NOTE [Safe file names]; a leading dot is allowed), a name in kPartialDir, a duplicate
// name, a name that is also another's folder, sizes that are not non-negative integers, hashes
// that are not hex of the right length.
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
  // A transfer slower than low_speed_bytes per second for low_speed_seconds counts as stalled: it
  // is dropped and resumed (within max_attempts), so a hub that trickles bytes cannot hold a pull
  // forever (libcurl's CURLOPT_LOW_SPEED_LIMIT / _TIME).
  long low_speed_bytes = 1024, low_speed_seconds = 30;
  // The most bytes taken for a file whose size neither the listing, the X-Linked-Size header nor
  // an earlier pull's lock declares; a file served past it is refused (kFormat). The Hub stores
  // files over 10 MB in LFS, which always declares sizes, so 1 GiB only bounds a hostile stream.
  uint64_t max_undeclared_bytes = uint64_t{1} << 30;
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
// allow_mutable, kIO for network failures and HTTP errors (naming the URL and status), and for a
// listing over kMaxListingBytes, kFormat for a bad listing and for a size or hash mismatch (naming
// the file; the bad bytes are removed, never left under the file's name). When the output
// directory already holds a spore.lock.json of the same repository and commit, its sizes and
// SHA-256s are what the files must be where the listing says nothing (and must agree where it
// does).
PullResult pull(const PullOptions& options);

}  // namespace spore::hub
