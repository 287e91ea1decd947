"""The README's example runs as written (against the test's server)."""

import contextlib
import io
import os
import re


def test_readme_example(url):
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8") as f:
        readme = f.read()
    code = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    code = code.replace('Client("http://127.0.0.1:7878")', f"Client({url!r}, token='')")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue()
    assert lines.startswith("3 hi\n")
    assert "PROCESS_TIMEOUT started\n" in lines
    assert lines.endswith("TOOL_PATH_ESCAPE 400\n")
