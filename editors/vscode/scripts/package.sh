#!/usr/bin/env bash
# Build and package the extension as a .vsix:  bash editors/vscode/scripts/package.sh [OUT.vsix]
# Needs Node 20+ and npm (the npm registry). vsce is @vscode/vsce 3.9.2 (the newest that accepts
# Node 20), installed once into $VSCE_DIR (default /var/tmp/pi-vscode-vsce) unless $VSCE is given.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$HERE/pi-session.vsix}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
VSCE_VERSION=3.9.2
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

cd "$HERE"
[ -d node_modules/vscode-languageclient ] && [ -d node_modules/esbuild ] || npm ci --no-audit --no-fund >/dev/null
npm run --silent typecheck

if [ -z "${VSCE:-}" ]; then
  VSCE_DIR=${VSCE_DIR:-/var/tmp/pi-vscode-vsce}
  if [ ! -x "$VSCE_DIR/node_modules/.bin/vsce" ]; then
    mkdir -p "$VSCE_DIR" && echo '{"private":true}' > "$VSCE_DIR/package.json"
    (cd "$VSCE_DIR" && npm install --no-save "@vscode/vsce@$VSCE_VERSION" > install.log 2>&1) || { tail -30 "$VSCE_DIR/install.log"; exit 1; }
  fi
  VSCE=$VSCE_DIR/node_modules/.bin/vsce
fi
# vscode:prepublish bundles src/ into dist/extension.js (esbuild); only dist/ and the manifests ship.
# --no-rewrite-relative-links: the README's screenshot ships in the .vsix (images/) and VS Code shows it from there
"$VSCE" package --no-yarn --allow-missing-repository --no-rewrite-relative-links --out "$OUT" >/dev/null
echo "$OUT"
