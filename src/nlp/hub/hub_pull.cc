// spore pull (include/spore/hub.h, NOTE [Model hub]): listing, resumable downloads over libcurl,
// verification, and the lock.
#include <curl/curl.h>
#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/hub.h"

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

// The headers of every response of one request (redirects included), oldest first.
struct Headers {
  std::vector<std::map<std::string, std::string>> blocks;
  // The value from the newest response that has it ("" when none has).
  std::string get(const std::string& name) const {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return f->second;
    return "";
  }
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* h = static_cast<Headers*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    h->blocks.emplace_back();
  } else if (auto colon = line.find(':'); colon != std::string::npos && !h->blocks.empty()) {
    h->blocks.back()[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

// One easy handle per request, with the settings every request shares.
std::unique_ptr<CURL, CurlDeleter> make_handle(const std::string& url, Headers& headers,
                                               std::unique_ptr<curl_slist, SlistDeleter>& extra) {
  init_curl();
  std::unique_ptr<CURL, CurlDeleter> c(curl_easy_init());
  if (!c) throw Error(ErrorCode::kInternal, "libcurl: curl_easy_init failed");
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);  // the Hub redirects LFS files to a CDN
  curl_easy_setopt(c.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "spore-pull/1");
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled connection (under 1 byte/s for 60 s) counts as interrupted and is resumed.
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, 60L);
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

size_t on_body_string(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string http_get_json(const std::string& url) {
  Headers headers;
  std::unique_ptr<curl_slist, SlistDeleter> extra;
  auto c = make_handle(url, headers, extra);
  std::string body;
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body_string);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT, 120L);
  const CURLcode rc = curl_easy_perform(c.get());
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
  return body;
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

void check_repo(const std::string& repo) {
  bool ok = !repo.empty() && repo.size() <= 200 && repo.front() != '/' && repo.back() != '/';
  int slashes = 0;
  for (char c : repo) {
    if (c == '/') ++slashes;
    else if (!std::isalnum((unsigned char)c) && c != '-' && c != '_' && c != '.') ok = false;
  }
  if (!ok || slashes > 1 || repo.find("..") != std::string::npos)
    throw Error(ErrorCode::kValue, "spore pull: '" + repo + "' is not a repository id (owner/name, letters, digits, '-', '_', '.')");
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

// What a file must be, from the listing and, where it says nothing, from the response headers.
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
  std::optional<uint64_t> total;
  std::chrono::steady_clock::time_point last_report = std::chrono::steady_clock::now();
};

size_t on_body_file(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->opened) {
    t->status = status_of(t->curl);
    if (t->status != 200 && t->status != 206) return 0;  // an error page: not written; perform reports it
    // 206 continues the part file; 200 (the server ignored Range) starts it again.
    if (t->status == 200) t->offset = 0;
    t->f = std::fopen(t->part.c_str(), t->status == 206 ? "ab" : "wb");
    if (!t->f) {
      t->error = "cannot open '" + t->part.string() + "' for writing";
      return 0;
    }
    t->opened = true;
  }
  const size_t bytes = size * n;
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
  const HubRevision listing = parse_hub_revision(http_get_json(api), api);
  if (is_commit_sha(o.revision) && listing.sha != o.revision)
    throw Error(ErrorCode::kFormat, "hub listing " + api + " answers for commit " + listing.sha + ", not the requested " +
                                        o.revision + "; the endpoint is not serving that revision");
  r.commit = listing.sha;
  if (!is_commit_sha(o.revision)) log("resolved mutable revision '" + o.revision + "' to commit " + r.commit);
  for (const HubFile& f : listing.files)
    if (f.name == "spore.lock.json")
      throw Error(ErrorCode::kFormat, "repository " + o.repo + " holds its own spore.lock.json, which spore pull would "
                                                               "overwrite; pull it into another tool");

  fs::create_directories(r.dir);
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
    const fs::path final_path = r.dir / hf.name;
    const fs::path part = final_path.string() + ".part";
    fs::create_directories(final_path.parent_path());
    Expected want{hf.size, hf.lfs_sha256, hf.lfs_sha256.empty() ? hf.blob_id : ""};
    PulledFile out;
    out.name = hf.name;

    if (fs::exists(final_path) && (want.size || !want.sha256.empty() || !want.git_sha1.empty())) {
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
    bool complete = false;
    for (int attempt = 1; attempt <= o.max_attempts && !complete; ++attempt) {
      out.attempts = attempt;
      Transfer t;
      t.part = part;
      t.offset = size_or_zero(part);
      t.log = o.log;
      t.name = hf.name;
      t.total = want.size;
      if (want.size && t.offset > *want.size) {  // longer than the file can be: start again
        fs::remove(part);
        t.offset = 0;
      }
      if (want.size && t.offset == *want.size && t.offset > 0) {  // a part already complete: verify it
        complete = true;
        break;
      }
      Headers headers;
      std::unique_ptr<curl_slist, SlistDeleter> extra;
      auto c = make_handle(url, headers, extra);
      t.curl = c.get();
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
      // What the headers say about the file, where the listing did not.
      const std::string linked = etag_value(headers.get("x-linked-etag")), etag = etag_value(headers.get("etag"));
      if (want.sha256.empty() && hex_of(linked, 64)) want.sha256 = linked;
      if (want.sha256.empty() && want.git_sha1.empty() && hex_of(etag, 64)) want.sha256 = etag;
      if (want.sha256.empty() && want.git_sha1.empty() && hex_of(etag, 40)) want.git_sha1 = etag;
      if (!want.size) {
        const std::string ls = headers.get("x-linked-size");
        if (!ls.empty()) want.size = std::strtoull(ls.c_str(), nullptr, 10);
      }
      if (status == 416) {  // the part file does not fit the remote file: start again
        fs::remove(part);
        log(tag + ": the server refused to resume (HTTP 416); starting again");
        continue;
      }
      if (status == 404)
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": HTTP 404 at " + url +
                                        " (the listing names a file the hub does not serve)");
      if (status != 200 && status != 206 && rc != CURLE_OK && !retryable(rc))
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": " + curl_easy_strerror(rc) + " at " + url);
      if (status >= 400 || (status != 200 && status != 206 && status != 0))
        throw Error(ErrorCode::kIO, "spore pull: " + hf.name + ": HTTP " + std::to_string(status) + " at " + url);
      r.downloaded_bytes += t.written;
      if (rc == CURLE_OK) {
        complete = true;
      } else if (retryable(rc)) {
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
                                      " attempts (" + std::to_string(size_or_zero(part)) +
                                      " bytes kept in " + part.string() + "; run spore pull again to resume)");
    if (!fs::exists(part)) {  // an empty file: no body was written
      std::ofstream(part, std::ios::binary).flush();
    }
    const Digests d = digest_file(part);
    if (want.sha256.empty() && want.git_sha1.empty())
      log(tag + ": warning: the hub gave no hash for this file; its SHA-256 " + d.sha256 +
          " is locked as downloaded");
    if (const std::string why = mismatch(d, want); !why.empty()) {
      fs::remove(part);  // never left where it could pass for the file
      throw Error(ErrorCode::kFormat, "spore pull: " + hf.name + " " + why +
                                          "; the download is corrupt and was removed; run spore pull again "
                                          "(if it repeats, the mirror serves bad bytes)");
    }
    fs::rename(part, final_path);
    out.bytes = d.bytes;
    out.sha256 = d.sha256;
    lock.files.push_back({out.name, out.bytes, out.sha256});
    r.files.push_back(out);
  }
  r.lock_path = r.dir / "spore.lock.json";
  write_artifact_lock(r.lock_path, lock);
  return r;
}

}  // namespace spore::hub
