#!/usr/bin/env bash
# End-to-end test of the extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3), driven
# by headless Debian chromium through playwright-core, against the real pi-session server.
#
#   bash editors/vscode/scripts/e2e.sh
#
# Installs what is missing (apt: chromium, ripgrep, libkrb5-dev, g++/make; npm: code-server, vsce,
# playwright-core), cached under $E2E_DIR (default /var/tmp/pi-vscode-e2e) and shared by the runs
# (installed under a lock). Each run works in a folder of its own, $E2E_DIR/run.XXXXXX (mktemp),
# removed when the run ends however it ends (E2E_KEEP_RUN=1 keeps it), and writes what it shows
# into a folder of its own, $ARTIFACTS/run.XXXXXX (the same name): runs at the same time, from one
# checkout too, do not meet. Needs root for apt (or those packages already installed), Node 20 and
# npm, and a Python with the server: $PY (default <repo>/.venv/bin/python). $ARTIFACTS defaults to
# editors/vscode/test-artifacts/; a run's folder holds its screenshots: e2e-viewer.png (the session
# viewer on a 100 MB session), e2e-tree.png (the session tree beside the session), e2e-problems.png
# (the Problems panel), e2e-escaping.png (a session holding HTML and script tags, shown as text),
# e2e-picker.png (Open Session... listing two sessions; e2e-picker-narrow.png in a window 640
# pixels wide), e2e-hover.png and e2e.png (the window at the end); e2e-failed-NN.png when check
# NN fails, e2e-error.png when a step throws. When the run fails, its logs go there too, under
# e2e-logs/: the extension host's and the
# "Pi Session" output channel's (the client's trace of every message, piSession.trace.server),
# code-server.log, and server.log (the server's own log at DEBUG: what its poller saw of the files
# it follows). The server starts as a user's would with "piSession.server.pythonPath": a wrapper
# stands in as that Python, adds the log options to `-m pi_session_server serve` and notes the
# call, which the test checks, and the server's process id (the test kills it). The 100 MB session is made by bench/gen_session.py (cached under
# $E2E_DIR, never committed).
# Ends with "N passed, M failed" and exits 0 only when every check passed. $E2E_SCRIPT runs another
# test in the same setting: test/e2e/picker-many.mjs (Open Session... with 5,000 sessions: shown at
# once, busy, filled; closed while busy, its listing cancelled on the server).
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$HERE/../.." && pwd)
E2E=${E2E_DIR:-/var/tmp/pi-vscode-e2e}
PY=${PY:-$REPO/.venv/bin/python}
ARTIFACTS=${ARTIFACTS:-$HERE/test-artifacts}
FIXTURES=${FIXTURES:-$REPO/tests/editors/fixtures}
CS_VERSION=4.100.3      # newest code-server whose engines.node accepts Node 20 (VS Code 1.100.3)
VSCE_VERSION=3.9.2      # newest @vscode/vsce that accepts Node 20
PW_VERSION=1.65.1
# a free loopback port unless one is given
PORT=${PORT:-$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")}
export npm_config_nodedir=/usr          # node-gyp: use /usr/include/node, never download headers
export npm_config_yes=true              # node-pty's postinstall runs `npx node-gyp`
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export XDG_CONFIG_HOME=$E2E/xdg/config XDG_DATA_HOME=$E2E/xdg/data XDG_CACHE_HOME=$E2E/xdg/cache
T0=$(date +%s); ts() { echo "$(( $(date +%s) - T0 ))s"; }
"$PY" -c 'import pi_session_server' || { echo "[e2e] $PY cannot import pi_session_server (set PY)"; exit 1; }
mkdir -p "$E2E" "$ARTIFACTS"
RUN=$(mktemp -d "$E2E/run.XXXXXX")
OUT=$ARTIFACTS/$(basename "$RUN")
mkdir "$OUT"
CS_PID=
finish() {
  local status=$?
  if [ -n "$CS_PID" ]; then
    kill -TERM -- "-$CS_PID" 2>/dev/null || true; sleep 1; kill -KILL -- "-$CS_PID" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ]; then
    mkdir -p "$OUT/e2e-logs"
    cp -r "$RUN/ud/logs" "$OUT/e2e-logs/vscode" 2>/dev/null || true
    cp "$RUN/code-server.log" "$RUN/server.log" "$OUT/e2e-logs/" 2>/dev/null || true
    tail -30 "$RUN/code-server.log" 2>/dev/null || true
    find "$RUN/ud/logs" -name '*.log' \( -path '*exthost*' -o -name '*Pi Session*' \) -exec tail -n 40 {} + 2>/dev/null || true
    echo "[e2e] the run's logs: $OUT/e2e-logs"
  fi
  if [ "${E2E_KEEP_RUN:-}" = 1 ]; then echo "[e2e] this run's folder is kept: $RUN"; else rm -rf "$RUN"; fi
  echo "[e2e] this run's screenshots: $OUT"
}
trap finish EXIT
trap 'exit 130' INT   # the EXIT trap cleans up after Ctrl-C and kill too
trap 'exit 143' TERM
# the caches below are shared by the runs: one run at a time installs or makes them
exec 9> "$E2E/install.lock"
flock 9

# --- 1. system packages (Debian) ----------------------------------------------------------------
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v rg >/dev/null || need+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "[e2e] apt-get install ${need[*]}"
  timeout 300 apt-get update -qq
  DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "[e2e] system packages ready $(ts)"

# --- 2. code-server (npm, cached per version) ---------------------------------------------------
CS_HOME=$E2E/code-server-$CS_VERSION
if [ ! -x "$CS_HOME/node_modules/.bin/code-server" ]; then
  # @vscode/ripgrep's postinstall downloads rg unless its cache (in os.tmpdir()) has the archive
  RG_CACHE=$E2E/tmp/vscode-ripgrep-cache-1.15.11
  mkdir -p "$RG_CACHE" "$E2E/rgtar"; cp "$(command -v rg)" "$E2E/rgtar/rg"
  tar czf "$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$E2E/rgtar" rg
  rm -rf "$CS_HOME"; mkdir -p "$CS_HOME"; echo '{"private":true}' > "$CS_HOME/package.json"
  echo "[e2e] installing code-server $CS_VERSION (about 2 minutes)"
  (cd "$CS_HOME" && TMPDIR=$E2E/tmp timeout 1200 npm install --no-save --foreground-scripts --unsafe-perm \
      "code-server@$CS_VERSION" > install.log 2>&1) || { tail -50 "$CS_HOME/install.log"; rm -rf "$CS_HOME"; exit 1; }
fi
CS=$CS_HOME/node_modules/.bin/code-server
echo "[e2e] code-server $CS_VERSION ready $(ts)"

# --- 3. test tools: vsce + playwright-core -------------------------------------------------------
TOOLS=$E2E/tools
if [ ! -x "$TOOLS/node_modules/.bin/vsce" ] || [ ! -d "$TOOLS/node_modules/playwright-core" ]; then
  mkdir -p "$TOOLS"; echo '{"private":true}' > "$TOOLS/package.json"
  (cd "$TOOLS" && timeout 600 npm install --no-save "@vscode/vsce@$VSCE_VERSION" "playwright-core@$PW_VERSION" \
      > install.log 2>&1) || { tail -50 "$TOOLS/install.log"; exit 1; }
fi
# the run's own copy of the test and of the modules beside it that it imports (another run may test
# another one): ESM resolves playwright-core from the script's folder
cp "$HERE"/test/e2e/*.mjs "$RUN/"
cp "${E2E_SCRIPT:-$HERE/test/e2e/e2e.mjs}" "$RUN/e2e.mjs"
ln -s "$TOOLS/node_modules" "$RUN/node_modules"
echo "[e2e] tools ready $(ts)"

# --- 4. package the extension, install it into a fresh profile ----------------------------------
mkdir -p "$RUN/ud/User" "$RUN/exts" "$RUN/ws"
VSCE="$TOOLS/node_modules/.bin/vsce" bash "$HERE/scripts/package.sh" "$RUN/pi-session.vsix" >/dev/null
COMMON=(--config "$RUN/config.yaml" --user-data-dir "$RUN/ud" --extensions-dir "$RUN/exts")
timeout 120 "$CS" "${COMMON[@]}" --install-extension "$RUN/pi-session.vsix" >/dev/null
for f in broken-session ordinary glued-session hostile-session orphan-session bom-session header-second utf16-session; do
  cp "$FIXTURES/$f.jsonl" "$RUN/ws/"
done
# a session the test opens only after it killed the server (step 15), from Quick Open's index
mkdir -p "$RUN/ws/later" && cp "$FIXTURES/broken-session.jsonl" "$RUN/ws/later/opened-after-restart.jsonl"
# a session without a header outside pi's folder: known by its first lines (not line 1 alone)
mkdir -p "$RUN/ws/elsewhere" && cp "$FIXTURES/headerless-session.jsonl" "$RUN/ws/elsewhere/no-header.jsonl"
# a 100 MB session (VS Code hands no file over 50 MB to extensions): made once per generator version
BIG=$E2E/big-session-100mb-$(sha1sum "$REPO/bench/gen_session.py" | cut -c1-12).jsonl
if [ ! -s "$BIG" ]; then
  echo "[e2e] generating a 100 MB session with bench/gen_session.py"
  "$PY" "$REPO/bench/gen_session.py" "$BIG.tmp" --size-mb 100 --seed 7 && mv "$BIG.tmp" "$BIG"
fi
flock -u 9; exec 9>&-
mkdir -p "$RUN/ws/big" && cp --reflink=auto "$BIG" "$RUN/ws/big/big-session.jsonl"
# a session whose second line holds a carriage return inside its entry (a lone CR: white space to
# pi, a line break to VS Code): its editor opens read-only (step 11b)
printf '%s\n%s\r%s\n%s\n' \
  '{"type":"session","version":3,"id":"0199e2e0-cccc-7ddd-8eee-0000000000c1","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}' \
  '{"type":"message","id":"c0000001","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z",' \
  '"message":{"role":"user","content":"A line with a carriage return inside","timestamp":1767607201000}}' \
  '{"type":"message","id":"c0000002","parentId":"c0000001","timestamp":"2026-01-05T10:00:02.000Z","message":{"role":"user","content":"After it","timestamp":1767607202000}}' \
  > "$RUN/ws/lone-cr-session.jsonl"
# a file in pi's session folder whose first line is no header: the path alone makes it a Pi Session
mkdir -p "$RUN/ws/.pi/agent/sessions/--work-demo--"
echo '{"type":"message","id":"x1","parentId":null,"timestamp":"2026-01-05T10:00:00.000Z"}' \
  > "$RUN/ws/.pi/agent/sessions/--work-demo--/headerless-session.jsonl"
# the Python of "piSession.server.pythonPath": the server as the extension starts it through that
# setting (`-m pi_session_server serve`), its log kept at DEBUG, and each such start noted for the
# test; anything else (the extension's import probe, `check`) goes to $PY as it is
cat > "$RUN/python" <<SH
#!/bin/sh
if [ "\$1 \$2 \$3" = "-m pi_session_server serve" ]; then
  shift 3
  echo "-m pi_session_server serve \$*" >> "$RUN/python-path-starts"
  echo \$\$ > "$RUN/server-pid"
  exec "$PY" -m pi_session_server serve --log-file "$RUN/server.log" --log-level DEBUG "\$@"
fi
exec "$PY" "\$@"
SH
chmod +x "$RUN/python"
# code-server's own default auto save is kept (VS Code in a browser saves a second after each
# edit): the extension turns it off for Pi Session documents, which step 6b checks, as a save of
# the test's typing on its way while pi appends (step 8) would write the editor's text over pi's line
cat > "$RUN/ud/User/settings.json" <<JSON
{ "piSession.server.pythonPath": "$RUN/python", "piSession.trace.server": "messages",
  "security.workspace.trust.enabled": false, "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false, "update.mode": "none", "workbench.tips.enabled": false,
  "chat.disableAIFeatures": true, "workbench.secondarySideBar.defaultVisibility": "hidden",
  "editor.minimap.enabled": false, "window.commandCenter": false, "editor.hover.delay": 200 }
JSON
# pi's session directory for "Check All Sessions" (PI_CODING_AGENT_DIR below): one broken session
mkdir -p "$RUN/agent/sessions/--work-other--"
cp "$FIXTURES/broken-session.jsonl" "$RUN/agent/sessions/--work-other--/other-broken-session.jsonl"
# two sessions pi keeps for the workspace folder, for "Open Session...": one of January, and a
# named one whose messages are of now (the newest); in the folder pi's own code names
WS_SESSIONS=$("$PY" -c 'import sys; from pi_session_server.session.paths import default_session_dir_path as d; print(d(sys.argv[1], sys.argv[2]))' "$RUN/ws" "$RUN/agent")
mkdir -p "$WS_SESSIONS"
"$PY" - "$WS_SESSIONS" "$RUN/ws" <<'PYTHON'
import json, sys, time
directory, cwd = sys.argv[1], sys.argv[2]
def iso(ms): return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
def write(name, session_id, start_ms, question, title=None):
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": iso(start_ms), "cwd": cwd},
             {"type": "message", "id": "p0000001", "parentId": None, "timestamp": iso(start_ms + 1000),
              "message": {"role": "user", "content": question, "timestamp": start_ms + 1000}},
             {"type": "message", "id": "p0000002", "parentId": "p0000001", "timestamp": iso(start_ms + 2000),
              "message": {"role": "assistant", "content": [{"type": "text", "text": f"The answer to: {question}"}],
                          "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                          "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                          "stopReason": "stop", "timestamp": start_ms + 2000}}]
    if title:
        lines.append({"type": "session_info", "id": "p0000003", "parentId": "p0000002", "timestamp": iso(start_ms + 3000), "name": title})
    with open(f"{directory}/{name}", "w") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
write("2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl", "0199e2e0-aaaa-7bbb-8ccc-0000000000a1",
      1767603600000, "An older question for the picker")
now = int(time.time() * 1000) - 60_000
write(iso(now).replace(":", "-").replace(".", "-") + "_0199e2e0-aaaa-7bbb-8ccc-0000000000a2.jsonl",
      "0199e2e0-aaaa-7bbb-8ccc-0000000000a2", now, "A newer question for the picker", "Picker named session")
PYTHON
echo "[e2e] extension packaged and installed $(ts)"

# --- 5. code-server on loopback (own process group), the browser test, then stop it --------------
# HOME is the run's folder: the agent folder is under it, as ~/.pi/agent is for a user (the picker
# shows ~/...), and nothing is written in the real one
export XDG_CONFIG_HOME=$RUN/xdg/config XDG_DATA_HOME=$RUN/xdg/data XDG_CACHE_HOME=$RUN/xdg/cache
HOME=$RUN PI_CODING_AGENT_DIR=$RUN/agent setsid "$CS" "${COMMON[@]}" --bind-addr "127.0.0.1:$PORT" --auth none --disable-telemetry \
  --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  --ignore-last-opened "$RUN/ws" > "$RUN/code-server.log" 2>&1 &
CS_PID=$!
# up when it answers (a loaded machine takes longer to start it)
up=
for _ in $(seq 180); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && { up=1; break; }; sleep 1; done
[ -n "$up" ] || { echo "[e2e] code-server did not answer on port $PORT within 180 s"; exit 1; }
rc=0
CS_URL="http://127.0.0.1:$PORT" WS_FOLDER="$RUN/ws" OUT_DIR="$OUT" CHROME_PROFILE="$RUN/chrome" \
  PYTHON_PATH_STARTS="$RUN/python-path-starts" SERVER_PID_FILE="$RUN/server-pid" VSCODE_LOGS="$RUN/ud/logs" \
  timeout 1200 node "$RUN/e2e.mjs" || rc=$?
echo "[e2e] total $(ts) rc=$rc; screenshots: $(ls "$OUT"/*.png 2>/dev/null | tr '\n' ' ')"
exit $rc
