"""README's "A minute of the command line" is read in a terminal and in diffs: its prose keeps to
the width its paragraphs are wrapped at."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
WRAP_WIDTH = 100


def _section(title: str) -> list[str]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"## {title}") + 1
    end = next((n for n in range(start, len(lines)) if lines[n].startswith("## ")), len(lines))
    return lines[start:end]


def test_the_command_line_section_s_prose_keeps_to_the_wrap_width() -> None:
    in_code = False
    long_lines = []
    for line in _section("A minute of the command line"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and len(line) > WRAP_WIDTH:
            long_lines.append(line)
    assert long_lines == []
