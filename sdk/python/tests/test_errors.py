"""The error classes against the codes the server can send (docs/api.md, errs/errs.go and the
API's own codes): every one has its class. These read the repository, not the server."""

import os
import re

import pytest

import sandboxer
from sandboxer import ERRORS, SandboxerError, error_from

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def read(rel):
    path = os.path.join(REPO, rel)
    if not os.path.exists(path):
        pytest.skip(f"{rel} not found: the SDK is outside the repository")
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_every_documented_code_has_a_class():
    doc = read("docs/api.md")
    table = doc[doc.index("| status | codes |"):]
    table = table[: table.index("\n\n")]
    codes = set(re.findall(r"`([A-Z][A-Z_]+)`", table))
    assert len(codes) >= 19
    missing = sorted(codes - set(ERRORS))
    assert not missing, f"codes of docs/api.md without a class: {missing}"


def test_every_server_code_has_a_class():
    codes = set(re.findall(r'Code = "([A-Z_]+)"', read("errs/errs.go")))
    codes |= set(re.findall(r'errs\.Code = "([A-Z_]+)"', read("api/api.go")))
    assert len(codes) >= 20
    missing = sorted(codes - set(ERRORS))
    assert not missing, f"codes the server sends without a class: {missing}"


def test_status_of_each_class_matches_the_table():
    doc = read("docs/api.md")
    for status, codes in re.findall(r"^\| (\d{3}) \| (.*) \|$", doc, re.M):
        for code in re.findall(r"`([A-Z][A-Z_]+)`", codes):
            e = error_from({"code": code, "message": "m"}, int(status))
            assert type(e) is ERRORS[code]
            assert e.code == code and e.status == int(status)


def test_groups():
    assert issubclass(sandboxer.SandboxUnavailable, sandboxer.NotFound)
    assert issubclass(sandboxer.PathEscape, sandboxer.InvalidInput)
    assert issubclass(sandboxer.ProcessTimeout, sandboxer.ExecutionError)
    assert issubclass(sandboxer.FileTooLarge, sandboxer.TooLarge)
    for cls in ERRORS.values():
        assert issubclass(cls, SandboxerError)


def test_unknown_code_falls_back_by_status():
    e = error_from({"code": "SOMETHING_NEW", "message": "m", "details": {"a": 1}}, 422)
    assert type(e) is sandboxer.ExecutionError
    assert e.code == "SOMETHING_NEW" and e.details == {"a": 1}
    e = error_from({"code": "SOMETHING_NEW", "message": "m"}, 418)
    assert type(e) is SandboxerError
    assert str(e) == "SOMETHING_NEW: m"
