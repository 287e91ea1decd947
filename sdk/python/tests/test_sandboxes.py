from datetime import datetime, timedelta, timezone

import pytest

from sandboxer import Client, Forbidden, InvalidInput, MethodNotAllowed, NotFound, SandboxUnavailable


def test_health(client):
    h = client.health()
    assert h["ok"] is True
    assert "local" in h["adapters"]
    assert h["version"]


def test_context_manager_deletes(client):
    with client.create_sandbox() as sb:
        sid = sb.id
        assert sid.startswith("sbx-")
        assert sb.exec(["echo", "hi"]).stdout == "hi\n"
        assert sid in [s.id for s in client.list_sandboxes()]
    with pytest.raises(SandboxUnavailable):
        client.get_sandbox(sid)
    assert sid not in [s.id for s in client.list_sandboxes()]


def test_context_manager_deletes_on_error(client):
    with pytest.raises(RuntimeError):
        with client.create_sandbox() as sb:
            sid = sb.id
            raise RuntimeError("boom")
    with pytest.raises(NotFound):
        client.get_sandbox(sid)


def test_get_and_list(client, sandbox):
    got = client.get_sandbox(sandbox.id)
    assert got.id == sandbox.id
    assert got.adapter == sandbox.adapter
    assert got.capabilities["adapter"] == sandbox.adapter
    assert isinstance(got.created_at, datetime)
    assert got.expires_at > got.created_at
    assert sandbox.id in [s.id for s in client.list_sandboxes()]


def test_unknown_sandbox(client):
    with pytest.raises(NotFound) as ei:
        client.get_sandbox("sbx-000000000000")
    e = ei.value
    assert isinstance(e, SandboxUnavailable)
    assert e.code == "SANDBOX_UNAVAILABLE"
    assert e.status == 404
    assert "sbx-000000000000" in e.message
    # Even an id that is no id at all.
    with pytest.raises(SandboxUnavailable):
        client.get_sandbox("../../v1/health")


def test_delete(client):
    sb = client.create_sandbox()
    sb.write_file("f", "x")
    sb.delete()
    with pytest.raises(SandboxUnavailable):
        sb.read_file("f")
    with pytest.raises(SandboxUnavailable):
        sb.delete()
    sb.delete(missing_ok=True)


def test_extend(sandbox):
    before = sandbox.expires_at
    sandbox.extend(7200, idle_timeout_seconds=600)
    assert sandbox.info["idleTimeoutSeconds"] == 600
    after = sandbox.expires_at
    assert after > before
    assert after - datetime.now(timezone.utc) > timedelta(seconds=7000)
    assert sandbox.refresh().info["idleTimeoutSeconds"] == 600
    with pytest.raises(InvalidInput):
        sandbox.extend(0)


def test_lifetime_over_the_maximum(client, sandbox):
    # The server's --max-ttl is 24h by default.
    with pytest.raises(Forbidden) as ei:
        client.create_sandbox(ttl_seconds=10 * 24 * 3600)
    assert ei.value.status == 403
    with pytest.raises(Forbidden):
        sandbox.extend(10 * 24 * 3600)


def test_create_options(client):
    with client.create_sandbox(ttl_seconds=120, idle_timeout_seconds=30) as sb:
        assert sb.info["idleTimeoutSeconds"] == 30
        assert sb.expires_at - sb.created_at == timedelta(seconds=120)
    with pytest.raises(InvalidInput):
        client.create_sandbox(adapter="no-such-adapter")
    with pytest.raises(InvalidInput):
        client.create_sandbox(ttl_seconds=-1)


def test_fork(client, sandbox):
    sandbox.write_file("state.txt", "before fork\n")
    sandbox.write_file("bin.dat", b"\x00\x01\x02")
    with sandbox.fork() as child:
        assert child.id != sandbox.id
        assert child.fork_of == sandbox.id
        assert child.read_file("state.txt") == b"before fork\n"
        assert child.read_file("bin.dat") == b"\x00\x01\x02"
        # The two go their own ways.
        child.write_file("state.txt", "child\n")
        sandbox.write_file("state.txt", "parent\n")
        assert child.read_text("state.txt") == "child\n"
        assert sandbox.read_text("state.txt") == "parent\n"
        assert child.exec(["cat", "state.txt"]).stdout == "child\n"
    with pytest.raises(NotFound):
        client.get_sandbox(child.id)
    assert sandbox.read_text("state.txt") == "parent\n"


def test_refusals_of_the_api(client, sandbox):
    # The error shape of the server's own refusals maps as the tools' does.
    with pytest.raises(MethodNotAllowed):
        client._t.request("PATCH", f"/v1/sandboxes/{sandbox.id}")
    with pytest.raises(NotFound):
        client._t.request("GET", "/v1/no/such/endpoint")


def test_client_from_environment(url, monkeypatch):
    monkeypatch.setenv("SANDBOXER_URL", url)
    monkeypatch.delenv("SANDBOXER_TOKEN", raising=False)
    with Client() as c:
        assert c.url == url
        assert c.health()["ok"]
