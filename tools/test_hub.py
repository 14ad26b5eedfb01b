#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for `spore pull`'s tests (tests/nlp/pull_test.cc).

Serves the repositories under --root (ROOT/<owner>/<name>/<files>) on 127.0.0.1 the way the Hub
does (NOTE [Model hub] in docs/design.md):
  GET /api/models/<repo>/revision/<rev>[?blobs=true]
      {"id", "sha": <commit>, "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256", "size",
      "pointerSize"}}]}; <rev> is the commit or the branch "main" (anything else: 404).
  GET /<repo>/resolve/<rev>/<file>
      small files: 200 with ETag "<git blob sha1>" and X-Repo-Commit;
      LFS files (*.safetensors, *.gguf, *.bin): 302 to /cdn/<sha256> with X-Linked-Etag
      "<sha256>", X-Linked-Size and X-Repo-Commit, as the Hub redirects to its CDN; /cdn honours
      Range (206 with Content-Range).
Repositories named for a failure act it out:
  */interrupted  the first LFS transfer of each file closes after half of the body
  *corrupt*      LFS bytes served with one byte flipped (the listing keeps the true SHA-256)
  */missing      the listing names missing.bin, which resolves to 404
  *bare*         the listing has file names only (as without ?blobs=true, or from a mirror that
                 gives no more), so the hashes come from the resolve responses' headers
Hostile hubs, for the bounds `spore pull` keeps (tests/nlp/pull_hostile_test.cc):
  */nested-listing   the first sibling's "size" is an array nested 100,000 deep
  */endless-listing  the listing never ends (a JSON prefix, then siblings until the client leaves)
  *endless-file*     every file is served without Content-Length or hashes and without end (up to
                     ENDLESS_CAP bytes, so a client without bounds still finishes)
  */trickle          every file is served at 2 bytes per second
  */endless-headers  every resolve response sends header lines until the client leaves
The commit of a repository is sha1("spore-test-hub:<repo>"). Every request is appended to --log
as a JSON line {"method", "path", "range"} so a test can see that a resume used Range.

Run: python3 tools/test_hub.py --root DIR --port-file FILE [--log FILE]; the port (chosen by the
OS) is written to FILE once the server listens. Python's standard library only.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")
ENDLESS_CAP = 256 << 20  # what an "endless" body or listing sends at most


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (hashlib.sha256(data).hexdigest(), len(data))).encode()


class Hub:
    def __init__(self, root: str, log_path: str | None):
        self.root = root
        self.log_path = log_path
        self.lock = threading.Lock()
        self.interrupted: set[str] = set()

    def commit(self, repo: str) -> str:
        return hashlib.sha1(("spore-test-hub:" + repo).encode()).hexdigest()

    def files(self, repo: str) -> list[str]:
        base = os.path.join(self.root, repo)
        out = []
        for dirpath, _, names in os.walk(base):
            for n in names:
                out.append(os.path.relpath(os.path.join(dirpath, n), base).replace(os.sep, "/"))
        return sorted(out)

    def read(self, repo: str, name: str) -> bytes:
        with open(os.path.join(self.root, repo, name), "rb") as f:
            return f.read()

    def log(self, entry: dict) -> None:
        if self.log_path:
            with self.lock, open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: Hub

    def log_message(self, fmt, *args):  # quiet: the test reads --log instead
        pass

    def send_bytes(self, status: int, body: bytes, headers: dict | None = None, truncate_at: int | None = None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if truncate_at is not None:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return
        if truncate_at is None:
            self.wfile.write(body)
        else:  # an interrupted transfer: the promised length, then the connection closes
            self.wfile.write(body[:truncate_at])
            self.wfile.flush()
            self.close_connection = True

    def not_found(self, what: str):
        self.send_bytes(404, json.dumps({"error": what}).encode(), {"Content-Type": "application/json"})

    def send_endless(self, status: int, prefix: bytes, unit: bytes, headers: dict | None = None):
        """A body without Content-Length (it ends when the connection closes): `prefix`, then
        `unit` again and again until the client leaves or ENDLESS_CAP bytes have gone."""
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = unit * max(1, (64 << 10) // len(unit))
        sent = 0
        try:
            self.wfile.write(prefix)
            while sent < ENDLESS_CAP:
                self.wfile.write(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send_trickle(self, data: bytes):
        """`data` with its Content-Length, two bytes a second."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(0, len(data), 2):
                self.wfile.write(data[i:i + 2])
                self.wfile.flush()
                time.sleep(1.0)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def send_endless_headers(self):
        self.send_response(200)
        try:
            for i in range(ENDLESS_CAP // 1024):
                self.send_header("X-Padding-%d" % i, "p" * 1000)
                self.flush_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def repo_of(self, parts: list[str]) -> tuple[str, list[str]] | None:
        if len(parts) < 2:
            return None
        repo = parts[0] + "/" + parts[1]
        if not os.path.isdir(os.path.join(self.hub.root, repo)):
            return None
        return repo, parts[2:]

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub.log({"method": self.command, "path": path, "range": self.headers.get("Range")})
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "models"]:
            return self.listing(parts[2:])
        if parts[:1] == ["cdn"] and len(parts) == 3:
            return self.cdn(parts[1], parts[2])
        found = self.repo_of(parts)
        if not found or len(found[1]) < 3 or found[1][0] != "resolve":
            return self.not_found("no such route")
        repo, rest = found
        rev, name = rest[1], "/".join(rest[2:])
        commit = self.hub.commit(repo)
        if rev not in (commit, "main"):
            return self.not_found("revision not found")
        if repo.endswith("/missing") and name == "missing.bin":
            return self.not_found("entry not found")
        if name not in self.hub.files(repo):
            return self.not_found("entry not found")
        data = self.hub.read(repo, name)
        kind = repo.split("/")[1]
        if "endless-file" in kind:
            return self.send_endless(200, data, b"\0")
        if kind == "trickle":
            return self.send_trickle(data)
        if kind == "endless-headers":
            return self.send_endless_headers()
        if name.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(data).hexdigest()
            self.send_response(302)
            self.send_header("Location", "/cdn/%s/%s?repo=%s" % (sha, name.replace("/", "%2F"), repo))
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", '"%s"' % git_blob_sha1(lfs_pointer(data)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_bytes(200, data, {"ETag": '"%s"' % git_blob_sha1(data), "X-Repo-Commit": commit})

    def listing(self, parts: list[str]):
        found = self.repo_of(parts)
        if not found or len(found[1]) != 2 or found[1][0] != "revision":
            return self.not_found("repository not found")
        repo, (_, rev) = found
        commit = self.hub.commit(repo)
        if rev not in (commit, "main"):
            return self.not_found("revision not found")
        kind = repo.split("/")[1]
        if kind == "nested-listing":
            depth = 100000
            body = ('{"sha": "%s", "siblings": [{"rfilename": "a", "size": %s%s}]}'
                    % (commit, "[" * depth, "]" * depth)).encode()
            return self.send_bytes(200, body, {"Content-Type": "application/json"})
        if kind == "endless-listing":
            return self.send_endless(200, ('{"sha": "%s", "siblings": [' % commit).encode(),
                                     b'{"rfilename": "endless.txt", "size": 1},', {"Content-Type": "application/json"})
        siblings = []
        for name in self.hub.files(repo):
            data = self.hub.read(repo, name)
            s = {"rfilename": name, "size": len(data), "blobId": git_blob_sha1(data)}
            if name.endswith(LFS_SUFFIXES):
                pointer = lfs_pointer(data)
                s["blobId"] = git_blob_sha1(pointer)
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": len(pointer)}
            if "bare" in repo.split("/")[1]:
                s = {"rfilename": name}
            siblings.append(s)
        if repo.endswith("/missing"):
            siblings.append({"rfilename": "missing.bin", "size": 4, "blobId": "0" * 40,
                             "lfs": {"sha256": hashlib.sha256(b"gone").hexdigest(), "size": 4, "pointerSize": 10}})
        body = {"_id": "x", "id": repo, "modelId": repo, "sha": commit, "private": False, "siblings": siblings}
        self.send_bytes(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def cdn(self, sha: str, quoted_name: str):
        repo = urlsplit(self.path).query.removeprefix("repo=")
        name = unquote(quoted_name)
        if not os.path.isdir(os.path.join(self.hub.root, repo)) or name not in self.hub.files(repo):
            return self.not_found("no such object")
        data = self.hub.read(repo, name)
        if hashlib.sha256(data).hexdigest() != sha:
            return self.not_found("no such object")
        if "corrupt" in repo.split("/")[1]:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                return self.send_bytes(416, b"", {"Content-Range": "bytes */%d" % len(data)})
        key = repo + "/" + name
        truncate = None
        if repo.endswith("/interrupted") and start == 0 and key not in self.hub.interrupted:
            self.hub.interrupted.add(key)
            truncate = len(data) // 2
        if start > 0:
            return self.send_bytes(206, data[start:], {"Content-Range": "bytes %d-%d/%d" % (start, len(data) - 1, len(data))})
        self.send_bytes(200, data, truncate_at=truncate)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    args = ap.parse_args()
    Handler.hub = Hub(args.root, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)  # the test sees the whole number or nothing
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
