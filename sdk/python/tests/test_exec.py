import pytest

from sandboxer import ExecutionError, InvalidInput, ProcessFailed, ProcessTimeout, SandboxUnavailable


def test_exec_output_and_exit_code(sandbox):
    r = sandbox.exec(["sh", "-c", "echo out; echo err >&2"])
    assert r.exit_code == 0 and r.ok
    assert r.stdout == "out\n"
    assert r.stderr == "err\n"
    assert not r.stdout_truncated and not r.stderr_truncated
    assert r.duration_ms >= 0
    assert "network" in r.isolation
    assert r.receipt["stdoutBytes"] == 4 and r.receipt["stderrBytes"] == 4


def test_nonzero_exit_is_data(sandbox):
    r = sandbox.exec(["sh", "-c", "echo partial; echo oops >&2; exit 7"])
    assert r.exit_code == 7
    assert not r.ok
    assert r.stdout == "partial\n"
    assert r.stderr == "oops\n"


def test_stdin_text_and_bytes(sandbox):
    assert sandbox.exec(["cat"], stdin="line one\nline two\n").stdout == "line one\nline two\n"
    data = bytes(range(256)) * 4
    r = sandbox.exec(["cat"], stdin=data, binary=True)
    assert r.exit_code == 0
    assert r.stdout == data
    assert isinstance(r.stderr, bytes)


def test_invalid_utf8_output_is_replaced_unless_binary(sandbox):
    cmd = ["printf", "a\\377b"]
    assert sandbox.exec(cmd).stdout == "a\ufffdb"
    assert sandbox.exec(cmd, binary=True).stdout == b"a\xffb"


def test_dir_and_env(sandbox):
    sandbox.write_file("sub/dir/marker", "m")
    r = sandbox.exec(["sh", "-c", 'ls; echo "$GREETING $OTHER"'], dir="sub/dir", env={"GREETING": "hello", "OTHER": "x=y"})
    assert r.stdout == "marker\nhello x=y\n"
    r = sandbox.exec(["sh", "-c", 'echo "$A"'], env=["A=list form"])
    assert r.stdout == "list form\n"


def test_output_cap(sandbox):
    r = sandbox.exec(["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo 0123456789; i=$((i+1)); done"], max_output_bytes=1000)
    assert r.exit_code == 0
    assert r.stdout_truncated
    assert len(r.stdout) == 1000
    assert r.stdout_dropped == 3300 - 1000


def test_timeout_raises_with_partial_result(sandbox):
    # The echo runs at once; the sleep is far past the timeout, so the outcome does not depend
    # on the machine's speed.
    with pytest.raises(ProcessTimeout) as ei:
        sandbox.exec(["sh", "-c", "echo before; sleep 60; echo after"], timeout_ms=1500)
    e = ei.value
    assert e.code == "PROCESS_TIMEOUT"
    assert e.status == 422
    assert isinstance(e, ExecutionError)
    assert e.result is not None
    assert e.result.stdout == "before\n"
    assert e.result.exit_code != 0
    # The sandbox is fine afterwards.
    assert sandbox.exec(["echo", "still here"]).stdout == "still here\n"


def test_program_not_found(sandbox):
    with pytest.raises(ProcessFailed) as ei:
        sandbox.exec(["/no/such/program"])
    assert ei.value.code == "PROCESS_FAILED"


def test_args_must_be_argv(sandbox):
    with pytest.raises(TypeError):
        sandbox.exec("echo hi")
    with pytest.raises(InvalidInput):
        sandbox.exec(["true"], timeout_ms=-1)


def test_stream(sandbox):
    chunks = []
    with sandbox.exec_stream(["sh", "-c", "echo one; echo two >&2; echo three; exit 3"]) as s:
        for chunk in s:
            chunks.append(chunk)
    out = "".join(c.data for c in chunks if c.stream == "stdout")
    err = "".join(c.data for c in chunks if c.stream == "stderr")
    assert out == "one\nthree\n"
    assert err == "two\n"
    assert s.result is not None
    assert s.result.exit_code == 3
    assert s.result.stdout == ""  # the chunks carried it


def test_stream_chunks_arrive_before_exit(sandbox):
    # The command waits until a file appears, which the test writes after it saw the first
    # chunk: the chunk must have come while the command was still running.
    script = "echo ready; while [ ! -e go ]; do sleep 0.05; done; echo done"
    with sandbox.exec_stream(["sh", "-c", script], timeout_ms=60000) as s:
        first = next(s)
        assert (first.stream, first.data) == ("stdout", "ready\n")
        sandbox.write_file("go", "")
        rest = "".join(c.data for c in s)
    assert rest == "done\n"
    assert s.result.exit_code == 0


def test_stream_binary_and_stdin(sandbox):
    data = bytes(range(256))
    with sandbox.exec_stream(["cat"], stdin=data, binary=True) as s:
        got = b"".join(c.data for c in s)
    assert got == data


def test_stream_timeout_raises_at_end(sandbox):
    seen = []
    with pytest.raises(ProcessTimeout) as ei:
        for chunk in sandbox.exec_stream(["sh", "-c", "echo early; sleep 60"], timeout_ms=1500):
            seen.append(chunk.data)
    assert "".join(seen) == "early\n"
    assert ei.value.result is not None
    assert ei.value.result.exit_code != 0


def test_stream_closed_early_kills_the_command(sandbox):
    # The command would create a file after the client went away; closing the stream cancels it.
    s = sandbox.exec_stream(["sh", "-c", "echo started; sleep 2; echo late > late.txt"], timeout_ms=60000)
    assert next(s).data == "started\n"
    s.close()
    # Outlive the sleep by far: had the command lived on, the file would be there.
    sandbox.exec(["sleep", "5"])
    assert not sandbox.exists("late.txt")


def test_exec_in_unknown_sandbox(client):
    sb = client.create_sandbox()
    sb.delete()
    with pytest.raises(SandboxUnavailable):
        sb.exec(["true"])


def test_one_client_many_threads(sandbox):
    # The client is shared by threads: each request has a connection of its own.
    from concurrent.futures import ThreadPoolExecutor

    def work(i):
        sandbox.write_file(f"t/{i}.txt", str(i))
        r = sandbox.exec(["cat", f"t/{i}.txt"])
        return r.stdout

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(work, range(24))) == [str(i) for i in range(24)]


def test_stream_program_not_found(sandbox):
    with pytest.raises(ProcessFailed):
        for _ in sandbox.exec_stream(["/no/such/program"]):
            pass
