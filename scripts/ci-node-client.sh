#!/usr/bin/env bash
# A front end that is not Python: the Node client (vscode-jsonrpc) spawns the sidecar and checks
# pi/open, pi/append, pi/getTree and pi/buildSessionContext.
set -euo pipefail
cd "$(dirname "$0")/../tests/node_client"
npm ci --no-audit --no-fund --loglevel=error
PI_SESSION_PYTHON="$(cd ../.. && pwd)/.venv/bin/python" node --test test.mjs
