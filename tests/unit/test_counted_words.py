"""The commands count in words one way (``_common.counted``): the singular for one, the plural
otherwise, and thousands separated (a damaged session has thousands of problems; "1234" reads
worse than "1,234" beside the other commands' counts)."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.commands.check import _total_text, summary_text

BAD_LINES = 1234


def _damaged(path: Path) -> Path:
    """A session with :data:`BAD_LINES` lines that are no JSON (no repair makes them)."""
    lines = [S.header(), S.user("a", None), *(f"not json {n}" for n in range(BAD_LINES))]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_check_s_summaries_count_in_words() -> None:
    counts = {"error": 1234, "warning": 1, "information": 2, "hint": 0}
    assert summary_text(counts) == "1,234 errors, 1 warning, 2 infos"
    totals = {"files": 1200, **counts}
    assert _total_text(totals, 0) == "1,200 files checked: 1,234 errors, 1 warning, 2 infos"
    assert _total_text({**totals, "error": 0, "warning": 0, "information": 0}, 1001) == (
        "1,200 files checked; 1,001 paths not found"
    )
    assert _total_text({**totals, "files": 1}, 1) == (
        "1 file checked: 1,234 errors, 1 warning, 2 infos; 1 path not found"
    )


def test_the_lines_pi_skips_are_counted_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _damaged(tmp_path / "s.jsonl")
    assert main(["tree", "--no-index", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"{path}: 1,234 lines skipped, as pi skips them:" in err
    assert "\n  and 1,231 more\n" in err


def test_repair_counts_the_problems_it_has_no_repair_for_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _damaged(tmp_path / "s.jsonl")
    assert main(["repair", str(path)]) == 1  # (errors left: check's status)
    out = capsys.readouterr().out
    assert f"{path}: nothing repaired: 1,234 problems have no repair (" in out
    assert "; 1,231 more); see `pi-session check" in out
    clean = tmp_path / "clean.jsonl"
    clean.write_text(S.header() + "\n", encoding="utf-8")
    assert main(["repair", str(path), str(clean)]) == 1
    out = capsys.readouterr().out
    assert "2 files checked: nothing to repair\n" in out
    assert "1 file has 1,234 problems that no repair makes: `pi-session check` lists them\n" in out
