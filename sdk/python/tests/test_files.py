import pytest

from conftest import needs
from sandboxer import InvalidInput, NotFound, PathEscape, PathInvalid, SandboxUnavailable


def test_round_trip_text(sandbox):
    assert sandbox.write_file("notes/todo.txt", "- ship it\n") == len("- ship it\n")
    assert sandbox.read_file("notes/todo.txt") == b"- ship it\n"
    assert sandbox.read_text("notes/todo.txt") == "- ship it\n"
    # Commands see what the API wrote, and the API what commands wrote.
    assert sandbox.exec(["cat", "notes/todo.txt"]).stdout == "- ship it\n"
    sandbox.exec(["sh", "-c", "printf 'from the shell' > notes/shell.txt"])
    assert sandbox.read_text("notes/shell.txt") == "from the shell"


def test_round_trip_binary(sandbox):
    data = bytes(range(256)) * 64 + b"\x00\xff\r\n\x1b"
    sandbox.write_file("bin/blob.dat", data)
    assert sandbox.read_file("bin/blob.dat") == data
    # The bytes inside the sandbox are the same.
    r = sandbox.exec(["od", "-An", "-tx1", "-v", "bin/blob.dat"])
    assert bytes.fromhex(r.stdout.replace("\n", " ")) == data


def test_unicode_text(sandbox):
    text = "ünïcødé ✓ 日本語\n"
    sandbox.write_file("u.txt", text)
    assert sandbox.read_text("u.txt") == text
    assert sandbox.read_file("u.txt") == text.encode("utf-8")


def test_empty_file_and_replace(sandbox):
    sandbox.write_file("e", b"")
    assert sandbox.read_file("e") == b""
    sandbox.write_file("e", "second")
    assert sandbox.read_file("e") == b"second"


def test_large_file(sandbox):
    data = bytes(i % 251 for i in range(3 << 20))
    sandbox.write_file("big.bin", data)
    assert sandbox.read_file("big.bin") == data
    assert sandbox.stat("big.bin").size == len(data)


def test_path_escape(sandbox):
    for path in ["../outside.txt", "a/../../outside.txt", "/etc/passwd"]:
        with pytest.raises(PathEscape) as ei:
            sandbox.write_file(path, "x")
        assert ei.value.code == "TOOL_PATH_ESCAPE"
        assert ei.value.status == 400
        assert isinstance(ei.value, InvalidInput)
        with pytest.raises(PathEscape):
            sandbox.read_file(path)


def test_path_escape_through_symlink(sandbox):
    needs(sandbox, "symlinks")
    sandbox.symlink("out", "/etc")
    with pytest.raises(PathEscape):
        sandbox.read_file("out/passwd")
    with pytest.raises(PathEscape):
        sandbox.write_file("out/evil", "x")


def test_path_required(sandbox):
    with pytest.raises(PathInvalid):
        sandbox.read_file("")


def test_missing_file(sandbox):
    with pytest.raises(NotFound) as ei:
        sandbox.read_file("no/such/file")
    assert ei.value.code == "TOOL_NOT_FOUND"
    assert ei.value.status == 404
    assert not isinstance(ei.value, SandboxUnavailable)
    assert not sandbox.exists("no/such/file")


def test_stat_list_remove(sandbox):
    sandbox.write_file("d/a.txt", "aa")
    sandbox.write_file("d/sub/b.txt", "bbb")
    sandbox.write_file("top.txt", "t")
    st = sandbox.stat("d/a.txt")
    assert (st.path, st.type, st.size, st.executable) == ("d/a.txt", "file", 2, False)
    assert st.mod_time is not None
    assert sandbox.stat("d").type == "dir"

    assert sorted(f.path for f in sandbox.list_files("d")) == ["d/a.txt", "d/sub/b.txt"]
    assert {"d/a.txt", "d/sub/b.txt", "top.txt"} <= {f.path for f in sandbox.list_files()}

    sandbox.remove("d/a.txt")
    assert not sandbox.exists("d/a.txt")
    with pytest.raises(NotFound):
        sandbox.remove("d/a.txt")


def test_executable_and_symlink(sandbox):
    sandbox.write_file("run.sh", "#!/bin/sh\necho ran\n")
    sandbox.set_executable("run.sh")
    assert sandbox.stat("run.sh").executable
    assert sandbox.stat("run.sh").permissions & 0o100
    assert sandbox.exec(["./run.sh"]).stdout == "ran\n"
    sandbox.set_executable("run.sh", False)
    assert not sandbox.stat("run.sh").executable

    needs(sandbox, "symlinks")
    sandbox.symlink("link.sh", "run.sh")
    st = sandbox.stat("link.sh")
    assert (st.type, st.link) == ("symlink", "run.sh")
    assert sandbox.read_text("link.sh") == "#!/bin/sh\necho ran\n"


def test_paths_that_need_escaping(sandbox):
    for path in ["dir with space/ü ñ.txt", "q?x=1&y=2#frag.txt", "percent%20.txt", "plus+sign.txt"]:
        sandbox.write_file(path, path)
        assert sandbox.read_text(path) == path
        assert sandbox.stat(path).path == path
        assert sandbox.exec(["cat", path]).stdout == path
    assert len(sandbox.list_files()) == 4
