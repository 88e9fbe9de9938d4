"""The library's examples run as written: every ``python`` block of docs/API.md and the library's
block of README.md, in a fresh directory holding the ``session.jsonl`` README.md tells the reader to
copy, with a home directory of their own (nothing is made in the real one); a context they build is
that of a real session, not the empty one of a path that names no file."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _library_blocks() -> list[tuple[str, str]]:
    blocks = []
    for page in ("docs/API.md", "README.md"):
        for number, code in enumerate(_PYTHON_BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))):
            if "pi_session_server.server" not in code:  # the sidecar's are the server's to run
                blocks.append((f"{page}#{number}", code))
    return blocks


BLOCKS = _library_blocks()


def test_the_pages_show_library_examples():
    assert any(name.startswith("docs/API.md") for name, _ in BLOCKS)
    assert any(name.startswith("README.md") for name, _ in BLOCKS)


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_a_library_example_runs_as_written(tmp_path, monkeypatch, name, code):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLE, work / "session.jsonl")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.chdir(work)
    namespace: dict[str, object] = {"__name__": "__example__"}
    exec(compile(code, name, "exec"), namespace)
    assert list(home.iterdir()) == []  # an example that only looks makes nothing in the home directory
    context = namespace.get("context")
    if context is not None:  # it looked at a session that holds one, not at a file that is not there
        assert isinstance(context, dict) and context["messages"]
