// A front end that is not Python: spawns `python -m pi_session_server serve` and talks JSON-RPC to
// it with vscode-jsonrpc (the library VS Code itself uses), as a TypeScript UI would.
//
//   cd tests/node_client && npm ci && node --test test.mjs
//
// The interpreter is $PI_SESSION_PYTHON, else the repository's .venv, else python3.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");
const EXAMPLE = path.join(ROOT, "pi_session_server", "examples", "example-session.jsonl");

function python() {
  if (process.env.PI_SESSION_PYTHON) return process.env.PI_SESSION_PYTHON;
  const venv = path.join(ROOT, ".venv", "bin", "python");
  return fs.existsSync(venv) ? venv : "python3";
}

let server;
let connection;
let work;
const changes = [];

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "pi-node-client-"));
  server = spawn(python(), ["-m", "pi_session_server", "serve"], {
    cwd: work,
    env: { ...process.env, PYTHONPATH: ROOT, HOME: work, PI_CODING_AGENT_DIR: path.join(work, "agent") },
    stdio: ["pipe", "pipe", "inherit"],
  });
  connection = createMessageConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  connection.onNotification("pi/didChange", (params) => changes.push(params));
  connection.listen();
  // LSP initialize is optional for pi/* clients; an editor would send it, so we do too
  const init = await connection.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {} });
  assert.equal(init.serverInfo.name, "pi-session-server");
  await connection.sendNotification("initialized", {});
});

after(async () => {
  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  await new Promise((resolve) => server.once("exit", resolve));
  connection.dispose();
  fs.rmSync(work, { recursive: true, force: true });
});

function copyExample(name) {
  const file = path.join(work, name);
  fs.copyFileSync(EXAMPLE, file);
  return file;
}

test("pi/open, pi/getTree and pi/buildSessionContext on the example session", async () => {
  const file = copyExample("open.jsonl");
  const info = await connection.sendRequest("pi/open", { path: file });
  assert.equal(info.sessionName, "Fix forecast parsing, add caching");
  assert.equal(info.entryCount, 36);
  assert.equal(info.uri, pathToFileURL(file).href);

  const tree = await connection.sendRequest("pi/getTree", { session: info.session, filter: "default" });
  assert.equal(tree.leafId, "e2f3a4b5");
  const byId = new Map(tree.nodes.map((n) => [n.id, n]));
  const fixed = byId.get("9d0e1f2a");
  assert.equal(fixed.label, "tests-green");
  assert.equal(fixed.isBranchPoint, true);
  assert.deepEqual(fixed.childIds, ["e4f5a6b7", "d9e0f1a2"]); // label and title entries are hidden
  assert.ok(byId.get("e2f3a4b5").isLeaf);
  assert.equal(byId.get("0a9b8c7d").preview, "[bash: python -m pytest tests/test_parse.py -q -x]");
  assert.ok(!byId.has("b1c2d3e4"), "labels are settings entries, hidden by pi's default filter");

  const context = await connection.sendRequest("pi/buildSessionContext", { session: info.session });
  assert.deepEqual(context.messages.slice(0, 3).map((m) => m.role), ["system", "compactionSummary", "user"]);
  assert.equal(context.thinkingLevel, "medium");
  assert.deepEqual(context.model, { provider: "anthropic", modelId: "claude-sonnet-4-5" });
});

test("pi/append writes pi's lines and changes what the tree and the context show", async () => {
  const file = copyExample("append.jsonl");
  const { session } = await connection.sendRequest("pi/open", { path: file });
  const user = await connection.sendRequest("pi/append", {
    session,
    kind: "message",
    message: { role: "user", content: "ship it", timestamp: 1773483600000 },
  });
  assert.match(user.id, /^[0-9a-f]{8}$/);
  assert.equal(user.leafId, user.id);
  const label = await connection.sendRequest("pi/append", { session, kind: "label", targetId: user.id, label: "ship" });

  const lines = fs.readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
  const written = lines.at(-2);
  assert.deepEqual(Object.keys(written), ["type", "id", "parentId", "timestamp", "message"]);
  assert.equal(written.parentId, "e2f3a4b5");
  assert.deepEqual(lines.at(-1).targetId, user.id);

  const tree = await connection.sendRequest("pi/getTree", { session, filter: "labeled-only" });
  assert.deepEqual(tree.nodes.map((n) => [n.id, n.label]), [["9d0e1f2a", "tests-green"], ["d5e6f7a8", "lru-approach"], [user.id, "ship"]]);
  assert.equal(tree.leafId, label.id);

  const context = await connection.sendRequest("pi/buildSessionContext", { session });
  assert.deepEqual(context.messages.at(-1), { role: "user", content: "ship it", timestamp: 1773483600000 });
});

test("errors come back with the documented codes and pi's messages", async () => {
  const { session } = await connection.sendRequest("pi/inMemory", { cwd: work });
  await assert.rejects(connection.sendRequest("pi/branch", { session, entryId: "nope" }), (error) => {
    assert.ok(error instanceof ResponseError);
    assert.equal(error.code, -32002);
    assert.equal(error.message, "Entry nope not found");
    return true;
  });
  await assert.rejects(connection.sendRequest("pi/getTree", { session, filter: "sideways" }), (error) => {
    assert.equal(error.code, -32602);
    assert.match(error.message, /\$\.filter/);
    return true;
  });
});

test("a line appended by another process arrives as pi/didChange", async () => {
  const file = copyExample("watched.jsonl");
  const { session } = await connection.sendRequest("pi/open", { path: file });
  const line = { type: "message", id: "0ddba11a", parentId: "e2f3a4b5", timestamp: "2026-03-14T10:00:00.000Z",
    message: { role: "user", content: "from outside", timestamp: 1 } };
  fs.appendFileSync(file, JSON.stringify(line) + "\n");
  const deadline = Date.now() + 10000;
  while (!changes.some((c) => c.session === session) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const change = changes.find((c) => c.session === session);
  assert.deepEqual(change, { session, uri: pathToFileURL(file).href, kind: "appended", newEntryIds: ["0ddba11a"], leafId: "0ddba11a" });
  const tree = await connection.sendRequest("pi/getTree", { session });
  assert.equal(tree.nodes.at(-1).id, "0ddba11a");
});
