"""Copy docs/GUARANTEES.md over the Guarantees section that ends the README."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
readme_path = ROOT / "README.md"
readme = readme_path.read_text(encoding="utf-8")
head = readme[: readme.index("## Guarantees\n")]
readme_path.write_text(head + (ROOT / "docs" / "GUARANTEES.md").read_text(encoding="utf-8"), encoding="utf-8")
