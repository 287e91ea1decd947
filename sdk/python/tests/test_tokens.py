"""Against a server with a tokens file (sdk/python_test.go's TestPythonTokens): SANDBOXER_TOKEN
is alice's token (any adapter, no quota), SANDBOXER_TOKEN_2 bob's (the local adapter only, one
sandbox at a time)."""

import os

import pytest

from sandboxer import Client, Forbidden, LimitExceeded, NotFound, SandboxUnavailable, Unauthorized

ALICE = os.environ.get("SANDBOXER_TOKEN", "")
BOB = os.environ.get("SANDBOXER_TOKEN_2", "")

if not (ALICE and BOB):
    pytest.skip("needs a server with tokens (SANDBOXER_TOKEN, SANDBOXER_TOKEN_2)", allow_module_level=True)


def test_token_is_sent(url):
    with Client(url, token=ALICE) as c:
        with c.create_sandbox() as sb:
            assert sb.info["owner"] == "alice"
            assert sb.exec(["echo", "authorized"]).stdout == "authorized\n"
            assert [s.id for s in c.list_sandboxes()] == [sb.id]


def test_token_from_environment(url):
    # Client() reads SANDBOXER_URL and SANDBOXER_TOKEN.
    with Client() as c:
        with c.create_sandbox() as sb:
            assert sb.info["owner"] == "alice"


def test_wrong_or_missing_token(url):
    for token in ["sbx_" + "x" * 43, ""]:
        with Client(url, token=token) as c:
            assert c.health()["ok"]  # health needs no token
            with pytest.raises(Unauthorized) as ei:
                c.create_sandbox()
            assert ei.value.code == "UNAUTHORIZED"
            assert ei.value.status == 401
            with pytest.raises(Unauthorized):
                c.list_sandboxes()


def test_tokens_see_only_their_own(url):
    with Client(url, token=ALICE) as alice, Client(url, token=BOB) as bob:
        with alice.create_sandbox() as sb:
            sb.write_file("secret.txt", "alice's")
            # Bob's view of alice's sandbox is that of one that does not exist.
            with pytest.raises(SandboxUnavailable):
                bob.get_sandbox(sb.id)
            with pytest.raises(SandboxUnavailable):
                bob._t.request("GET", f"/v1/sandboxes/{sb.id}/files", query={"path": "secret.txt"})
            assert sb.id not in [s.id for s in bob.list_sandboxes()]


def test_quotas(url):
    with Client(url, token=BOB) as bob:
        with pytest.raises(Forbidden):
            bob.create_sandbox(adapter="memory")
        with bob.create_sandbox(adapter="local") as sb:
            with pytest.raises(LimitExceeded) as ei:
                bob.create_sandbox()
            assert ei.value.details["quota"] == "maxSandboxes"
            assert ei.value.status == 429
            with pytest.raises(LimitExceeded):
                sb.fork()
        # The place is free again once the sandbox is gone.
        with bob.create_sandbox() as sb2:
            assert sb2.info["owner"] == "bob"


def test_snapshots_are_the_tokens_own(url):
    with Client(url, token=ALICE) as alice, Client(url, token=BOB) as bob:
        with alice.create_sandbox() as sb:
            sb.write_file("a.txt", "alice's")
            sb.snapshot("alices")
        try:
            assert [s.name for s in bob.list_snapshots()] == []
            with pytest.raises(NotFound):
                bob.get_snapshot("alices")
            with pytest.raises(NotFound):
                bob.delete_snapshot("alices")
            with pytest.raises(NotFound):
                bob.create_sandbox(from_snapshot="alices")
            with bob.create_sandbox() as other:
                with pytest.raises(NotFound):
                    other.restore("alices")
        finally:
            alice.delete_snapshot("alices")
