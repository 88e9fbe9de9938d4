"""docs/GUARANTEES.md and docs/DEVIATIONS.md back each promise with the tests that show it: every
test they name exists where they say (a name that points nowhere leaves a promise unshown).

A reference is a backquoted ``FILE.py`` or ``FILE.py::test_name`` (``test_prefix_*`` for several);
``::test_name`` alone is in the file named last. A bare file name is in ``tests/reliability/``, as
GUARANTEES.md says; a path into the package (``server/poller.py``) names code, not a test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["docs/GUARANTEES.md", "docs/DEVIATIONS.md"]
REFERENCE = re.compile(r"`([^`\s]*\.py(?:::[^`\s]*)?|::[^`\s]+)`")


def missing_tests(text: str) -> list[str]:
    """The references of ``text`` that name no test file or no test function."""
    missing: list[str] = []
    last: Path | None = None
    for match in REFERENCE.finditer(text):
        reference = match.group(1)
        if reference.startswith("::"):
            file, name = last, reference[2:]
        else:
            spelled, _, name = reference.partition("::")
            if not spelled.startswith(("tests/", "editors/")):
                if "/" in spelled:  # the package's own code
                    if not (ROOT / "pi_session_server" / spelled).is_file():
                        missing.append(reference)
                    last = None
                    continue
                spelled = f"tests/reliability/{spelled}"
            file = last = ROOT / spelled
        if file is None or not file.is_file():
            missing.append(reference)
            continue
        function = re.sub(r"\[.*$", "", name)  # a parametrized test's case
        if not function:
            continue
        pattern = re.escape(function[:-1]) if function.endswith("*") else re.escape(function) + r"\b"
        if not re.search(r"^(?:async )?def " + pattern, file.read_text(), re.M):
            missing.append(f"{file.relative_to(ROOT)}::{name}")
    return missing


@pytest.mark.parametrize("page", PAGES)
def test_every_test_a_page_names_exists(page: str) -> None:
    assert missing_tests((ROOT / page).read_text()) == []


def test_a_name_that_points_nowhere_is_found() -> None:
    text = (
        "`test_crash_safety.py::test_partial_last_line_is_reported_and_next_append_lands_on_its_own_line`, "
        "`::test_no_such_test`, `tests/unit/test_no_such_module.py`, `server/no_such_code.py`, "
        "`tests/unit/test_storage.py::test_rewrite_*`, `::test_kill_between_the_halves_of_a_foreign_line`"
    )
    assert missing_tests(text) == [
        "tests/reliability/test_crash_safety.py::test_no_such_test",
        "tests/unit/test_no_such_module.py",
        "server/no_such_code.py",
        "tests/unit/test_storage.py::test_kill_between_the_halves_of_a_foreign_line",
    ]
