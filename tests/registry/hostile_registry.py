#!/usr/bin/env python3
"""A hostile OCI registry for tests/registry/hostile.sh, on loopback. The repository name picks
the lie: every manifest names the archive given on the command line as its layer, and then
  wrong-digest    the blob's bytes are other bytes of the same size
  long-length     the blob's Content-Length is larger than the manifest declares
  short-body      the blob ends before its declared size
  endless         the blob has no Content-Length and never ends (for at most LIMIT seconds)
  redirect-loop   the blob redirects to itself
  redirect-file   the blob redirects to a file:// URL
  huge-manifest   the manifest is 5 MiB (its Content-Length says so)
  endless-manifest the manifest has no Content-Length and never ends
  huge-layer      the manifest's layer declares 2^62 bytes
  other-bytes     a manifest asked for by digest answers other bytes
  slow            the blob sends one byte and then nothing (for at most LIMIT seconds)
and indexes of sdm push --per-target that lie:
  index-too-many  the tag is an index listing 65 entries (sdm reads at most 64)
  index-bad-digest the index lists the whole archive under a digest that is not sha256:HEX
  part-wrong-targets the index's part for sm_90 (its manifest says so too) holds the archive given,
                  which holds no image for sm_90 (the test's is sm_80 only)
and two honest ones that want credentials (user:secret):
  bearer          the Bearer token flow: a 401 naming the realm /token, which answers a token for them
  basic           Basic authentication
  bad-realm       a Bearer challenge whose realm is a file:// URL
  bearer-other-host  the Bearer flow with the realm on another host (localhost): the registry named it
and a thief: redirect-401: the blob redirects to another origin (localhost) that answers 401 with
a Bearer realm on itself, /steal, which writes any Authorization it is sent to STEAL_FILE.
Usage: hostile_registry.py ARCHIVE PORT_FILE [STEAL_FILE]. Writes its port to PORT_FILE and serves until killed.
"""
import base64
import hashlib
import http.server
import json
import sys
import time

LIMIT = 20  # seconds an endless or stalled answer lasts at most: the test's time bound, not a clock assertion

archive = open(sys.argv[1], "rb").read()
digest = "sha256:" + hashlib.sha256(archive).hexdigest()
BASIC = "Basic " + base64.b64encode(b"user:secret").decode()


def manifest(size=len(archive)):
    return json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "artifactType": "application/vnd.sdm.archive.v1",
                       "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                                  "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
                       "layers": [{"mediaType": "application/vnd.sdm.archive.layer.v1", "digest": digest, "size": size}]}).encode()


INDEX = "application/vnd.oci.image.index.v1+json"
ARTIFACT = "application/vnd.sdm.archive.v1"
part_manifest = json.dumps({**json.loads(manifest()), "annotations": {"io.sdm.part-target": "sm_90"}}).encode()


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def index_entry(body, target, entry_digest=None):
    return {"mediaType": "application/vnd.oci.image.manifest.v1+json", "artifactType": ARTIFACT, "digest": entry_digest or sha(body),
            "size": len(body), "annotations": {"io.sdm.part-target": target}}


def index(entries):
    return json.dumps({"schemaVersion": 2, "mediaType": INDEX, "artifactType": ARTIFACT, "manifests": entries}).encode()


INDEXES = {
    "index-too-many": index([index_entry(manifest(), "all")] + [index_entry(manifest(), "sm_%d" % (100 + i)) for i in range(64)]),
    "index-bad-digest": index([index_entry(manifest(), "all", "sha256:XYZ")]),
    "part-wrong-targets": index([index_entry(manifest(), "all"), index_entry(part_manifest, "sm_90")]),
}
BY_DIGEST = {sha(manifest()): manifest(), sha(part_manifest): part_manifest}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if not any(k == "Content-Length" for k, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stream_forever(self, chunk):
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        end = time.time() + LIMIT
        try:
            while time.time() < end:
                self.wfile.write(chunk)
        except OSError:
            pass
        self.close_connection = True

    def authorized(self, case):
        port = self.server.server_address[1]
        given = self.headers.get("Authorization", "")
        if case == "bearer" and given != "Bearer good-token":
            challenge = f'Bearer realm="http://127.0.0.1:{port}/token",service="test",scope="repository:bearer:pull"'
        elif case == "bearer-other-host" and given != "Bearer good-token":
            challenge = f'Bearer realm="http://localhost:{port}/token",service="test",scope="repository:bearer:pull"'
        elif case == "elsewhere":
            challenge = f'Bearer realm="http://localhost:{port}/steal",service="storage"'
        elif case == "bad-realm":
            challenge = 'Bearer realm="file:///etc/passwd",service="test"'
        elif case == "basic" and given != BASIC:
            challenge = 'Basic realm="test"'
        else:
            return True
        self.send(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}', [("WWW-Authenticate", challenge)])
        return False

    def do_GET(self):
        if self.path.startswith("/steal"):
            if len(sys.argv) > 3 and self.headers.get("Authorization"):
                with open(sys.argv[3], "a") as f:
                    f.write(self.headers["Authorization"] + "\n")
            return self.send(200, b'{"token":"stolen"}')
        if self.path.startswith("/token?"):
            if self.headers.get("Authorization", "") != BASIC or "scope=repository%3Abearer%3Apull" not in self.path:
                return self.send(401)
            return self.send(200, b'{"token":"good-token"}')
        parts = self.path.split("/")  # ['', 'v2', CASE, 'manifests'|'blobs', KEY]
        if len(parts) != 5 or parts[1] != "v2":
            return self.send(404)
        case, kind, key = parts[2], parts[3], parts[4]
        if not self.authorized(case):
            return None
        if kind == "manifests":
            return self.manifest(case, key)
        if kind == "blobs" and key == digest:
            return self.blob(case)
        return self.send(404)

    def manifest(self, case, key):
        if case in INDEXES:
            if key in BY_DIGEST:
                return self.send(200, BY_DIGEST[key], [("Content-Type", "application/vnd.oci.image.manifest.v1+json")])
            return self.send(200, INDEXES[case], [("Content-Type", INDEX)])
        body = manifest(1 << 62) if case == "huge-layer" else manifest()
        if case == "huge-manifest":
            body = b" " * (5 << 20)
        if case == "endless-manifest":
            return self.stream_forever(b" " * 65536)
        if case == "other-bytes":
            body = manifest() + b" "
        self.send(200, body, [("Content-Type", "application/vnd.oci.image.manifest.v1+json")])

    def blob(self, case):
        if case == "wrong-digest":
            return self.send(200, b"x" * len(archive))
        if case == "long-length":
            return self.send(200, archive, [("Content-Length", str(len(archive) + 4096))])
        if case == "short-body":
            self.send(200, archive[:-100], [("Content-Length", str(len(archive)))])
            self.close_connection = True
            return None
        if case == "endless":
            return self.stream_forever(archive)
        if case == "redirect-loop":
            return self.send(302, headers=[("Location", self.path)])
        if case == "redirect-file":
            return self.send(302, headers=[("Location", "file:///etc/passwd")])
        if case == "redirect-401":
            port = self.server.server_address[1]
            return self.send(302, headers=[("Location", f"http://localhost:{port}/v2/elsewhere/blobs/{digest}")])
        if case == "slow":
            self.send_response(200)
            self.send_header("Content-Length", str(len(archive)))
            self.end_headers()
            self.wfile.write(archive[:1])
            self.wfile.flush()
            time.sleep(LIMIT)
            self.close_connection = True
            return None
        return self.send(200, archive)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up on a lie is what the tests want


server = Server(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
