#!/usr/bin/env bash
# Sets up the development environment (idempotent) and runs the Python tests on every core
# (pytest-xdist). The tests marked slow (pyproject.toml's markers) are left out by default, so the
# command stays within a few minutes on two cores; another -m replaces that choice:
#   bash scripts/test.sh -m slow    # only the slow ones
#   bash scripts/test.sh -m ""      # every test
# CI (.ci/run) runs both halves. Further arguments go to pytest (paths, -k, -x, -n 0, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet -e '.[dev]'
exec .venv/bin/pytest -q -n auto -m "not slow" "$@"
