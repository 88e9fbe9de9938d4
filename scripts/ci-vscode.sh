#!/usr/bin/env bash
# The VS Code extension in CI: its unit layer (stubbed `vscode` module), then the end-to-end test in
# a real VS Code (code-server + Debian chromium + playwright-core, installed and cached by e2e.sh;
# it makes a 100 MB session with bench/gen_session.py for the session viewer).
#
# CI artifacts: each run of the end-to-end test writes into a folder of its own, run.XXXXXX under
# $ARTIFACTS (default ci-artifacts/vscode-e2e/ in the repository), named on its last line:
# e2e-viewer.png (the session viewer on the 100 MB session), e2e-tree.png (the session tree),
# e2e-problems.png (the Problems panel), e2e-escaping.png (a session holding HTML and script tags,
# shown as text), e2e-hover.png, e2e-picker.png (Open Session... listing the folder's sessions),
# e2e-picker-narrow.png (the same in a window 640 pixels wide), e2e.png (the window at the end),
# e2e-failed-NN.png (check NN failed), e2e-error.png (a step threw), and for a failed run
# e2e-logs/ (the extension host's, the client's trace, code-server's, the server's).
set -euo pipefail
cd "$(dirname "$0")/.."
export ARTIFACTS=${ARTIFACTS:-$PWD/ci-artifacts/vscode-e2e}
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm test)
PY="$PWD/.venv/bin/python" bash editors/vscode/scripts/e2e.sh
echo "[ci-vscode] screenshots (CI artifacts): under $ARTIFACTS"
