"""The errors of the API as Python exceptions.

Every refusal of the server has the tools' error shape
``{"ok": false, "error": {"code", "message", "details"}}`` (docs/api.md). The SDK raises the
exception class of its code, so callers catch by kind (``except PathEscape``) and read the stable
``code``; the message is for people and not part of the contract.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class SandboxerError(Exception):
    """An error answered by the server (or, with ``code == ""``, an answer that was not the API's).

    ``code`` is the stable error code (``TOOL_PATH_ESCAPE``, ...), ``status`` the HTTP status of
    the answer (200 for a tool's ``ok: false`` reply or a streamed command's error, which come in
    successful answers), ``message`` the human text, ``details`` the structured extra data, ``result`` the partial result the server
    attached (an :class:`~sandboxer.ExecResult` of a command that ran past its timeout), if any.
    """

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: int = 0,
        details: Optional[Dict[str, Any]] = None,
        result: Any = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.status = status
        self.message = message
        self.details = details or {}
        self.result = result

    def __str__(self) -> str:
        if self.code:
            return f"{self.code}: {self.message}"
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status}, message={self.message!r})"


# The groups: callers who do not care about the exact code catch these.


class Unauthorized(SandboxerError):
    """401: no token, or one the server does not know."""

    code = "UNAUTHORIZED"


class Forbidden(SandboxerError):
    """403: the token may not use this adapter, or ask this lifetime."""

    code = "FORBIDDEN"


class NotFound(SandboxerError):
    """404: a file, process, tool or endpoint that does not exist (``TOOL_NOT_FOUND``)."""

    code = "TOOL_NOT_FOUND"


class SandboxUnavailable(NotFound):
    """404: no such sandbox for this token (never existed, expired, deleted, or another token's)."""

    code = "SANDBOX_UNAVAILABLE"


class MethodNotAllowed(SandboxerError):
    """405."""

    code = "METHOD_NOT_ALLOWED"


class InvalidInput(SandboxerError):
    """400: a request or tool input the server refuses as it is."""

    code = "INVALID_INPUT"


class PathInvalid(InvalidInput):
    """400: a path that is empty or not a path."""

    code = "TOOL_PATH_INVALID"


class PathEscape(InvalidInput):
    """400: a path that leaves the workspace (also through a symlink)."""

    code = "TOOL_PATH_ESCAPE"


class TooLarge(SandboxerError):
    """Something over a size limit (``details.limit`` says which, where known)."""


class FileTooLarge(TooLarge):
    """413: a file over the server's ``--max-file-bytes`` or the tool's output limit."""

    code = "TOOL_FILE_TOO_LARGE"


class ContentTooLarge(TooLarge, InvalidInput):
    """400: a request body or a written content over its limit."""

    code = "TOOL_CONTENT_TOO_LARGE"


class PatchTooLarge(TooLarge, InvalidInput):
    """400: an edit's patch over the limit."""

    code = "TOOL_PATCH_TOO_LARGE"


class PatchFailed(SandboxerError):
    """An edit's patch that does not apply; ``details`` has the hunk, line, expected and found."""

    code = "TOOL_PATCH_FAILED"


class ExecutionError(SandboxerError):
    """422: a command that could not run as asked (the group of the process and command codes)."""


class ProcessTimeout(ExecutionError):
    """A command that ran past its timeout; ``result`` has what it printed until then."""

    code = "PROCESS_TIMEOUT"


class ProcessFailed(ExecutionError):
    """A program that could not start (not found, not executable)."""

    code = "PROCESS_FAILED"


class CommandFailed(ExecutionError):
    """The bash tool's command exited non-zero; ``details`` has exitCode, stdout and stderr."""

    code = "TOOL_COMMAND_FAILED"


class NetworkDisabled(ExecutionError):
    """A command refused because it would use the network, which is off for the sandbox."""

    code = "TOOL_NETWORK_DISABLED"


class GitRemoteDisabled(NetworkDisabled):
    """A git command refused because it would reach a remote while the network is off."""

    code = "TOOL_GIT_REMOTE_DISABLED"


class GrepFailed(ExecutionError):
    """rg failed (a bad pattern, for example); ``details.stderr`` has its message."""

    code = "TOOL_GREP_FAILED"


class LimitExceeded(SandboxerError):
    """429: a quota of the token (``details.quota``) or the sandbox's process limit."""

    code = "LIMIT_EXCEEDED"


class Conflict(SandboxerError):
    """409: a synced file changed underneath (``SYNC_CONFLICT``); nothing was overwritten."""

    code = "SYNC_CONFLICT"


class VerifyFailed(SandboxerError):
    """422: what was restored (a snapshot into a workspace) does not match what was captured;
    ``details`` names the missing, altered, corrupt and unexpected paths."""

    code = "VERIFY_FAILED"


class IsolationUnavailable(SandboxerError):
    """503: an isolation layer the configuration requires cannot be applied here."""

    code = "ISOLATION_UNAVAILABLE"


class InternalError(SandboxerError):
    """500: a failure of the server that fits no other code."""

    code = "INTERNAL"


#: Every code of docs/api.md and the class raised for it. A code not listed (a newer server's)
#: raises :class:`SandboxerError` with that code.
ERRORS: Dict[str, Type[SandboxerError]] = {
    cls.code: cls
    for cls in (
        Unauthorized,
        Forbidden,
        NotFound,
        SandboxUnavailable,
        MethodNotAllowed,
        InvalidInput,
        PathInvalid,
        PathEscape,
        FileTooLarge,
        ContentTooLarge,
        PatchTooLarge,
        PatchFailed,
        ProcessTimeout,
        ProcessFailed,
        CommandFailed,
        NetworkDisabled,
        GitRemoteDisabled,
        GrepFailed,
        LimitExceeded,
        Conflict,
        VerifyFailed,
        IsolationUnavailable,
        InternalError,
    )
}


# The class of a code this SDK does not know, by its HTTP status (docs/api.md's table), so a newer
# server's code still lands in the right group.
_BY_STATUS: Dict[int, Type[SandboxerError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: TooLarge,
    422: ExecutionError,
    429: LimitExceeded,
    500: InternalError,
    503: IsolationUnavailable,
}


def error_from(error: Any, status: int = 0, result: Any = None) -> SandboxerError:
    """The exception for an ``error`` member ``{"code", "message", "details"}`` of a reply."""
    if not isinstance(error, dict):
        return SandboxerError(f"malformed error: {error!r}", status=status, result=result)
    code = str(error.get("code") or "")
    message = str(error.get("message") or code or "error")
    details = error.get("details")
    cls = ERRORS.get(code) or _BY_STATUS.get(status, SandboxerError)
    return cls(
        message,
        code=code,
        status=status,
        details=details if isinstance(details, dict) else {},
        result=result,
    )
