#!/usr/bin/env python3
"""HTTPS server on 127.0.0.1 for the profile fetch tests (tests/integration/profiles-https.sh).

Serves the files of DIR with ETag/Last-Modified revalidation, plus a few misbehaving
routes. Writes the chosen port to PORTFILE once listening and logs every request as
"METHOD PATH STATUS" lines to LOG (so tests can see a 304 really happened).

usage: profile-server.py CERT KEY DIR PORTFILE LOG
"""
import hashlib
import http.server
import os
import ssl
import sys
import threading
import time
from email.utils import formatdate

CERT, KEY, ROOT, PORTFILE, LOG = sys.argv[1:6]
log_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet on stderr; the LOG file is the record
        pass

    def record(self, status):
        with log_lock, open(LOG, "a") as f:
            f.write(f"{self.command} {self.path} {status}\n")

    def send_body(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client gave up (the size cap): expected
        self.record(status)

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/stall.yaml":
            self.record("stall")
            time.sleep(30)
            return
        if self.path == "/big.yaml":
            return self.send_body(200, b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
        if self.path == "/big-unsized.yaml":
            # No Content-Length: only the running count can stop it.
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.record(200)
            try:
                for _ in range(64):
                    self.wfile.write(b"# " + b"y" * 65534 + b"\n")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            self.close_connection = True
            return
        if self.path == "/to-http.yaml":
            return self.send_body(302, b"", [("Location", f"http://127.0.0.1:{port}/ok.yaml")])
        if self.path == "/to-https.yaml":
            return self.send_body(301, b"", [("Location", f"https://127.0.0.1:{port}/ok.yaml")])
        if self.path == "/error.yaml":
            return self.send_body(503, b"busy\n")
        name = os.path.basename(self.path)
        path = os.path.join(ROOT, name)
        if not name or not os.path.isfile(path):
            return self.send_body(404, b"not found\n")
        with open(path, "rb") as f:
            body = f.read()
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        last_modified = formatdate(os.path.getmtime(path), usegmt=True)
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.record(304)
            return
        self.send_body(200, body, [("ETag", etag), ("Last-Modified", last_modified),
                                   ("Content-Type", "application/yaml")])


# An optional sixth argument binds another address (a test's own network namespace).
server = http.server.ThreadingHTTPServer((sys.argv[6] if len(sys.argv) > 6 else "127.0.0.1", 0), Handler)
server.daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
