import pytest

from sandboxer import CommandFailed, GrepFailed, InvalidInput, NotFound, PatchFailed, PathEscape


def test_write_then_read(sandbox):
    sandbox.write("src/app.py", "print('hello')\n")
    assert sandbox.read("src/app.py") == "print('hello')\n"
    assert sandbox.read_text("src/app.py") == "print('hello')\n"


def test_tool_reply_is_data(sandbox):
    # tool() answers the reply as it is, ok or not; the convenience methods raise.
    reply = sandbox.tool("read", {"path": "../../etc/passwd"})
    assert reply["ok"] is False
    assert reply["error"]["code"] == "TOOL_PATH_ESCAPE"
    with pytest.raises(PathEscape) as ei:
        sandbox.read("../../etc/passwd")
    assert ei.value.status == 200
    reply = sandbox.tool("write", {"path": "f.txt", "content": "x"})
    assert reply == {"ok": True, "output": "ok"}


def test_edit_with_unified_diff(sandbox):
    sandbox.write("src/a.txt", "one\ntwo\nthree\n")
    patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n+two and a half\n three\n"
    sandbox.edit("src/a.txt", patch)
    assert sandbox.read("src/a.txt") == "one\nTWO\ntwo and a half\nthree\n"


def test_edit_that_does_not_apply(sandbox):
    sandbox.write("b.txt", "alpha\nbeta\n")
    patch = "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n alpha\n-gamma\n+delta\n"
    with pytest.raises(PatchFailed) as ei:
        sandbox.edit("b.txt", patch)
    e = ei.value
    assert e.code == "TOOL_PATCH_FAILED"
    assert e.details["hunk"] == 1
    assert e.details["expected"] == "gamma"
    # Nothing was written.
    assert sandbox.read_file("b.txt") == b"alpha\nbeta\n"
    with pytest.raises(InvalidInput):
        sandbox.edit("b.txt", "this is not a diff")
    with pytest.raises(NotFound):
        sandbox.edit("missing.txt", patch)


def test_grep(sandbox):
    sandbox.write("dir/a.txt", "hello world\nbye\n")
    sandbox.write("dir/sub/c.txt", "nothing\nsay hello -world\n")
    out = sandbox.grep("hello", "dir")
    assert sorted(out.splitlines()) == ["dir/a.txt:1:hello world", "dir/sub/c.txt:2:say hello -world"]
    assert sandbox.grep("-world") == "dir/sub/c.txt:2:say hello -world\n"
    assert sandbox.grep("no match anywhere") == ""
    with pytest.raises(GrepFailed):
        sandbox.grep("(unclosed")


def test_bash(sandbox):
    r = sandbox.bash("sh", ["-c", "echo out; echo err >&2"])
    assert r["stdout"] == "out\n"
    assert r["stderr"] == "err\n"
    assert r["output"] == "out\nerr\n"
    assert r["exitCode"] == 0
    sandbox.write("sub/x", "")
    assert sandbox.bash("ls", cwd="sub")["stdout"] == "x\n"


def test_bash_nonzero_exit_raises(sandbox):
    with pytest.raises(CommandFailed) as ei:
        sandbox.bash("sh", ["-c", "echo printed; exit 7"])
    assert ei.value.details["exitCode"] == 7
    assert ei.value.details["stdout"] == "printed\n"
    # As data:
    reply = sandbox.tool("bash", {"cmd": "sh", "args": ["-c", "exit 3"]})
    assert reply["ok"] is False and reply["error"]["details"]["exitCode"] == 3


def test_unknown_tool(sandbox):
    with pytest.raises(NotFound):
        sandbox.tool("no_such_tool", {})


def test_invalid_tool_input(sandbox):
    reply = sandbox.tool("read", {"path": "x", "unknown": 1})
    assert reply["ok"] is False and reply["error"]["code"] == "INVALID_INPUT"


def test_journal_position_headers(sandbox):
    # The position travels in headers: a retry of a node that already wrote is warned about.
    pos = {"run_id": "py-run", "node_id": "fix", "iteration": 2}
    sandbox.write("j.txt", "x\n", attempt=1, **pos)
    reply = sandbox.tool("read", {"path": "j.txt"}, attempt=2, idempotency_key="py-key-1", **pos)
    assert reply["ok"] is True
    assert "attempt 2" in reply.get("warning", "")
    assert "write" in reply["warning"]
    # A position the server refuses is a refusal of the request.
    with pytest.raises(InvalidInput):
        sandbox.tool("read", {"path": "j.txt"}, iteration=-1)
    with pytest.raises(InvalidInput):
        sandbox.read("j.txt", attempt=0)


def test_process_tools(sandbox):
    # The background processes as tools (process_list and friends) see the API's processes.
    p = sandbox.start(["cat"])
    reply = sandbox.call("process_input", {"process": p.id, "data": "via tool\n", "eof": True})
    assert reply["output"] == "ok"
    p.wait()
    out = p.output()
    assert out.stdout == "via tool\n"
    listed = sandbox.call("process_list", {})
    assert p.id in listed["output"]
