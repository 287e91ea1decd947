// Package errs owns sandboxer's error codes: stable wire values (journal, CLI JSON, MCP) and the
// error type that carries them.
//
// A Code is itself an error, so callers match with errors.Is(err, errs.PathEscape); errors.As with
// *errs.Error gives the operation, path and details. Tests assert codes, never message text.
package errs

import (
	"errors"
	"fmt"
)

// Code is a stable error code. Never rename a value: they are part of the wire contract.
type Code string

// The codes of SPEC.md section 3, plus the few that later layers need.
const (
	InvalidInput       Code = "INVALID_INPUT"
	PathInvalid        Code = "TOOL_PATH_INVALID"
	PathEscape         Code = "TOOL_PATH_ESCAPE"
	NotFound           Code = "TOOL_NOT_FOUND"
	FileTooLarge       Code = "TOOL_FILE_TOO_LARGE"
	ContentTooLarge    Code = "TOOL_CONTENT_TOO_LARGE"
	PatchTooLarge      Code = "TOOL_PATCH_TOO_LARGE"
	PatchFailed        Code = "TOOL_PATCH_FAILED"
	NetworkDisabled    Code = "TOOL_NETWORK_DISABLED"
	GitRemoteDisabled  Code = "TOOL_GIT_REMOTE_DISABLED"
	CommandFailed      Code = "TOOL_COMMAND_FAILED"
	GrepFailed         Code = "TOOL_GREP_FAILED"
	ProcessTimeout     Code = "PROCESS_TIMEOUT"
	ProcessFailed      Code = "PROCESS_FAILED"
	SandboxUnavailable Code = "SANDBOX_UNAVAILABLE"

	// IsolationUnavailable: a configuration requires an isolation layer that cannot be applied
	// here, so the command was refused (fail closed).
	IsolationUnavailable Code = "ISOLATION_UNAVAILABLE"
	// LimitExceeded: an execution limit of an adapter (commands, loop iterations, tree size) was hit.
	LimitExceeded Code = "LIMIT_EXCEEDED"
	// Conflict: a store entry changed since it was hydrated (FileSync); nothing was overwritten.
	Conflict Code = "SYNC_CONFLICT"
	// VerifyFailed: what was restored (a snapshot into a workspace) does not match what was
	// captured: a missing or altered file, or a blob gone from the store. Details name the paths.
	// Also a journal whose hash chain does not verify (`sandboxer log --verify`): details name the
	// run, chain index, row id and check of the first row that fails.
	VerifyFailed Code = "VERIFY_FAILED"
	// Internal: an unexpected failure that fits no other code (I/O error, bug).
	Internal Code = "INTERNAL"
)

// Error makes a Code usable as a sentinel for errors.Is.
func (c Code) Error() string { return string(c) }

// Error is sandboxer's error: a code, the operation and path it concerns, a human message,
// optional structured details (for example the output of a failed command) and the cause.
type Error struct {
	Code    Code
	Op      string         // "read", "write", "exec", ...
	Path    string         // the path as the caller gave it, if any
	Msg     string         // human-readable; not part of the contract
	Details map[string]any // JSON-friendly extra data, part of the wire contract where documented
	Err     error          // the cause, if any
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Op != "" {
		s += ": " + e.Op
	}
	if e.Path != "" {
		s += " " + e.Path
	}
	switch {
	case e.Msg != "" && e.Err != nil:
		s += ": " + e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		s += ": " + e.Msg
	case e.Err != nil:
		s += ": " + e.Err.Error()
	}
	return s
}

// Message is the text for the wire ("message" in the CLI JSON): the message and the cause, without
// the code.
func (e *Error) Message() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return string(e.Code)
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is this error's code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// New returns an error with a code, an operation, a path and a formatted message.
func New(code Code, op, path, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with a code, an operation and a path around a cause. A nil cause gives nil.
func Wrap(code Code, op, path string, cause error) error {
	if cause == nil {
		return nil
	}
	return &Error{Code: code, Op: op, Path: path, Err: cause}
}

// CodeOf returns the code carried by err, or "" when err is nil or carries none.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return ""
}

// As returns err as *Error; an error without a code becomes Internal (nil stays nil).
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if c := CodeOf(err); c != "" {
		return &Error{Code: c, Err: err}
	}
	return &Error{Code: Internal, Err: err}
}
