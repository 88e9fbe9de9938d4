#!/usr/bin/env bash
# Sets up the development environment (idempotent) and runs every Python test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet -e '.[dev]'
exec .venv/bin/pytest -q "$@"
