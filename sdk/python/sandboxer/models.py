"""The values the API answers, as small dataclasses (each keeps the server's JSON in ``raw``)."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional, Union

Text = Union[str, bytes]

_FRACTION = re.compile(r"\.(\d{6})\d*")


def parse_time(value: Any) -> Optional[datetime]:
    """An RFC 3339 time of the server (nanoseconds, ``Z``) as an aware datetime; None if empty."""
    if not value or not isinstance(value, str):
        return None
    # Python before 3.11 takes at most microseconds and no "Z".
    s = _FRACTION.sub(r".\1", value.replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return None


def decode_output(data: Any, encoding: str) -> Text:
    """Output as the server sent it: text, or bytes when it was asked in base64."""
    data = data or ""
    if encoding == "base64":
        return base64.b64decode(data)
    return data


@dataclass
class ExecResult:
    """A finished command. A non-zero ``exit_code`` is data, not an error.

    ``stdout`` and ``stderr`` are ``str`` (bytes that were not UTF-8 became U+FFFD) or, for a
    command run with ``binary=True``, the exact ``bytes``. Each stream is capped at the
    sandbox's output limit: ``*_truncated`` says it was cut and ``*_dropped`` how many bytes went.
    """

    exit_code: int
    stdout: Text = ""
    stderr: Text = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    duration_ms: int = 0
    isolation: Dict[str, Any] = field(default_factory=dict, repr=False)
    limit: str = ""  # a resource limit that ended the command ("memory"), if any
    # What the command cost as the server's adapter measured it (docs/receipts.md): wallUs,
    # stdoutBytes, stderrBytes, and cpuUs, peakMemoryBytes, processes, diskReadBytes, ... where
    # the adapter counts them (a member it cannot count is absent).
    receipt: Dict[str, Any] = field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ExecResult":
        enc = d.get("encoding") or "utf8"
        return cls(
            exit_code=int(d.get("exitCode", 0)),
            stdout=decode_output(d.get("stdout"), enc),
            stderr=decode_output(d.get("stderr"), enc),
            stdout_truncated=bool(d.get("stdoutTruncated")),
            stderr_truncated=bool(d.get("stderrTruncated")),
            stdout_dropped=int(d.get("stdoutDropped") or 0),
            stderr_dropped=int(d.get("stderrDropped") or 0),
            duration_ms=int(d.get("durationMs") or 0),
            isolation=d.get("isolation") or {},
            limit=d.get("limit") or "",
            receipt=d.get("receipt") or {},
            raw=d,
        )


@dataclass
class ExecChunk:
    """Output of a streamed command as it came: ``stream`` is ``"stdout"`` or ``"stderr"``."""

    stream: str
    data: Text


@dataclass
class ProcessState:
    """A background process: ``exit_code`` means something once ``running`` is false (128+signo
    after a signal)."""

    id: str
    args: List[str]
    running: bool
    exit_code: int = 0
    started: Optional[datetime] = None
    limit: str = ""
    isolation: Dict[str, Any] = field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ProcessState":
        return cls(
            id=d.get("id", ""),
            args=list(d.get("args") or []),
            running=bool(d.get("running")),
            exit_code=int(d.get("exitCode") or 0),
            started=parse_time(d.get("started")),
            limit=d.get("limit") or "",
            isolation=d.get("isolation") or {},
            raw=d,
        )


@dataclass
class ProcessOutput:
    """One read of a process's output: what came after the ``since`` offset of the request.

    ``offset`` counts the bytes of both streams together; pass it as the next ``since`` and
    nothing is lost or repeated. ``dropped`` counts the bytes the server's rings no longer held.
    """

    stdout: Text
    stderr: Text
    offset: int
    dropped: int
    state: ProcessState
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ProcessOutput":
        enc = d.get("encoding") or "utf8"
        return cls(
            stdout=decode_output(d.get("stdout"), enc),
            stderr=decode_output(d.get("stderr"), enc),
            offset=int(d.get("offset") or 0),
            dropped=int(d.get("dropped") or 0),
            state=ProcessState.from_json(d.get("state") or {}),
            raw=d,
        )


@dataclass
class FileInfo:
    """A workspace entry. ``type`` is ``file``, ``symlink``, ``dir`` or ``other``; ``mode`` is Go's
    ``fs.FileMode`` (type bits and permissions: ``mode & 0o777`` are the permissions)."""

    path: str
    type: str
    size: int
    mode: int
    mod_time: Optional[datetime]
    link: str = ""
    executable: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def permissions(self) -> int:
        return self.mode & 0o777

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "FileInfo":
        return cls(
            path=d.get("path", ""),
            type=d.get("type", ""),
            size=int(d.get("size") or 0),
            mode=int(d.get("mode") or 0),
            mod_time=parse_time(d.get("modTime")),
            link=d.get("link") or "",
            executable=bool(d.get("executable")),
            raw=d,
        )


@dataclass
class Snapshot:
    """A file system snapshot of the token's catalog (docs/snapshots.md). ``source`` is the id of
    the sandbox it was taken of; ``read`` and ``stored`` (files read, blobs stored) are figures of
    the take that made it, in its answer only; ``skipped`` what it left out."""

    name: str
    created: Optional[datetime]
    files: int
    bytes: int
    source: str = ""
    adapter: str = ""
    read: int = 0
    stored: int = 0
    skipped: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Snapshot":
        return cls(
            name=d.get("name", ""),
            created=parse_time(d.get("created")),
            files=int(d.get("files") or 0),
            bytes=int(d.get("bytes") or 0),
            source=d.get("source") or "",
            adapter=d.get("adapter") or "",
            read=int(d.get("read") or 0),
            stored=int(d.get("stored") or 0),
            skipped=list(d.get("skipped") or []),
            raw=d,
        )
