#!/usr/bin/env bash
# CI: the conformance vectors once more, every session file opened through its persistent index
# (session/scan_index.py; the README's test command runs them without it).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/pytest -q tests/conformance --session-index
