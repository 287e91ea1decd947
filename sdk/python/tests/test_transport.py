"""The transport against a plain HTTP server of this process that drops every kept-alive
connection after one answer, as a server restarting or timing idle connections out does."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sandboxer import Client, SandboxerError
from sandboxer._http import Endpoint


class DropAfterOne(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests = 0

    def do_GET(self):
        type(self).requests += 1
        body = json.dumps({"ok": True, "version": "test", "adapters": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()  # no "Connection: close": the client keeps the connection
        self.wfile.write(body)
        self.close_connection = True

    def do_POST(self):
        body = b'{"ok":false,"error":{"code":"UNAUTHORIZED","message":"no"}}'
        self.send_response(401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def dropping_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), DropAfterOne)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()
    t.join()


def test_stale_connection_is_retried(dropping_server):
    DropAfterOne.requests = 0
    with Client(dropping_server, token="") as c:
        for _ in range(5):
            assert c.health()["version"] == "test"
    assert DropAfterOne.requests == 5


def test_error_of_a_plain_server(dropping_server):
    with Client(dropping_server, token="") as c:
        with pytest.raises(SandboxerError) as ei:
            c._t.request("GET", "/v1/health", expect=(204,))
        assert ei.value.code == "" and ei.value.status == 200


def test_endpoints():
    e = Endpoint("unix:/run/sandboxer.sock")
    assert (e.unix_path, e.prefix) == ("/run/sandboxer.sock", "")
    e = Endpoint("http+unix://%2Frun%2Fs.sock/api")
    assert (e.unix_path, e.prefix) == ("/run/s.sock", "/api")
    e = Endpoint("https://sandboxes.internal:8443/")
    assert (e.scheme, e.host, e.port, e.prefix, e.unix_path) == ("https", "sandboxes.internal", 8443, "", "")
    for bad in ["ftp://x", "http://", "sandboxes.internal:7878"]:
        with pytest.raises(ValueError):
            Endpoint(bad)
