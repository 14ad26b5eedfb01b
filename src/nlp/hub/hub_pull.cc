// spore pull (include/spore/hub.h, NOTE [Model hub]): listing, resumable downloads over libcurl,
// verification, and the lock.
#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/hub.h"
#include "spore/safe_file_name.h"

namespace spore::hub {

namespace fs = std::filesystem;

namespace {

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

std::string lower(std::string s) {
  for (char& c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}
std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

// Header bytes one request may receive, redirects included: the Hub sends a few KB; a hub that
// sends without end is cut off here rather than growing memory.
constexpr size_t kMaxHeaderBytes = 256 << 10;

// The headers of every response of one request (redirects included), oldest first.
struct Headers {
  std::vector<std::map<std::string, std::string>> blocks;
  size_t bytes = 0;
  bool too_many = false;
  // The value from the newest response that has it ("" when none has).
  std::string get(const std::string& name) const {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return f->second;
    return "";
  }
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* h = static_cast<Headers*>(user);
  h->bytes += size * n;
  if (h->bytes > kMaxHeaderBytes) {
    h->too_many = true;
    return 0;  // libcurl stops the transfer (CURLE_WRITE_ERROR)
  }
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    h->blocks.emplace_back();
  } else if (auto colon = line.find(':'); colon != std::string::npos && !h->blocks.empty()) {
    h->blocks.back()[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

// How slow a transfer may be before it counts as stalled (PullOptions::low_speed_*).
struct Speed {
  long bytes = 1024, seconds = 30;
};

// One easy handle per request, with the settings every request shares.
std::unique_ptr<CURL, CurlDeleter> make_handle(const std::string& url, Headers& headers,
                                               std::unique_ptr<curl_slist, SlistDeleter>& extra, Speed speed) {
  init_curl();
  std::unique_ptr<CURL, CurlDeleter> c(curl_easy_init());
  if (!c) throw Error(ErrorCode::kInternal, "libcurl: curl_easy_init failed");
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);  // the Hub redirects LFS files to a CDN
  curl_easy_setopt(c.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "spore-pull/1");
  // Plain HTTP(S) only, redirects included: a hub cannot send the pull to file:// or elsewhere.
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(c.get(), CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled or trickling connection (under speed.bytes per second for speed.seconds, headers
  // included) counts as interrupted: a file's transfer is resumed, within its attempts.
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, std::max(1L, speed.bytes));
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, std::max(1L, speed.seconds));
  curl_easy_setopt(c.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c.get(), CURLOPT_HEADERDATA, &headers);
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  if (const char* token = std::getenv("HF_TOKEN"); token && *token) {
    // libcurl does not send a custom Authorization header to another host after a redirect.
    extra.reset(curl_slist_append(nullptr, (std::string("Authorization: Bearer ") + token).c_str()));
    curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, extra.get());
  }
  return c;
}

long status_of(CURL* c) {
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

// A response body kept in memory, up to a bound (a listing: kMaxListingBytes).
struct BoundedBody {
  std::string text;
  size_t limit = 0;
  bool too_long = false;
};
size_t on_body_string(char* data, size_t size, size_t n, void* user) {
  auto* b = static_cast<BoundedBody*>(user);
  if (b->text.size() + size * n > b->limit) {
    b->too_long = true;
    return 0;  // libcurl stops the transfer (CURLE_WRITE_ERROR)
  }
  b->text.append(data, size * n);
  return size * n;
}

std::string http_get_json(const std::string& url, Speed speed) {
  Headers headers;
  std::unique_ptr<curl_slist, SlistDeleter> extra;
  auto c = make_handle(url, headers, extra, speed);
  BoundedBody body;
  body.limit = kMaxListingBytes;
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body_string);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT, 120L);
  const CURLcode rc = curl_easy_perform(c.get());
  if (body.too_long)
    throw Error(ErrorCode::kIO, "GET " + url + ": the listing is longer than " + std::to_string(kMaxListingBytes >> 20) +
                                    " MiB, more than any repository's; the endpoint is not a Hugging Face hub, "
                                    "or it misbehaves (check --endpoint or HF_ENDPOINT)");
  if (headers.too_many)
    throw Error(ErrorCode::kIO, "GET " + url + ": the response headers run past " + std::to_string(kMaxHeaderBytes >> 10) +
                                    " KiB; the endpoint misbehaves (check --endpoint or HF_ENDPOINT)");
  if (rc != CURLE_OK)
    throw Error(ErrorCode::kIO, "GET " + url + " failed: " + curl_easy_strerror(rc) +
                                    " (check the endpoint, --endpoint or HF_ENDPOINT, and the network)");
  const long status = status_of(c.get());
  if (status == 401 || status == 403)
    throw Error(ErrorCode::kIO, "GET " + url + ": HTTP " + std::to_string(status) +
                                    " (a gated or private repository: set HF_TOKEN to a token that can read it)");
  if (status == 404)
    throw Error(ErrorCode::kIO, "GET " + url + ": HTTP 404: no such repository or revision (check REPO and --revision)");
  if (status != 200) throw Error(ErrorCode::kIO, "GET " + url + ": HTTP " + std::to_string(status));
  return body.text;
}

// Percent-encodes each path component, keeping the slashes.
std::string encode_path(const std::string& path) {
  init_curl();
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t end = path.find('/', start);
    const std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    char* e = curl_easy_escape(nullptr, part.c_str(), (int)part.size());
    out += e;
    curl_free(e);
    if (end == std::string::npos) break;
    out += '/';
    start = end + 1;
  }
  return out;
}

// The Hub's rule (huggingface_hub's validate_repo_id): each part starts and ends with a letter,
// digit or '_', so the default output folder (the name) can be neither "." nor hidden.
void check_repo(const std::string& repo) {
  bool ok = !repo.empty() && repo.size() <= 200 && repo.front() != '/' && repo.back() != '/';
  int slashes = 0;
  for (size_t i = 0; i < repo.size(); ++i) {
    const char c = repo[i];
    if (c == '/') {
      ++slashes;
    } else if (!std::isalnum((unsigned char)c) && c != '-' && c != '_' && c != '.') {
      ok = false;
    } else if (c == '-' || c == '.') {  // not at either end of a part
      if (i == 0 || i + 1 == repo.size() || repo[i - 1] == '/' || repo[i + 1] == '/') ok = false;
    }
  }
  if (!ok || slashes > 1 || repo.find("..") != std::string::npos || repo.find("--") != std::string::npos)
    throw Error(ErrorCode::kValue, "spore pull: '" + repo + "' is not a repository id (owner/name: letters, digits, "
                                   "'-', '_', '.', each part starting and ending with a letter, digit or '_')");
}

// SHA-256 and the git blob SHA-1 ("blob <size>\0" + bytes) of a file, in one read.
struct Digests {
  std::string sha256, git_sha1;
  uint64_t bytes = 0;
};
Digests digest_file(const fs::path& path) {
  Digests d;
  d.bytes = fs::file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "cannot read '" + path.string() + "'");
  Sha256 sha;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha1(), nullptr);
  const std::string prefix = "blob " + std::to_string(d.bytes);
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size() + 1);  // with the NUL
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), (std::streamsize)buf.size());
    const size_t got = (size_t)in.gcount();
    if (got == 0) break;
    sha.update(buf.data(), got);
    EVP_DigestUpdate(ctx.get(), buf.data(), got);
  }
  d.sha256 = sha.hex_digest();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* hex = "0123456789abcdef";
  for (unsigned int i = 0; i < len; ++i) d.git_sha1 += {hex[md[i] >> 4], hex[md[i] & 15]};
  return d;
}

// An ETag's value without W/ and quotes (as huggingface_hub normalises it).
std::string etag_value(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return lower(e);
}
bool hex_of(const std::string& s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!std::isxdigit((unsigned char)c)) return false;
  return true;
}

// A size header's value: decimal digits only, no overflow; nothing otherwise.
std::optional<uint64_t> parse_size(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (uint64_t)(c - '0');
  }
  return v;
}

// What a file must be, from the listing, an earlier lock of the same commit, and where both say
// nothing, from the response headers.
struct Expected {
  std::optional<uint64_t> size;
  std::string sha256, git_sha1;
};

// The state of one transfer, shared with libcurl's callbacks.
struct Transfer {
  fs::path part;
  std::FILE* f = nullptr;
  uint64_t offset = 0;   // bytes already in the part file when the request was sent
  uint64_t written = 0;  // bytes written by this request
  long status = 0;
  bool opened = false;
  std::string error;
  CURL* curl = nullptr;
  std::function<void(const std::string&)> log;
  std::string name;
  std::optional<uint64_t> total;  // the declared size, when known; else from X-Linked-Size
  uint64_t max_undeclared = 0;    // the bound when no size is declared
  const Headers* headers = nullptr;
  uint64_t limit = 0;             // the most bytes the part file may reach
  bool too_long = false;          // the hub sent more than `limit`
  std::chrono::steady_clock::time_point last_report = std::chrono::steady_clock::now();
};

size_t on_body_file(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->opened) {
    t->status = status_of(t->curl);
    if (t->status != 200 && t->status != 206) return 0;  // an error page: not written; perform reports it
    // 206 continues the part file; 200 (the server ignored Range) starts it again.
    if (t->status == 200) t->offset = 0;
    // The file's size bounds what is written: declared by the listing or a lock, else by the
    // redirect's X-Linked-Size, else PullOptions::max_undeclared_bytes.
    if (!t->total && t->headers) t->total = parse_size(t->headers->get("x-linked-size"));
    t->limit = t->total ? *t->total : t->max_undeclared;
    t->f = std::fopen(t->part.c_str(), t->status == 206 ? "ab" : "wb");
    if (!t->f) {
      t->error = "cannot open '" + t->part.string() + "' for writing";
      return 0;
    }
    t->opened = true;
  }
  const size_t bytes = size * n;
  if (t->offset + t->written + bytes > t->limit) {
    t->too_long = true;
    return 0;  // libcurl stops the transfer (CURLE_WRITE_ERROR)
  }
  if (std::fwrite(data, 1, bytes, t->f) != bytes) {
    t->error = "cannot write '" + t->part.string() + "' (disk full?)";
    return 0;
  }
  t->written += bytes;
  const auto now = std::chrono::steady_clock::now();
  if (t->log && now - t->last_report > std::chrono::seconds(2)) {
    t->last_report = now;
    char line[256];
    const double mb = (double)(t->offset + t->written) / 1e6;
    if (t->total)
      std::snprintf(line, sizeof line, "  %s: %.1f / %.1f MB", t->name.c_str(), mb, (double)*t->total / 1e6);
    else
      std::snprintf(line, sizeof line, "  %s: %.1f MB", t->name.c_str(), mb);
    t->log(line);
  }
  return bytes;
}

bool retryable(CURLcode rc) {
  return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
         rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_SEND_ERROR || rc == CURLE_COULDNT_CONNECT;
}

uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto s = fs::file_size(p, ec);
  return ec ? 0 : s;
}

// Checks a complete file against what it must be; the reason it fails, or "" when it passes.
std::string mismatch(const Digests& d, const Expected& e) {
  if (e.size && d.bytes != *e.size)
    return "is " + std::to_string(d.bytes) + " bytes; the hub lists " + std::to_string(*e.size);
  if (!e.sha256.empty() && d.sha256 != e.sha256) return "has SHA-256 " + d.sha256 + "; the hub lists " + e.sha256;
  if (e.sha256.empty() && !e.git_sha1.empty() && d.git_sha1 != e.git_sha1)
    return "has git blob id " + d.git_sha1 + "; the hub lists " + e.git_sha1;
  return "";
}

// The sizes and hashes an earlier pull locked for this repository and commit (none when the
// directory has no such lock): a listing without sizes is then still bounded and checked.
std::map<std::string, LockedFile> earlier_lock(const fs::path& dir, const std::string& repo, const std::string& commit,
                                               const std::function<void(const std::string&)>& log) {
  std::map<std::string, LockedFile> out;
  const fs::path path = dir / "spore.lock.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return out;
  try {
    const ArtifactLock lock = read_artifact_lock(path);
    if (lock.source != "hf:" + repo || lock.revision != commit) return out;
    for (const LockedFile& f : lock.files) out[f.name] = f;
  } catch (const std::exception& e) {  // best effort: the lock is rewritten at the end anyway
    if (log) log(std::string("note: ignoring the unreadable ") + path.string() + ": " + e.what());
  }
  return out;
}

// What a file must be: the listing's facts, with an earlier lock's where the listing has none.
Expected expected_of(const HubFile& hf, const std::map<std::string, LockedFile>& locked) {
  Expected want{hf.size, hf.lfs_sha256, hf.lfs_sha256.empty() ? hf.blob_id : ""};
  const auto it = locked.find(hf.name);
  if (it == locked.end()) return want;
  const LockedFile& l = it->second;
  if (want.size && *want.size != l.bytes)
    throw Error(ErrorCode::kFormat, "spore pull: the hub lists " + hf.name + " as " + std::to_string(*want.size) +
                                        " bytes, but spore.lock.json (an earlier pull of the same commit) has " +
                                        std::to_string(l.bytes) + "; a commit's files cannot change: check the endpoint");
  if (!want.sha256.empty() && want.sha256 != l.sha256)
    throw Error(ErrorCode::kFormat, "spore pull: the hub lists " + hf.name + " with SHA-256 " + want.sha256 +
                                        ", but spore.lock.json (an earlier pull of the same commit) has " + l.sha256 +
                                        "; a commit's files cannot change: check the endpoint");
  want.size = l.bytes;
  want.sha256 = l.sha256;
  return want;
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIO, "spore pull: cannot create the folder " + dir.string() + ": " + ec.message());
}

}  // namespace

PullResult pull(const PullOptions& o) {
  check_repo(o.repo);
  if (o.revision.empty())
    throw Error(ErrorCode::kValue, "spore pull: --revision is required (a 40-hex commit id; see the repository's history)");
  if (!is_commit_sha(o.revision) && !o.allow_mutable)
    throw Error(ErrorCode::kValue,
                "spore pull: revision '" + o.revision + "' is a branch or tag name, which can move, so the artifact "
                "could not be pinned; pass a 40-hex commit id, or --allow-mutable to resolve '" + o.revision +
                "' to its current commit and record that in the lock");
  auto log = [&](const std::string& s) {
    if (o.log) o.log(s);
  };
  const std::string endpoint = default_endpoint(o.endpoint);
  PullResult r;
  r.repo = o.repo;
  r.requested_revision = o.revision;
  r.dir = o.out.empty() ? fs::path(o.repo.substr(o.repo.find('/') + 1)) : o.out;

  init_curl();
  char* rev_esc = curl_easy_escape(nullptr, o.revision.c_str(), (int)o.revision.size());
  const std::string api = endpoint + "/api/models/" + o.repo + "/revision/" + rev_esc + "?blobs=true";
  curl_free(rev_esc);
  log("listing " + o.repo + " @ " + o.revision + " (" + endpoint + ")");
  const Speed speed{o.low_speed_bytes, o.low_speed_seconds};
  const HubRevision listing = parse_hub_revision(http_get_json(api, speed), api);
  if (is_commit_sha(o.revision) && listing.sha != o.revision)
    throw Error(ErrorCode::kFormat, "hub listing " + api + " answers for commit " + listing.sha + ", not the requested " +
                                        o.revision + "; the endpoint is not serving that revision");
  r.commit = listing.sha;
  if (!is_commit_sha(o.revision)) log("resolved mutable revision '" + o.revision + "' to commit " + r.commit);
  for (const HubFile& f : listing.files)
    if (f.name == "spore.lock.json")
      throw Error(ErrorCode::kFormat, "repository " + o.repo + " holds its own spore.lock.json, which spore pull would "
                                                               "overwrite; pull it into another tool");

  make_dirs(r.dir);
  const std::map<std::string, LockedFile> locked = earlier_lock(r.dir, o.repo, r.commit, log);
  // Transfers in progress live apart from every listed name (kPartialDir), so a listing that holds
  // both "model.bin" and "model.bin.part" cannot make one file's transfer resume into the other.
  const fs::path partial_dir = r.dir / kPartialDir;
  ArtifactLock lock{o.repo, "hf:" + o.repo, r.commit, {}};
  size_t index = 0;
  for (const HubFile& hf : listing.files) {
    ++index;
    std::string tag = "[";  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + std::string
    tag += std::to_string(index);
    tag += '/';
    tag += std::to_string(listing.files.size());
    tag += "] ";
    tag += hf.name;
    const fs::path final_path = r.dir / hf.name;  // a checked relative name (parse_hub_revision)
    const fs::path part = partial_dir / (sha256_bytes(hf.name).substr(0, 16) + "-" +
                                         safe_file_name(final_path.filename().string()) + ".part");
    make_dirs(final_path.parent_path());
    make_dirs(partial_dir);
    Expected want = expected_of(hf, locked);
    PulledFile out;
    out.name = hf.name;

    std::error_code ec;
    if (fs::is_regular_file(final_path, ec) && (want.size || !want.sha256.empty() || !want.git_sha1.empty())) {
      const Digests d = digest_file(final_path);
      if (mismatch(d, want).empty()) {
        out.bytes = d.bytes;
        out.sha256 = d.sha256;
        out.reused = true;
        log(tag + ": already present and verified");
        lock.files.push_back({out.name, out.bytes, out.sha256});
        r.files.push_back(out);
        continue;
      }
    }

    const std::string url = endpoint + "/" + o.repo + "/resolve/" + r.commit + "/" + encode_path(hf.name);
    bool complete = false, stalled = false;
    for (int attempt = 1; attempt <= o.max_attempts && !complete; ++attempt) {
      out.attempts = attempt;
      Transfer t;
      t.part = part;
      t.offset = size_or_zero(part);
      t.log = o.log;
      t.name = hf.name;
      t.total = want.size;
      t.max_undeclared = o.max_undeclared_bytes;
      if (want.size && t.offset > *want.size) {  // longer than the file can be: start again
        fs::remove(part, ec);
        t.offset = 0;
      }
      if (want.size && t.offset == *want.size && t.offset > 0) {  // a part already complete: verify it
        complete = true;
        break;
      }
      Headers headers;
      std::unique_ptr<curl_slist, SlistDeleter> extra;
      auto c = make_handle(url, headers, extra, speed);
      t.curl = c.get();
      t.headers = &headers;
      curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body_file);
      curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &t);
      const std::string range = std::to_string(t.offset) + "-";
      if (t.offset > 0) {
        curl_easy_setopt(c.get(), CURLOPT_RANGE, range.c_str());
        log(tag + ": resuming at byte " + std::to_string(t.offset));
      } else {
        log(tag + (want.size ? " (" + std::to_string(*want.size) + " bytes)" : std::string()));
      }
      const CURLcode rc = curl_easy_perform(c.get());
      if (t.f) std::fclose(t.f);
      const long status = status_of(c.get());
      if (!t.error.empty()) throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": " + t.error);
      if (headers.too_many)
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": the response headers run past " +
                                        std::to_string(kMaxHeaderBytes >> 10) + " KiB at " + url + "; the hub misbehaves");
      if (t.too_long) {
        fs::remove(part, ec);  // never kept, so a later run cannot resume from it
        const bool declared = t.total.has_value();
        throw Error(ErrorCode::kFormat,
                    "spore pull: " + hf.name + ": the hub sent more than " + std::to_string(t.limit) + " bytes, " +
                        (declared ? std::string("the size declared for the file (by the listing, X-Linked-Size or an earlier "
                                              "pull's spore.lock.json)")
                                  : "the most taken for a file whose size neither the listing nor X-Linked-Size "
                                    "declares (--max-undeclared-size)") +
                        "; the download was removed (if it repeats, the hub serves bad data)");
      }
      // What the headers say about the file, where the listing did not.
      const std::string linked = etag_value(headers.get("x-linked-etag")), etag = etag_value(headers.get("etag"));
      if (want.sha256.empty() && hex_of(linked, 64)) want.sha256 = linked;
      if (want.sha256.empty() && want.git_sha1.empty() && hex_of(etag, 64)) want.sha256 = etag;
      if (want.sha256.empty() && want.git_sha1.empty() && hex_of(etag, 40)) want.git_sha1 = etag;
      if (!want.size) want.size = parse_size(headers.get("x-linked-size"));
      if (status == 416) {  // the part file does not fit the remote file: start again
        fs::remove(part, ec);
        log(tag + ": the server refused to resume (HTTP 416); starting again");
        continue;
      }
      if (status == 404)
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": HTTP 404 at " + url +
                                        " (the listing names a file the hub does not serve)");
      if (status >= 400)
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": HTTP " + std::to_string(status) + " at " + url);
      if (status != 200 && status != 206 && rc != CURLE_OK && !retryable(rc))
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": " + curl_easy_strerror(rc) + " at " + url);
      if (status != 200 && status != 206 && status != 0)
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": HTTP " + std::to_string(status) + " at " + url);
      r.downloaded_bytes += t.written;
      if (rc == CURLE_OK) {
        complete = true;
      } else if (retryable(rc)) {
        stalled = rc == CURLE_OPERATION_TIMEDOUT;
        log(tag + ": transfer interrupted after " + std::to_string(size_or_zero(part)) + " bytes (" +
            curl_easy_strerror(rc) + ")");
        // No progress at all (a refused or dropped connection): wait a little longer each time.
        if (t.written == 0 && attempt < o.max_attempts) std::this_thread::sleep_for(std::chrono::seconds(attempt));
      } else {
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": " + curl_easy_strerror(rc) + " at " + url);
      }
    }
    if (!complete)
      throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": still incomplete after " + std::to_string(o.max_attempts) +
                                      " attempts" +
                                      (stalled ? ", the last one slower than " + std::to_string(o.low_speed_bytes) +
                                                     " bytes/s for " + std::to_string(o.low_speed_seconds) + " s"
                                               : std::string()) +
                                      " (" + std::to_string(size_or_zero(part)) + " bytes kept in " + part.string() +
                                      "; run spore pull again to resume)");
    if (!fs::exists(part, ec)) {  // an empty file: no body was written
      std::ofstream(part, std::ios::binary).flush();
    }
    const Digests d = digest_file(part);
    if (want.sha256.empty() && want.git_sha1.empty())
      log(tag + ": warning: the hub gave no hash for this file; its SHA-256 " + d.sha256 +
          " is locked as downloaded");
    if (const std::string why = mismatch(d, want); !why.empty()) {
      fs::remove(part, ec);  // never left where it could pass for the file
      throw Error(ErrorCode::kFormat, "spore pull: " + hf.name + " " + why +
                                          "; the download is corrupt and was removed; run spore pull again "
                                          "(if it repeats, the mirror serves bad bytes)");
    }
    fs::rename(part, final_path, ec);
    if (ec)
      throw Error(ErrorCode::kIO, "spore pull: cannot move the verified " + hf.name + " from " + part.string() + " to " +
                                      final_path.string() + ": " + ec.message());
    out.bytes = d.bytes;
    out.sha256 = d.sha256;
    lock.files.push_back({out.name, out.bytes, out.sha256});
    r.files.push_back(out);
  }
  std::error_code ec;
  fs::remove(partial_dir, ec);  // only when empty: nothing partial is left
  r.lock_path = r.dir / "spore.lock.json";
  write_artifact_lock(r.lock_path, lock);
  return r;
}

}  // namespace spore::hub
