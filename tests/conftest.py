"""Options shared by every test directory.

``--long`` is registered here, not in tests/reliability/conftest.py, so that it works whatever paths
pytest is given (``pytest --long``, ``bash scripts/test.sh --long``, ``pytest tests/reliability --long``):
pytest only takes options from conftest files it loads before parsing the command line.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="reliability suite: longer runs (300 kills, 100 MB line, a million lines, more examples)",
    )
