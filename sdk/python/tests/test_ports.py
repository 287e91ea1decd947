import socket
import ssl

import pytest

from conftest import needs
from sandboxer import SandboxerError

# A line echo server on 127.0.0.1:PORT inside the sandbox, saying when it listens.
ECHO_SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(1)
print("listening", s.getsockname()[1], flush=True)
c, _ = s.accept()
c.sendall(b"hello from the sandbox\\n")
f = c.makefile("rb")
for line in f:
    c.sendall(b"echo " + line)
c.close()
"""


def test_connect_port(py_sandbox):
    sandbox = py_sandbox
    needs(sandbox, "ports")
    needs(sandbox, "processes")
    sandbox.write_file("echo_server.py", ECHO_SERVER)
    with sandbox.start(["python3", "-u", "echo_server.py"]) as p:
        out = ""
        with p.follow() as f:
            for chunk in f:
                out += chunk.stdout
                if out.endswith("\n"):
                    break
        assert out.startswith("listening "), out + p.output().stderr
        port = int(out.split()[1])
        s = sandbox.connect_port(port, timeout=30)
        with s, s.makefile("rb") as f:
            # The server spoke first: its greeting must not be lost in the upgrade.
            assert f.readline() == b"hello from the sandbox\n"
            s.sendall(b"ping\n")
            assert f.readline() == b"echo ping\n"
            if not isinstance(s, ssl.SSLSocket):  # Python's TLS sockets cannot half-close
                # A half-close reaches the server, whose end then closes the stream.
                s.shutdown(socket.SHUT_WR)
                assert f.read() == b""
        # Closed, the connection ends, and with it the echo server.
        st = p.wait(timeout_ms=30000)
        assert not st.running and st.exit_code == 0


def test_connect_closed_port(sandbox):
    needs(sandbox, "ports")
    with pytest.raises(SandboxerError) as ei:
        sandbox.connect_port(1, timeout=30)
    assert ei.value.status >= 400
