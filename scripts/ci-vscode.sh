#!/usr/bin/env bash
# The VS Code extension in CI: its unit layer (stubbed `vscode` module), then the end-to-end test in
# a real VS Code (code-server + Debian chromium + playwright-core, installed and cached by e2e.sh).
# The screenshot artifact is written to editors/vscode/test-artifacts/e2e.png.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm test)
PY="$PWD/.venv/bin/python" bash editors/vscode/scripts/e2e.sh
