"""Real work: Python's own tests, uploaded into a sandbox and run there by its python3.

With the local adapter commands run the host's python3; with docker the sandbox needs an image
that has one (SANDBOXER_TEST_IMAGE, the Debian toolchain image, which sdk/python_test.go passes
where it is built)."""

import glob
import os
import re
import sys
import sysconfig

import pytest


def stdlib_file(sb, rel, any_version=False):
    """A file of Python's standard library (`rel`: "test/test_textwrap.py") for the sandbox's
    python3, from a file system this process reads: the sandbox's own standard library when its
    commands run on this host (the local adapter), else this interpreter's when the versions
    match (or any_version). The test suite is in Debian's libpython3.X-testsuite."""
    r = sb.exec(["python3", "-c", "import sys, sysconfig; print(sysconfig.get_paths()['stdlib']); print(*sys.version_info[:2])"])
    stdlib, version = r.stdout.splitlines()
    candidates = []
    if sb.capabilities.get("exec") == "host":
        candidates.append(os.path.join(stdlib, rel))
    if any_version or version == f"{sys.version_info[0]} {sys.version_info[1]}":
        candidates.append(os.path.join(sysconfig.get_paths()["stdlib"], rel))
        candidates += sorted(glob.glob(f"/usr/lib/python{sys.version_info[0]}.{sys.version_info[1]}/{rel}"))
    for c in candidates:
        if os.path.isfile(c):
            return c
    return None


def test_stdlib_unittest_module(py_sandbox):
    """test_textwrap.py (plain unittest, stdlib imports only) runs and passes in the sandbox."""
    src = stdlib_file(py_sandbox, "test/test_textwrap.py")
    if src is None:
        pytest.skip("Python's test suite is not installed here (test_textwrap.py); test_stdlib_doctests runs instead")
    with open(src, "rb") as f:
        py_sandbox.write_file("pytests/test_textwrap.py", f.read())
    r = py_sandbox.exec(["python3", "-m", "unittest", "-v", "test_textwrap"], dir="pytests", timeout_ms=120000)
    assert r.exit_code == 0, r.stderr[-3000:]
    m = re.search(r"Ran (\d+) tests", r.stderr)
    assert m and int(m.group(1)) > 50, r.stderr[-3000:]
    assert r.stderr.rstrip().endswith("OK")


def test_stdlib_doctests(py_sandbox):
    """The doctests of statistics.py and fractions.py (copies, run as files) pass in the sandbox."""
    total = 0
    for mod in ("statistics", "fractions"):
        src = stdlib_file(py_sandbox, mod + ".py", any_version=True)
        with open(src, "rb") as f:
            py_sandbox.write_file(f"doctests/{mod}_copy.py", f.read())
        r = py_sandbox.exec(["python3", "-m", "doctest", "-v", f"{mod}_copy.py"], dir="doctests", timeout_ms=120000)
        assert r.exit_code == 0, (r.stdout[-3000:], r.stderr[-3000:])
        m = re.search(r"(\d+) passed and 0 failed", r.stdout)
        assert m, r.stdout[-2000:]
        total += int(m.group(1))
        assert r.stdout.rstrip().endswith("Test passed.")
    assert total > 50


def test_failing_test_is_reported(py_sandbox):
    """A failing test is a non-zero exit with the failure in the output, not an exception."""
    py_sandbox.write_file(
        "t/test_broken.py",
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_math(self):\n        self.assertEqual(1 + 1, 3)\n",
    )
    r = py_sandbox.exec(["python3", "-m", "unittest", "test_broken"], dir="t", timeout_ms=60000)
    assert r.exit_code == 1
    assert "FAILED (failures=1)" in r.stderr
    assert "AssertionError: 2 != 3" in r.stderr
