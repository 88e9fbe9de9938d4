"""The README ends with the Guarantees of docs/GUARANTEES.md, word for word: one text, two places
(the README is what people read first; the doc is what the reliability findings link to)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_guarantees_section_is_docs_guarantees():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Guarantees\n") :]
    assert section == (ROOT / "docs" / "GUARANTEES.md").read_text(encoding="utf-8"), (
        "README's Guarantees differ from docs/GUARANTEES.md; after editing the doc run: "
        "python scripts/sync_guarantees.py"
    )
