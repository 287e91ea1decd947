import pytest

from conftest import needs
from sandboxer import InvalidInput, NotFound

ECHO_LINES = 'while read -r line; do echo "got $line"; echo "err $line" >&2; done; echo done'


def test_stdin_and_follow(sandbox):
    needs(sandbox, "processes")
    with sandbox.start(["sh", "-c", ECHO_LINES]) as p:
        assert p.state.running
        assert p.id
        p.write_stdin("one\n")
        stdout, stderr = "", ""
        with p.follow() as f:
            # Read until the answer to the first line came, then send the rest: the output
            # follows the input while the process runs.
            for chunk in f:
                stdout += chunk.stdout
                stderr += chunk.stderr
                if "got one\n" in stdout and "err one\n" in stderr:
                    break
            assert p.write_stdin(b"two\n", close=True) == 4
            for chunk in f:
                stdout += chunk.stdout
                stderr += chunk.stderr
        assert stdout == "got one\ngot two\ndone\n"
        assert stderr == "err one\nerr two\n"
        assert f.state is not None and not f.state.running
        assert f.state.exit_code == 0
        st = p.wait()
        assert not st.running and st.exit_code == 0


def test_output_offsets(sandbox):
    needs(sandbox, "processes")
    p = sandbox.start(["sh", "-c", "printf abc; printf XY >&2; read x; printf def"])
    first = p.output()
    while first.offset < 5:  # the two writes may come in two reads
        more = p.output(first.offset)
        first.stdout += more.stdout
        first.stderr += more.stderr
        first.offset = more.offset
    assert (first.stdout, first.stderr, first.offset) == ("abc", "XY", 5)
    p.close_stdin()
    assert p.wait().exit_code == 0
    rest = p.output(first.offset)
    assert rest.stdout == "def" and rest.stderr == ""
    assert rest.offset == 8
    assert not rest.state.running
    # From the start again, a byte at a time.
    assert p.output(0, limit=1).offset == 1
    # Exact bytes.
    assert p.output(0, binary=True).stdout == b"abcdef"


def test_follow_to_the_end(sandbox):
    needs(sandbox, "processes")
    p = sandbox.start(["sh", "-c", "echo a; echo b >&2; exit 4"], env={"X": "1"})
    out, err = p.follow().text()
    assert (out, err) == ("a\n", "b\n")
    assert p.state.exit_code == 4 and not p.state.running


def test_signal_and_wait(sandbox):
    needs(sandbox, "processes")
    needs(sandbox, "signals")
    p = sandbox.start(["sleep", "600"])
    st = p.wait(timeout_ms=200)
    assert st.running
    p.signal("TERM")
    st = p.wait()
    assert not st.running
    assert st.exit_code == 128 + 15
    p2 = sandbox.start(["sleep", "600"])
    p2.kill()
    assert p2.wait().exit_code == 128 + 9


def test_list_and_lookup(sandbox):
    needs(sandbox, "processes")
    p = sandbox.start(["sleep", "600"], dir=".")
    try:
        ids = [s.id for s in sandbox.processes()]
        assert p.id in ids
        again = sandbox.process(p.id)
        assert again.state.args == ["sleep", "600"]
        assert again.state.running
    finally:
        p.kill()
    with pytest.raises(NotFound):
        sandbox.process("p-no-such")


def test_with_block_kills(sandbox):
    needs(sandbox, "processes")
    with sandbox.start(["sleep", "600"]) as p:
        pass
    assert not p.refresh().running


def test_stdin_after_close(sandbox):
    needs(sandbox, "processes")
    p = sandbox.start(["cat"])
    p.close_stdin()
    p.wait()
    with pytest.raises(InvalidInput):
        p.write_stdin("late\n")
