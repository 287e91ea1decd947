"""Fixtures of the SDK's tests: a client of the real server at SANDBOXER_URL (sdk/python_test.go
starts one; by hand: `sandboxerd serve` and SANDBOXER_URL=http://127.0.0.1:7878) and a fresh
sandbox per test, deleted after it."""

import os

import pytest

from sandboxer import Client

URL = os.environ.get("SANDBOXER_URL", "")


@pytest.fixture(scope="session")
def url():
    if not URL:
        pytest.skip("SANDBOXER_URL is not set: start `sandboxerd serve` and point it there (or run `go test ./sdk/`)")
    return URL


@pytest.fixture
def client(url):
    # Token-less: the token tests build their own clients.
    with Client(url, token="") as c:
        yield c


@pytest.fixture
def sandbox(client):
    with client.create_sandbox() as sb:
        yield sb


IMAGE = os.environ.get("SANDBOXER_TEST_IMAGE") or None


@pytest.fixture
def py_sandbox(client):
    """A sandbox with python3: the server's default, or one of SANDBOXER_TEST_IMAGE (an image
    with python3 for the container adapters, whose default image has none)."""
    with client.create_sandbox(image=IMAGE) as sb:
        r = sb.exec(["sh", "-c", "command -v python3 && python3 -c 'import sys; print(sys.version_info[0])'"])
        if r.exit_code != 0 or not r.stdout.endswith("3\n"):
            pytest.skip(f"no python3 in the {sb.adapter} sandbox (SANDBOXER_TEST_IMAGE names an image with one): {r.stdout}{r.stderr}")
        yield sb


def needs(sb, capability):
    """Skips the test visibly when the sandbox's adapter lacks a capability."""
    if not sb.capabilities.get(capability):
        pytest.skip(f"the {sb.adapter} adapter has no {capability}")
