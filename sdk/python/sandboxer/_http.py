"""HTTP/1.1 to the server with http.client: TCP, TLS or a unix socket, kept-alive connections
in a small pool, NDJSON answers read line by line."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union
from urllib.parse import quote, unquote, urlencode, urlsplit

from .errors import SandboxerError, error_from
from .models import ExecResult

USER_AGENT = "sandboxer-python/0.1.0"

# Errors of a kept-alive connection the server closed while it sat in the pool: the request did
# not reach a server that was still there, so it is sent once more on a new connection (as Go's
# and urllib3's clients do). A new connection that fails is not retried.
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, http.client.BadStatusLine)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.timeout is not None:
                s.settimeout(self.timeout)
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Endpoint:
    """Where the server is: ``http://HOST:PORT``, ``https://HOST:PORT`` or a unix socket,
    ``unix:/PATH`` (as ``sandboxerd serve --listen`` takes it) or ``http+unix://%2FPATH``."""

    def __init__(self, url: str, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.url = url
        self.unix_path = ""
        self.ssl_context = ssl_context
        if url.startswith("unix:"):
            self.unix_path = url[len("unix:"):]
            self.scheme, self.host, self.port, self.prefix = "http", "localhost", None, ""
        else:
            u = urlsplit(url)
            if u.scheme == "http+unix":
                self.unix_path = unquote(u.netloc)
                self.scheme, self.host, self.port = "http", "localhost", None
            elif u.scheme in ("http", "https"):
                self.scheme, self.host, self.port = u.scheme, u.hostname or "", u.port
            else:
                raise ValueError(f"url {url!r}: want http://HOST:PORT, https://HOST:PORT or unix:/PATH")
            self.prefix = u.path.rstrip("/")
        if self.unix_path == "" and self.host == "":
            raise ValueError(f"url {url!r}: no host")

    def connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.unix_path:
            return _UnixConnection(self.unix_path, timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def socket(self, timeout: Optional[float]) -> socket.socket:
        """A raw connection to the server (for an upgrade to a TCP stream)."""
        if self.unix_path:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(timeout)
                s.connect(self.unix_path)
            except BaseException:
                s.close()
                raise
            return s
        port = self.port or (443 if self.scheme == "https" else 80)
        s = socket.create_connection((self.host, port), timeout=timeout)
        if self.scheme == "https":
            ctx = self.ssl_context or ssl.create_default_context()
            try:
                s = ctx.wrap_socket(s, server_hostname=self.host)
            except BaseException:
                s.close()
                raise
        return s

    def host_header(self) -> str:
        if self.unix_path or self.port is None:
            return self.host
        return f"{self.host}:{self.port}"


Query = Optional[Mapping[str, Any]]


def path_of(prefix: str, path: str, query: Query = None) -> str:
    if query:
        q = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
        if q:
            path += "?" + urlencode(q, quote_via=quote)
    return prefix + path


def seg(s: str) -> str:
    """A path segment (a sandbox or process id), escaped."""
    return quote(str(s), safe="")


class Transport:
    """Sends requests and turns refusals into exceptions. Thread-safe: each request takes a
    connection of its own from the pool and gives it back when its answer has been read."""

    def __init__(
        self,
        url: str,
        token: Optional[str],
        timeout: Optional[float],
        ssl_context: Optional[ssl.SSLContext] = None,
        pool_size: int = 4,
    ) -> None:
        self.endpoint = Endpoint(url, ssl_context)
        self.token = token
        self.timeout = timeout
        self.pool_size = pool_size
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def _take(self, fresh: bool) -> Tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it served before. fresh: a new one, and the idle ones are
        dropped (one was stale, so the others likely are too: the server went away)."""
        with self._lock:
            if self._closed:
                raise SandboxerError("the client is closed")
            stale: List[http.client.HTTPConnection] = []
            if fresh:
                stale, self._idle = self._idle, []
            elif self._idle:
                return self._idle.pop(), True
        for c in stale:
            c.close()
        return self.endpoint.connect(self.timeout), False

    def _give(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        if resp.will_close:
            conn.close()
            return
        with self._lock:
            if not self._closed and len(self._idle) < self.pool_size:
                self._idle.append(conn)
                return
        conn.close()

    def open(
        self,
        method: str,
        path: str,
        *,
        query: Query = None,
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> "Response":
        """Sends a request and returns the open answer, whatever its status."""
        url = path_of(self.endpoint.prefix, path, query)
        h = self.headers(headers)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        elif method in ("POST", "PUT"):
            body = b""
        for attempt in (1, 2):
            conn, reused = self._take(fresh=attempt == 2)
            try:
                conn.request(method, url, body=body, headers=h)
                resp = conn.getresponse()
            except _STALE:
                conn.close()
                if reused and attempt == 1:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            return Response(self, conn, resp)
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, *, json_body: Any = None, expect: Tuple[int, ...] = (200,), **kw: Any) -> "Response":
        """Sends a request and raises the error of an answer whose status is not in expect."""
        if json_body is not None:
            kw["body"] = json.dumps(json_body).encode()
        r = self.open(method, path, **kw)
        if r.status not in expect:
            r.raise_error()
        return r

    def json(self, method: str, path: str, **kw: Any) -> Any:
        """A request whose answer is one JSON value."""
        return self.request(method, path, **kw).json()


class Response:
    """An answer: read it whole (``read``, ``json``) or line by line (``lines``), or ``close``
    it (which also ends what the server does for it: a streamed command is cancelled)."""

    def __init__(self, t: Transport, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._t = t
        self._conn: Optional[http.client.HTTPConnection] = conn
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers

    def _done(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._t._give(conn, self._resp)

    def close(self) -> None:
        """Drops the connection: the server sees the client go away."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def read(self) -> bytes:
        try:
            data = self._resp.read()
        except BaseException:
            self.close()
            raise
        self._done()
        return data

    def json(self) -> Any:
        data = self.read()
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError as e:
            raise SandboxerError(f"HTTP {self.status}: answer is not JSON: {data[:200]!r}", status=self.status) from e

    def lines(self) -> Iterator[Any]:
        """The JSON values of an NDJSON answer, as they come. Closing the iterator before the end
        drops the connection."""
        finished = False
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    finished = True
                    break
                line = line.strip()
                if line:
                    yield json.loads(line)
        finally:
            if finished:
                self._done()
            else:
                self.close()

    def raise_error(self) -> None:
        """Reads the answer and raises its error."""
        data = self.read()
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            result = body.get("result")
            raise error_from(body["error"], self.status, ExecResult.from_json(result) if isinstance(result, dict) else None)
        text = data[:500].decode("utf-8", "replace")
        raise SandboxerError(f"HTTP {self.status}: {text}", status=self.status)


def bytes_body(data: Union[str, bytes, bytearray, memoryview]) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"want str or bytes, got {type(data).__name__}")
