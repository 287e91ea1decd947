"""The client of ``sandboxerd serve`` (docs/api.md): sandboxes, their commands, files, tools and
background processes."""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ._http import Response, Transport, bytes_body, path_of, seg
from .errors import NotFound, SandboxerError, error_from
from .models import ExecChunk, ExecResult, FileInfo, ProcessOutput, ProcessState, Snapshot, Text, decode_output, parse_time

DEFAULT_URL = "http://127.0.0.1:7878"

Env = Union[Mapping[str, str], Sequence[str], None]
Data = Union[str, bytes, bytearray, memoryview]


def _env_list(env: Env) -> Optional[List[str]]:
    if env is None:
        return None
    if isinstance(env, Mapping):
        return [f"{k}={v}" for k, v in env.items()]
    if isinstance(env, (str, bytes)):
        raise TypeError("env: want a mapping or a list of KEY=VALUE strings")
    return [str(e) for e in env]


def _argv(args: Sequence[str]) -> List[str]:
    # A joined string would be one program name with spaces in it: the API takes argv only.
    if isinstance(args, (str, bytes)):
        raise TypeError('args: want a list (argv), such as ["sh", "-c", "echo hi"], never a joined string')
    argv = [str(a) for a in args]
    if not argv:
        raise ValueError("args must name a program")
    return argv


def _command(
    args: Sequence[str],
    dir: Optional[str],
    env: Env,
    timeout_ms: Optional[int],
    max_output_bytes: Optional[int],
    binary: bool,
    stdin: Optional[Data] = None,
) -> Dict[str, Any]:
    body: Dict[str, Any] = {"args": _argv(args)}
    if stdin is not None:
        # Text as it is; bytes in base64, the one way JSON carries them exactly.
        if isinstance(stdin, str):
            body["stdin"] = stdin
        else:
            body["stdinBase64"] = base64.b64encode(bytes_body(stdin)).decode("ascii")
    if dir:
        body["dir"] = dir
    e = _env_list(env)
    if e is not None:
        body["env"] = e
    if timeout_ms is not None:
        body["timeoutMs"] = int(timeout_ms)
    if max_output_bytes is not None:
        body["maxOutputBytes"] = int(max_output_bytes)
    if binary:
        body["encoding"] = "base64"
    return body


class Client:
    """A connection to ``sandboxerd serve``.

    ``url`` is ``http://HOST:PORT``, ``https://HOST:PORT`` or ``unix:/PATH`` (default: the
    ``SANDBOXER_URL`` environment variable, else ``http://127.0.0.1:7878``); ``token`` the bearer
    token (default ``SANDBOXER_TOKEN``; ``""`` sends none). ``timeout`` bounds each socket
    operation in seconds (default none: a long command's answer may take as long as it runs).

    The client is thread-safe; ``close`` (or leaving its ``with`` block) closes its connections
    but deletes no sandbox.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        url = url or os.environ.get("SANDBOXER_URL") or DEFAULT_URL
        if token is None:
            token = os.environ.get("SANDBOXER_TOKEN") or None
        self.url = url
        self._t = Transport(url, token or None, timeout, ssl_context)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._t.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def health(self) -> Dict[str, Any]:
        """``{"ok": true, "version": ..., "adapters": [...]}``; needs no token."""
        return self._t.json("GET", "/v1/health")

    def create_sandbox(
        self,
        *,
        adapter: Optional[str] = None,
        image: Optional[str] = None,
        runtime: Optional[str] = None,
        memory_bytes: Optional[int] = None,
        cpus: Optional[float] = None,
        pids: Optional[int] = None,
        disk_bytes: Optional[int] = None,
        allow_network: Optional[bool] = None,
        allow_hosts: Optional[Sequence[str]] = None,
        ttl_seconds: Optional[int] = None,
        idle_timeout_seconds: Optional[int] = None,
        from_snapshot: Optional[str] = None,
    ) -> "Sandbox":
        """Creates a sandbox; what is not given comes from the server's flags. Use it in a
        ``with`` block to delete it at the end. ``from_snapshot`` restores a snapshot of the
        token's into it (verified: :class:`VerifyFailed` otherwise, and no sandbox is left)."""
        body: Dict[str, Any] = {}
        for key, value in (
            ("adapter", adapter),
            ("image", image),
            ("runtime", runtime),
            ("memoryBytes", memory_bytes),
            ("cpus", cpus),
            ("pids", pids),
            ("diskBytes", disk_bytes),
            ("allowNetwork", allow_network),
            ("ttlSeconds", ttl_seconds),
            ("idleTimeoutSeconds", idle_timeout_seconds),
            ("fromSnapshot", from_snapshot),
        ):
            if value is not None:
                body[key] = value
        if allow_hosts is not None:
            if isinstance(allow_hosts, str):
                raise TypeError("allow_hosts: want a list of host names")
            body["allowHosts"] = list(allow_hosts)
        info = self._t.json("POST", "/v1/sandboxes", json_body=body, expect=(201,))
        return Sandbox(self, info)

    def get_sandbox(self, id: str) -> "Sandbox":
        """The sandbox ``id``; :class:`~sandboxer.SandboxUnavailable` (a :class:`NotFound`) when
        this token has no such sandbox."""
        return Sandbox(self, self._t.json("GET", f"/v1/sandboxes/{seg(id)}"))

    def list_sandboxes(self) -> List["Sandbox"]:
        """This token's sandboxes, oldest first."""
        doc = self._t.json("GET", "/v1/sandboxes")
        return [Sandbox(self, info) for info in doc.get("sandboxes") or []]

    # Snapshots (docs/snapshots.md): this token's catalog on the server.

    def list_snapshots(self, *, prefix: Optional[str] = None, source: Optional[str] = None) -> List[Snapshot]:
        """This token's snapshots, oldest first: those whose name starts with ``prefix``, of the
        sandbox ``source``."""
        doc = self._t.json("GET", "/v1/snapshots", query={"prefix": prefix or None, "source": source or None})
        return [Snapshot.from_json(s) for s in doc.get("snapshots") or []]

    def get_snapshot(self, name: str) -> Snapshot:
        """The snapshot ``name`` (:class:`NotFound` when this token has none by that name)."""
        return Snapshot.from_json(self._t.json("GET", f"/v1/snapshots/{seg(name)}"))

    def delete_snapshot(self, name: str) -> None:
        """Deletes a snapshot; its blobs no other snapshot uses are freed."""
        self._t.request("DELETE", f"/v1/snapshots/{seg(name)}", expect=(204,)).read()


class Sandbox:
    """A sandbox of the server. ``info`` is its JSON as last answered (``refresh`` reads it
    again); leaving its ``with`` block deletes it."""

    def __init__(self, client: Client, info: Dict[str, Any]) -> None:
        self.client = client
        self.id: str = info["id"]
        self.info = info
        self._t = client._t
        self._base = f"/v1/sandboxes/{seg(self.id)}"
        self._deleted = False

    def __repr__(self) -> str:
        return f"Sandbox({self.id!r}, adapter={self.adapter!r})"

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete(missing_ok=True)

    # The sandbox itself.

    @property
    def adapter(self) -> str:
        return self.info.get("adapter", "")

    @property
    def capabilities(self) -> Dict[str, Any]:
        return self.info.get("capabilities") or {}

    @property
    def fork_of(self) -> str:
        return self.info.get("forkOf") or ""

    @property
    def paused(self) -> bool:
        """Its processes are frozen (:meth:`pause`), as of ``info``."""
        return bool(self.info.get("paused"))

    @property
    def created_at(self):
        return parse_time(self.info.get("createdAt"))

    @property
    def expires_at(self):
        return parse_time(self.info.get("expiresAt"))

    def refresh(self) -> "Sandbox":
        self.info = self._t.json("GET", self._base)
        return self

    def delete(self, *, missing_ok: bool = False) -> None:
        """Deletes the sandbox (its commands are killed, its workspace removed). With
        ``missing_ok`` a sandbox already gone (deleted, expired) is no error."""
        if self._deleted and missing_ok:
            return
        try:
            self._t.request("DELETE", self._base, expect=(204,)).read()
        except NotFound:
            if not missing_ok:
                raise
        self._deleted = True

    def extend(self, ttl_seconds: int, *, idle_timeout_seconds: Optional[int] = None) -> "Sandbox":
        """Lets the sandbox live ``ttl_seconds`` from now (and sets its idle timeout)."""
        body: Dict[str, Any] = {"ttlSeconds": int(ttl_seconds)}
        if idle_timeout_seconds is not None:
            body["idleTimeoutSeconds"] = int(idle_timeout_seconds)
        self.info = self._t.json("POST", self._base + "/extend", json_body=body)
        return self

    def fork(self, *, ttl_seconds: Optional[int] = None, idle_timeout_seconds: Optional[int] = None) -> "Sandbox":
        """A new sandbox with a copy of this one's workspace (its processes are not copied)."""
        body: Dict[str, Any] = {}
        if ttl_seconds is not None:
            body["ttlSeconds"] = int(ttl_seconds)
        if idle_timeout_seconds is not None:
            body["idleTimeoutSeconds"] = int(idle_timeout_seconds)
        return Sandbox(self.client, self._t.json("POST", self._base + "/fork", json_body=body, expect=(201,)))

    # Pause and snapshots.

    def pause(self) -> "Sandbox":
        """Freezes the sandbox's processes where they are (docker and oci sandboxes;
        :class:`InvalidInput` for others) until :meth:`resume`. Meanwhile commands, tool calls
        and processes raise :class:`SandboxUnavailable` (HTTP 409, ``details["paused"]``);
        files and :meth:`snapshot` work."""
        self.info = self._t.json("POST", self._base + "/pause")
        return self

    def resume(self) -> "Sandbox":
        """Lets a paused sandbox's processes go on where they were."""
        self.info = self._t.json("POST", self._base + "/resume")
        return self

    def snapshot(self, name: str) -> Snapshot:
        """Takes a file system snapshot of the workspace into this token's catalog as ``name``
        (also of a paused sandbox: its files do not change meanwhile). :class:`InvalidInput` for
        a bad name, :class:`Conflict` for a name taken."""
        return Snapshot.from_json(self._t.json("POST", self._base + "/snapshots", json_body={"name": name}, expect=(201,)))

    def restore(self, name: str, *, replace: bool = False) -> Dict[str, Any]:
        """Restores this token's snapshot ``name`` into the workspace, verified
        (:class:`VerifyFailed` names the paths otherwise). A workspace with files needs
        ``replace`` (what the snapshot does not list is removed), else :class:`Conflict`;
        :class:`NotFound` for no such snapshot. Returns ``{"snapshot", "sandbox", "files",
        "bytes"}``."""
        body: Dict[str, Any] = {"snapshot": name}
        if replace:
            body["replace"] = True
        return self._t.json("POST", self._base + "/restore", json_body=body)

    # Commands.

    def exec(
        self,
        args: Sequence[str],
        *,
        dir: Optional[str] = None,
        env: Env = None,
        stdin: Optional[Data] = None,
        timeout_ms: Optional[int] = None,
        max_output_bytes: Optional[int] = None,
        binary: bool = False,
    ) -> ExecResult:
        """Runs ``args`` (argv: ``["sh", "-c", "make test"]``) and waits for it.

        A non-zero exit is data (``result.exit_code``), never an exception. ``stdin`` is text or
        bytes; ``env`` a mapping or ``KEY=VALUE`` strings; ``binary`` answers the output as exact
        bytes. Raises :class:`ProcessTimeout` (with the partial result in ``.result``) past
        ``timeout_ms`` and :class:`ProcessFailed` when the program could not start.
        """
        body = _command(args, dir, env, timeout_ms, max_output_bytes, binary, stdin)
        return ExecResult.from_json(self._t.json("POST", self._base + "/exec", json_body=body))

    def exec_stream(
        self,
        args: Sequence[str],
        *,
        dir: Optional[str] = None,
        env: Env = None,
        stdin: Optional[Data] = None,
        timeout_ms: Optional[int] = None,
        max_output_bytes: Optional[int] = None,
        binary: bool = False,
    ) -> "ExecStream":
        """Runs ``args`` and yields its output as it comes (:class:`ExecChunk`); ``.result``
        holds the :class:`ExecResult` once the iteration ends (its stdout and stderr empty: the
        chunks carried them). Closing the stream early kills the command."""
        body = _command(args, dir, env, timeout_ms, max_output_bytes, binary, stdin)
        body["stream"] = True
        resp = self._t.request("POST", self._base + "/exec", json_body=body)
        return ExecStream(resp, binary)

    def start(
        self,
        args: Sequence[str],
        *,
        dir: Optional[str] = None,
        env: Env = None,
    ) -> "Process":
        """Starts a background process (a server, a watcher): no timeout applies; it lives until
        it exits, is signalled, or the sandbox goes."""
        body = _command(args, dir, env, None, None, False)
        state = self._t.json("POST", self._base + "/processes", json_body=body, expect=(201,))
        return Process(self, ProcessState.from_json(state))

    def process(self, pid: str) -> "Process":
        """The background process ``pid`` (:class:`NotFound` if there is none)."""
        return Process(self, ProcessState.from_json(self._t.json("GET", f"{self._base}/processes/{seg(pid)}")))

    def processes(self) -> List[ProcessState]:
        doc = self._t.json("GET", self._base + "/processes")
        return [ProcessState.from_json(p) for p in doc.get("processes") or []]

    # Files.

    def read_file(self, path: str) -> bytes:
        """The file's bytes (:class:`NotFound`, :class:`PathEscape`, :class:`FileTooLarge`)."""
        return self._t.request("GET", self._base + "/files", query={"path": path}).read()

    def read_text(self, path: str, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_file(path).decode(encoding, errors)

    def write_file(self, path: str, data: Data) -> int:
        """Writes the file (replaced atomically, parents made); str is written as UTF-8.
        Returns the size written."""
        body = bytes_body(data)
        doc = self._t.json(
            "PUT", self._base + "/files", query={"path": path}, body=body, headers={"Content-Type": "application/octet-stream"}
        )
        return int(doc.get("size", len(body)))

    def remove(self, path: str) -> None:
        """Removes a file or an empty directory."""
        self._t.request("DELETE", self._base + "/files", query={"path": path}, expect=(204,)).read()

    def stat(self, path: str) -> FileInfo:
        """One entry, not following a final symlink."""
        return FileInfo.from_json(self._t.json("GET", self._base + "/files/stat", query={"path": path}))

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
        except NotFound:
            return False
        return True

    def list_files(self, dir: str = "") -> List[FileInfo]:
        """Every file and symlink under ``dir`` (default the whole workspace), recursively."""
        doc = self._t.json("GET", self._base + "/files/list", query={"dir": dir or None})
        return [FileInfo.from_json(f) for f in doc.get("files") or []]

    def symlink(self, path: str, target: str) -> None:
        self._t.json("POST", self._base + "/files/symlink", json_body={"path": path, "target": target})

    def set_executable(self, path: str, executable: bool = True) -> None:
        self._t.json("POST", self._base + "/files/executable", json_body={"path": path, "executable": executable})

    # Tools (docs/tools.md), journaled by the server.

    def tool(
        self,
        name: str,
        input: Optional[Mapping[str, Any]] = None,
        *,
        run_id: Optional[str] = None,
        node_id: Optional[str] = None,
        iteration: Optional[int] = None,
        attempt: Optional[int] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Calls a tool and returns its reply, ``{"ok": true, "output": ...}`` or
        ``{"ok": false, "error": {...}}``: a tool's failure is data here (the call ran and is
        journaled). The keywords are the call's position in the journal."""
        headers: Dict[str, str] = {}
        for header, value in (
            ("Sandboxer-Run-Id", run_id),
            ("Sandboxer-Node-Id", node_id),
            ("Sandboxer-Iteration", iteration),
            ("Sandboxer-Attempt", attempt),
            ("Idempotency-Key", idempotency_key),
        ):
            if value is not None:
                headers[header] = str(value)
        body = json.dumps(dict(input or {})).encode()
        return self._t.json("POST", f"{self._base}/tools/{seg(name)}", body=body, headers=headers)

    def call(self, name: str, input: Optional[Mapping[str, Any]] = None, **position: Any) -> Dict[str, Any]:
        """Like :meth:`tool`, but a reply with ``ok: false`` raises its error."""
        reply = self.tool(name, input, **position)
        if not reply.get("ok"):
            raise error_from(reply.get("error"), 200)
        return reply

    def read(self, path: str, **position: Any) -> str:
        """The read tool: the file's text."""
        return self.call("read", {"path": path}, **position)["output"]

    def write(self, path: str, content: str, **position: Any) -> None:
        """The write tool (the journal keeps the content's hash, not the content)."""
        self.call("write", {"path": path, "content": content}, **position)

    def edit(self, path: str, patch: str, **position: Any) -> None:
        """The edit tool: applies a unified diff to one file, all hunks or nothing
        (:class:`PatchFailed` says where it did not apply)."""
        self.call("edit", {"path": path, "patch": patch}, **position)

    def grep(self, pattern: str, path: Optional[str] = None, **position: Any) -> str:
        """The grep tool (rg): ``path:line:text`` lines, ``""`` when nothing matches."""
        inp = {"pattern": pattern}
        if path:
            inp["path"] = path
        return self.call("grep", inp, **position)["output"]

    def bash(self, cmd: str, args: Optional[Sequence[str]] = None, *, cwd: Optional[str] = None, **position: Any) -> Dict[str, Any]:
        """The bash tool: runs ``cmd`` with ``args`` (no shell parsing; use ``"sh", ["-c", s]``)
        after the network policy check. Returns the result (output, stdout, stderr, exitCode,
        ...); a non-zero exit raises :class:`CommandFailed`, whose details hold the same."""
        inp: Dict[str, Any] = {"cmd": cmd}
        if args is not None:
            inp["args"] = _argv(args) if args else []
        if cwd:
            inp["opts"] = {"cwd": cwd}
        reply = self.call("bash", inp, **position)
        reply.pop("ok", None)
        return reply

    # Ports.

    def connect_port(self, port: int, *, timeout: Optional[float] = None) -> socket.socket:
        """A socket connected to 127.0.0.1:``port`` inside the sandbox (an HTTP upgrade to a
        raw TCP stream). The caller closes it."""
        ep = self._t.endpoint
        s = ep.socket(timeout if timeout is not None else self._t.timeout)
        try:
            lines = [f"GET {path_of(ep.prefix, f'{self._base}/ports/{int(port)}')} HTTP/1.1", f"Host: {ep.host_header()}"]
            lines += [f"{k}: {v}" for k, v in self._t.headers({"Connection": "Upgrade", "Upgrade": "tcp"}).items()]
            s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            status, headers = _read_head(s)
            if status == 101:
                return s
            body = b""
            n = int(headers.get("content-length", "0") or 0)
            while len(body) < n:
                b = s.recv(n - len(body))
                if not b:
                    break
                body += b
            try:
                doc = json.loads(body)
            except ValueError:
                doc = None
            if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
                raise error_from(doc["error"], status)
            raise SandboxerError(f"HTTP {status}: port {port}: {body[:200]!r}", status=status)
        except BaseException:
            s.close()
            raise


def _read_head(s: socket.socket) -> "tuple[int, Dict[str, str]]":
    # Byte by byte: what follows the head is the port's stream, which must stay in the socket.
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            raise SandboxerError("the server closed the connection before its answer")
        head += b
        if len(head) > 64 << 10:
            raise SandboxerError("answer head over 64 KiB")
    first, *rest = head.decode("latin-1").split("\r\n")
    parts = first.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise SandboxerError(f"bad status line {first!r}")
    headers = {}
    for line in rest:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return int(parts[1]), headers


class ExecStream:
    """The output of a streamed command, chunk by chunk; ``result`` once it ended. An error of
    the command (:class:`ProcessTimeout`, ...) is raised at the end of the iteration, with the
    result in its ``.result``."""

    def __init__(self, resp: Response, binary: bool) -> None:
        self._resp = resp
        self._lines = resp.lines()
        self._binary = binary
        self._error: Optional[SandboxerError] = None
        self._ended = False
        self.result: Optional[ExecResult] = None

    def __iter__(self) -> "ExecStream":
        return self

    def __next__(self) -> ExecChunk:
        if self._ended:
            raise StopIteration
        for msg in self._lines:
            if "stream" in msg:
                return ExecChunk(msg["stream"], decode_output(msg.get("data"), "base64" if self._binary else "utf8"))
            if "result" in msg or "error" in msg:
                self.result = ExecResult.from_json(msg.get("result") or {})
                if msg.get("error"):
                    self._error = error_from(msg["error"], 200, self.result)
        # The answer is read to its end, so its connection serves the next request.
        self._ended = True
        if self._error is not None:
            raise self._error
        if self.result is None:
            raise SandboxerError("the stream ended without a result (the server went away?)")
        raise StopIteration

    def wait(self) -> ExecResult:
        """Reads the rest of the output (dropping it) and returns the result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result

    def close(self) -> None:
        """Stops reading; a command still running is killed by the server."""
        if not self._ended:
            self._ended = True
            self._lines.close()
        self._resp.close()  # a generator never started has no finally to run

    def __enter__(self) -> "ExecStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Process:
    """A background process of a sandbox. ``state`` is its state as last answered. Leaving its
    ``with`` block kills it if it still runs."""

    def __init__(self, sandbox: Sandbox, state: ProcessState) -> None:
        self.sandbox = sandbox
        self.id = state.id
        self.state = state
        self._t = sandbox._t
        self._base = f"{sandbox._base}/processes/{seg(self.id)}"

    def __repr__(self) -> str:
        return f"Process({self.id!r}, args={self.state.args!r}, running={self.state.running})"

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.refresh().running:
                self.signal("KILL")
                self.wait()
        except NotFound:
            pass  # the sandbox, and the process with it, is gone

    def refresh(self) -> ProcessState:
        self.state = ProcessState.from_json(self._t.json("GET", self._base))
        return self.state

    def output(self, since: int = 0, *, limit: Optional[int] = None, binary: bool = False) -> ProcessOutput:
        """The output after offset ``since`` (at most ``limit`` bytes); pass the answer's
        ``offset`` as the next ``since``."""
        q = {"since": since, "limit": limit, "encoding": "base64" if binary else None}
        out = ProcessOutput.from_json(self._t.json("GET", self._base + "/output", query=q))
        self.state = out.state
        return out

    def follow(self, since: int = 0, *, binary: bool = False) -> "OutputFollower":
        """Yields the output as it comes (:class:`ProcessOutput` chunks) until the process exits."""
        q = {"since": since, "follow": True, "encoding": "base64" if binary else None}
        return OutputFollower(self, self._t.request("GET", self._base + "/output", query=q))

    def write_stdin(self, data: Data, *, close: bool = False) -> int:
        """Writes to the process's standard input (and closes it after, with ``close``)."""
        body = bytes_body(data)
        doc = self._t.json(
            "POST",
            self._base + "/stdin",
            query={"close": True if close else None},
            body=body,
            headers={"Content-Type": "application/octet-stream"},
        )
        return int(doc.get("written", len(body)))

    def close_stdin(self) -> None:
        self.write_stdin(b"", close=True)

    def signal(self, signal: str = "TERM") -> ProcessState:
        """Sends a signal to the process's tree: TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT."""
        self.state = ProcessState.from_json(self._t.json("POST", self._base + "/signal", json_body={"signal": signal}))
        return self.state

    def kill(self) -> ProcessState:
        return self.signal("KILL")

    def wait(self, timeout_ms: Optional[int] = None) -> ProcessState:
        """Waits for the process to exit, at most ``timeout_ms`` (then ``running`` is still true)."""
        q = {"timeoutMs": int(timeout_ms) if timeout_ms else None}
        self.state = ProcessState.from_json(self._t.json("POST", self._base + "/wait", query=q))
        return self.state


class OutputFollower:
    """The output of a followed process, chunk by chunk, until it exits; ``offset`` and ``state``
    are those of the last chunk. ``close`` stops following (the process runs on)."""

    def __init__(self, process: Process, resp: Response) -> None:
        self._process = process
        self._resp = resp
        self._lines = resp.lines()
        self.offset = 0
        self.state: Optional[ProcessState] = None

    def __iter__(self) -> Iterator[ProcessOutput]:
        return self

    def __next__(self) -> ProcessOutput:
        for msg in self._lines:
            if "error" in msg and "state" not in msg:
                raise error_from(msg["error"], 200)
            out = ProcessOutput.from_json(msg)
            self.offset, self.state = out.offset, out.state
            self._process.state = out.state
            return out
        raise StopIteration

    def text(self) -> "tuple[Text, Text]":
        """Follows to the end and returns stdout and stderr, each joined."""
        outs, errs = [], []
        for chunk in self:
            outs.append(chunk.stdout)
            errs.append(chunk.stderr)
        empty: Text = outs[0][:0] if outs else ""
        return empty.join(outs), empty.join(errs)

    def close(self) -> None:
        self._lines.close()
        self._resp.close()

    def __enter__(self) -> "OutputFollower":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
