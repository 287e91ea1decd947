"""Python client of sandboxer's HTTP API (``sandboxerd serve``; docs/api.md).

Standard library only::

    from sandboxer import Client

    with Client("http://127.0.0.1:7878") as c:
        with c.create_sandbox(adapter="local") as sb:
            r = sb.exec(["sh", "-c", "echo hi"])
            print(r.exit_code, r.stdout)
"""

from .client import DEFAULT_URL, Client, ExecStream, OutputFollower, Process, Sandbox
from .errors import (
    ERRORS,
    CommandFailed,
    Conflict,
    ContentTooLarge,
    ExecutionError,
    FileTooLarge,
    Forbidden,
    GitRemoteDisabled,
    GrepFailed,
    InternalError,
    InvalidInput,
    IsolationUnavailable,
    LimitExceeded,
    MethodNotAllowed,
    NetworkDisabled,
    NotFound,
    PatchFailed,
    PatchTooLarge,
    PathEscape,
    PathInvalid,
    ProcessFailed,
    ProcessTimeout,
    SandboxerError,
    SandboxUnavailable,
    TooLarge,
    Unauthorized,
    VerifyFailed,
    error_from,
)
from .models import ExecChunk, ExecResult, FileInfo, ProcessOutput, ProcessState, Snapshot

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "ERRORS",
    "Client",
    "CommandFailed",
    "Conflict",
    "ContentTooLarge",
    "ExecChunk",
    "ExecResult",
    "ExecStream",
    "ExecutionError",
    "FileInfo",
    "FileTooLarge",
    "Forbidden",
    "GitRemoteDisabled",
    "GrepFailed",
    "InternalError",
    "InvalidInput",
    "IsolationUnavailable",
    "LimitExceeded",
    "MethodNotAllowed",
    "NetworkDisabled",
    "NotFound",
    "OutputFollower",
    "PatchFailed",
    "PatchTooLarge",
    "PathEscape",
    "PathInvalid",
    "Process",
    "ProcessFailed",
    "ProcessOutput",
    "ProcessState",
    "ProcessTimeout",
    "Sandbox",
    "SandboxUnavailable",
    "SandboxerError",
    "Snapshot",
    "TooLarge",
    "Unauthorized",
    "VerifyFailed",
    "error_from",
]
