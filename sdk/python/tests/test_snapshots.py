"""File system snapshots and pause/resume (docs/snapshots.md, "Over the API")."""

import time
import uuid

import pytest

from sandboxer import Conflict, InvalidInput, NotFound, SandboxUnavailable


def _name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def test_snapshot_restore_create_from_list_delete(client, sandbox):
    name = _name("py")
    sandbox.write_file("src/app.txt", "version 1\n")
    snap = sandbox.snapshot(name)
    assert (snap.name, snap.source, snap.files) == (name, sandbox.id, 1)
    with pytest.raises(Conflict):
        sandbox.snapshot(name)
    with pytest.raises(InvalidInput):
        sandbox.snapshot("../bad")

    sandbox.write_file("src/app.txt", "version 2\n")
    sandbox.write_file("extra.txt", "gone after the restore\n")
    with pytest.raises(Conflict):
        sandbox.restore(name)
    assert sandbox.restore(name, replace=True) == {"snapshot": name, "sandbox": sandbox.id, "files": 1, "bytes": 10}
    assert sandbox.read_text("src/app.txt") == "version 1\n"
    assert not sandbox.exists("extra.txt")

    with client.create_sandbox(from_snapshot=name) as other:
        assert other.read_text("src/app.txt") == "version 1\n"
    with pytest.raises(NotFound) as ei:
        client.create_sandbox(from_snapshot=name + "-missing")
    assert ei.value.code == "TOOL_NOT_FOUND"

    assert [s.name for s in client.list_snapshots(source=sandbox.id)] == [name]
    assert name in [s.name for s in client.list_snapshots(prefix="py-")]
    assert client.get_snapshot(name).files == 1
    client.delete_snapshot(name)
    with pytest.raises(NotFound):
        client.get_snapshot(name)
    with pytest.raises(NotFound):
        sandbox.restore(name, replace=True)


def test_pause_resume(client, sandbox):
    assert sandbox.paused is False
    if sandbox.adapter not in ("docker", "oci"):
        with pytest.raises(InvalidInput):
            sandbox.pause()
        return
    sandbox.start(["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > n.tmp && mv n.tmp n; sleep 0.05; done"])

    def count():
        try:
            return int(sandbox.read_text("n").strip() or 0)
        except NotFound:
            return 0

    while count() < 3:
        time.sleep(0.05)
    assert sandbox.pause().paused
    frozen = count()
    for call in (lambda: sandbox.exec(["true"]), lambda: sandbox.tool("bash", {"cmd": "true"})):
        with pytest.raises(SandboxUnavailable) as ei:
            call()
        assert ei.value.status == 409
        assert ei.value.details["paused"] is True
        assert "paused; resume it first" in str(ei.value)
    name = _name("paused")
    assert sandbox.snapshot(name).files >= 1
    client.delete_snapshot(name)
    assert client.get_sandbox(sandbox.id).paused
    assert not sandbox.resume().paused
    assert sandbox.exec(["echo", "back"]).stdout == "back\n"
    while count() <= frozen:
        time.sleep(0.05)
