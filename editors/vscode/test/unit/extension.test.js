// Activation and command wiring of the extension, against stubs of `vscode` and the language client.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadExtension, fakeContext, makeDocument, Uri } = require('./stubs');

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
const HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}';
const SESSION_URI = 'file:///w/sessions/a.jsonl';

// A tree as pi/getTree (flat) returns it: a root chain that branches at u2.
const TREE = {
  leafId: 'a3',
  nodes: [
    { id: 'u1', parentId: null, type: 'message', role: 'user', preview: 'user: hello', line: 1, depth: 0, isLeaf: false, onLeafPath: true, isBranchPoint: false },
    { id: 'a1', parentId: 'u1', type: 'message', role: 'assistant', preview: 'assistant: hi', line: 2, depth: 1, isLeaf: false, onLeafPath: true, isBranchPoint: true },
    { id: 'u2', parentId: 'a1', type: 'message', role: 'user', preview: 'user: try A', line: 3, depth: 2, isLeaf: false, onLeafPath: false, isBranchPoint: false, label: 'first' },
    { id: 'a2', parentId: 'u2', type: 'message', role: 'assistant', preview: 'assistant: A done', line: 4, depth: 3, isLeaf: false, onLeafPath: false, isBranchPoint: false },
    { id: 'u3', parentId: 'a1', type: 'message', role: 'user', preview: 'user: try B', line: 5, depth: 2, isLeaf: false, onLeafPath: true, isBranchPoint: false },
    { id: 'a3', parentId: 'u3', type: 'message', role: 'assistant', preview: 'assistant: B done', line: 6, depth: 3, isLeaf: true, onLeafPath: true, isBranchPoint: false },
  ],
};

const CONTEXT = {
  messages: [
    { role: 'user', content: 'hello', timestamp: 1 },
    { role: 'assistant', content: [{ type: 'text', text: 'hi there' }, { type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'x' } }], model: 'm1', timestamp: 2 },
  ],
  thinkingLevel: 'off',
  model: { provider: 'anthropic', modelId: 'm1' },
};

const flush = () => new Promise((resolve) => setTimeout(resolve, 5));

/** A session document is open (the server starts with the first one). */
function openSession(state) {
  state.documents.push(makeDocument(Uri.parse(SESSION_URI), `${HEADER}\n`, 'pi-session'));
}

/** pi/getEntryAtLine as the server answers it from a tree: the node's envelope, or null. */
function entryAtLineOf(tree, requests = []) {
  return (params) => {
    requests.push(params);
    const node = tree.nodes.find((n) => n.line === params.line);
    if (!node) return null;
    const { id, parentId, type, role, label, line, isLeaf } = node;
    return { id, parentId, type, role, label, line, isLeaf };
  };
}

/** Activate with a session document in the active editor and a server that answers from TREE/CONTEXT. */
async function activated(options = {}) {
  const loaded = loadExtension();
  const { state } = loaded;
  state.config['piSession.server.command'] = options.command ?? ['/opt/pi/bin/pi-session'];
  Object.assign(state.config, options.config ?? {});
  const doc = makeDocument(Uri.parse(SESSION_URI), `${HEADER}\n{"type":"message"}\n`, 'pi-session');
  state.documents.push(doc);
  state.activeTextEditor = { document: doc, selection: { active: { line: options.cursorLine ?? 0, character: 0 } } };
  state.responder = (method, params) => {
    if (method === 'pi/getTree') return options.getTree ? options.getTree(params) : TREE;
    if (method === 'pi/getEntryAtLine') return (options.getEntryAtLine ?? entryAtLineOf(TREE))(params);
    if (method === 'pi/buildSessionContext') return CONTEXT;
    if (method === 'pi/getInfo') return options.getInfo ? options.getInfo(params) : { skippedLines: 0 };
    if (method === 'pi/branch') return { leafId: params.entryId };
    if (method === 'pi/append') return { id: 'new1' };
    return null;
  };
  const context = fakeContext();
  const api = loaded.ext.activate(context);
  await api.ready;
  await flush();
  return { ...loaded, api, context, doc, client: state.clients[0] };
}

test('every command in package.json is registered, and only those', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  const declared = manifest.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...state.commands.keys()].sort(), declared);
});

test('menus and keybindings only name declared commands', () => {
  const declared = new Set(manifest.contributes.commands.map((c) => c.command));
  for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
    for (const item of items) assert.ok(declared.has(item.command), `${menu}: ${item.command}`);
  }
});

test('the server starts from the command setting with "serve" appended, for pi-session documents', async (t) => {
  const { client, state, restore } = await activated({ command: ['/usr/bin/python3', '-m', 'pi_session_server'] });
  t.after(restore);
  assert.equal(state.clients.length, 1);
  assert.equal(client.serverOptions.command, '/usr/bin/python3');
  assert.deepEqual(client.serverOptions.args, ['-m', 'pi_session_server', 'serve']);
  assert.equal(client.id, 'piSession'); // the trace setting piSession.trace.server follows from this id
  assert.deepEqual(client.clientOptions.documentSelector.map((s) => s.language), ['pi-session', 'pi-session']);
  assert.ok(manifest.contributes.configuration.properties['piSession.trace.server']);
});

test('no server anywhere: a clear error with the fix, and no client', async (t) => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'nopath-'));
  const savedPath = process.env.PATH;
  process.env.PATH = empty;
  t.after(() => { process.env.PATH = savedPath; });
  const { state, restore } = await activated({ command: [] });
  t.after(restore);
  assert.equal(state.clients.length, 0);
  assert.equal(state.messages.error.length, 1);
  assert.match(state.messages.error[0], /pip install pi-session-server/);
  assert.match(state.messages.error[0], /piSession\.server\.pythonPath/);
});

test('a start failure is reported with the command that was tried', async (t) => {
  const loaded = loadExtension();
  t.after(loaded.restore);
  loaded.state.config['piSession.server.command'] = ['/nowhere/pi-session'];
  loaded.state.startError = new Error('spawn /nowhere/pi-session ENOENT');
  openSession(loaded.state);
  await loaded.ext.activate(fakeContext()).ready;
  assert.match(loaded.state.messages.error[0], /did not start .*ENOENT.*\/nowhere\/pi-session serve/);
});

test('the tree view loads pi/getTree (flat, default filter) for the active session and nests branches', async (t) => {
  const { client, state, api, restore } = await activated();
  t.after(restore);
  const request = client.requests.find((r) => r.method === 'pi/getTree');
  assert.deepEqual(request.params, { uri: SESSION_URI, filter: 'default', form: 'flat', activeBranchFirst: true, offset: 0, limit: 50000 });
  assert.equal(state.treeViews[0].id, 'piSession.tree');
  const roots = api.tree.getChildren();
  assert.deepEqual(roots.map((r) => r.node.id), ['u1', 'a1']);
  assert.deepEqual(api.tree.getChildren(roots[1]).map((r) => r.node.id), ['u2', 'u3']);
  const branchItem = api.tree.getTreeItem(roots[1]);
  assert.match(branchItem.description, /2 branches/);
  assert.equal(branchItem.iconPath.id, 'git-branch');
  const labeled = api.tree.getTreeItem(api.tree.getChildren(roots[1])[0]);
  assert.equal(labeled.label, '[first] user: try A');
  const leafRow = api.tree.getChildren(api.tree.getChildren(roots[1])[1])[0];
  assert.equal(api.tree.getParent(leafRow).node.id, 'u3');
  const leaf = api.tree.getTreeItem(leafRow);
  assert.match(leaf.description, /leaf/);
  assert.deepEqual(leaf.command.arguments, [SESSION_URI, 6]);
  assert.match(state.treeViews[0].description, /a\.jsonl · default/);
});

/**
 * pi/getTree as the server pages it: at most `max` nodes per reply; without `limit` a result bigger
 * than `max` is refused with -32011 TooLarge; with `offset`/`limit` the reply adds total/hasMore/nextOffset.
 */
function pagingServer(all, max, requests = []) {
  return (params) => {
    requests.push(params);
    const total = all.nodes.length;
    if (params.limit === undefined && params.offset === undefined) {
      if (total > max) {
        throw Object.assign(new Error(`The tree has ${total} nodes, more than the ${max} one reply may hold`), { code: -32011, data: { total, max } });
      }
      return all;
    }
    const offset = params.offset ?? 0;
    const size = Math.min(params.limit ?? max, max);
    const nodes = all.nodes.slice(offset, offset + size);
    const following = offset + nodes.length;
    const reply = { leafId: all.leafId, nodes, total, hasMore: following < total };
    if (following < total) reply.nextOffset = following;
    return reply;
  };
}

test('the tree view joins pages: a server answering two nodes per reply gives the same tree', async (t) => {
  const requests = [];
  const { api, state, restore } = await activated({ getTree: pagingServer(TREE, 2, requests) });
  t.after(restore);
  assert.deepEqual(requests.map((p) => [p.offset, p.limit]), [[0, 50000], [2, 50000], [4, 50000]]);
  assert.ok(requests.every((p) => p.filter === 'default' && p.form === 'flat' && p.activeBranchFirst === true));
  assert.deepEqual(api.tree.nodes.map((n) => n.id), TREE.nodes.map((n) => n.id));
  const roots = api.tree.getChildren();
  assert.deepEqual(roots.map((r) => r.node.id), ['u1', 'a1']);
  assert.deepEqual(api.tree.getChildren(roots[1]).map((r) => r.node.id), ['u2', 'u3']);
  assert.match(api.tree.getTreeItem(roots[1]).description, /2 branches/);
  const leafRow = api.tree.getChildren(api.tree.getChildren(roots[1])[1])[0];
  assert.match(api.tree.getTreeItem(leafRow).description, /◀ leaf/);
  assert.equal(state.treeViews[0].message, undefined);
});

test('the tree view says when pi skips lines of the file (pi/getInfo), and not when a server cannot tell', async (t) => {
  const asked = [];
  const skipped = { skippedLines: 1, skipped: [{ line: 7, column: 3, kind: 'malformed', message: 'invalid JSON: Unterminated string' }] };
  const { state, restore } = await activated({ getInfo: (params) => (asked.push(params.uri), skipped) });
  t.after(restore);
  assert.deepEqual(asked, [SESSION_URI]);
  assert.match(state.treeViews[0].message, /^pi skips 1 line of this file, so the tree lacks what it holds: line 8 \(invalid JSON/);
  const older = await activated({
    getInfo: () => {
      throw Object.assign(new Error('Unhandled method pi/getInfo'), { code: -32601 });
    },
  });
  t.after(older.restore);
  assert.equal(older.state.treeViews[0].message, undefined);
  assert.ok(older.api.tree.nodes.length > 0, 'the tree is shown all the same');
});

test('a tree too big for one reply (TooLarge without limit) loads in pages, and entry commands find entries in later pages', async (t) => {
  // 120,001 entries: a user/assistant chain whose last entry is the leaf; the server caps replies at 50,000
  const count = 120001;
  const nodes = [];
  for (let i = 0; i < count; i++) {
    nodes.push({
      id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, type: 'message', role: i % 2 ? 'assistant' : 'user',
      preview: `m${i}`, line: i + 1, depth: i, isLeaf: i === count - 1, onLeafPath: true, isBranchPoint: false,
    });
  }
  const big = { leafId: `e${count - 1}`, nodes };
  const serve = pagingServer(big, 50000);
  assert.throws(() => serve({ filter: 'default', form: 'flat' }), (e) => e.code === -32011 && e.data.total === count);
  const requests = [];
  const lineRequests = [];
  const { api, client, state, restore } = await activated({
    cursorLine: 100001,
    getTree: pagingServer(big, 50000, requests),
    getEntryAtLine: entryAtLineOf(big, lineRequests),
  });
  t.after(restore);
  assert.deepEqual(requests.map((p) => p.offset), [0, 50000, 100000]);
  assert.equal(api.tree.nodes.length, count);
  assert.equal(state.treeViews[0].message, undefined, 'no error in the view');
  const roots = api.tree.getChildren();
  assert.equal(roots.length, count); // one chain stays flat
  assert.match(api.tree.getTreeItem(roots[count - 1]).description, /◀ leaf/);
  // Show Context at the cursor (line 100001 = entry e100000): asked for by line, not from the tree
  await state.commands.get('piSession.showContext')();
  assert.equal(requests.length, 3, 'no tree pages for the entry on the cursor line');
  assert.deepEqual(lineRequests, [{ uri: SESSION_URI, line: 100001 }]);
  assert.deepEqual(client.requests.find((r) => r.method === 'pi/buildSessionContext').params, { uri: SESSION_URI, leafId: 'e100000' });
  assert.deepEqual(state.messages.error, []);
});

test('a server without pi/getEntryAtLine: the entry on the cursor line comes from the tree, in pages', async (t) => {
  const requests = [];
  const methodNotFound = () => {
    throw Object.assign(new Error('Unhandled method pi/getEntryAtLine'), { code: -32601 });
  };
  const { client, state, restore } = await activated({
    cursorLine: 4,
    getTree: pagingServer(TREE, 2, requests),
    getEntryAtLine: methodNotFound,
  });
  t.after(restore);
  const before = requests.length;
  state.inputBoxAnswer = 'found';
  await state.commands.get('piSession.labelEntry')();
  // the entry's pages (no previews, no filter), then the tree view's refresh after the label
  assert.deepEqual(requests.slice(before, before + 3).map((p) => [p.offset, p.previews, p.filter]), [[0, false, undefined], [2, false, undefined], [4, false, undefined]]);
  assert.deepEqual(client.requests.find((r) => r.method === 'pi/append').params, { uri: SESSION_URI, kind: 'label', targetId: 'a2', label: 'found' });
  assert.deepEqual(state.messages.error, []);
});

test('an error of pi/getEntryAtLine other than an unknown method is shown, not hidden by the tree', async (t) => {
  const failing = () => {
    throw Object.assign(new Error('Session file is not a valid pi session: /w/sessions/a.jsonl'), { code: -32003 });
  };
  const { client, state, restore } = await activated({ cursorLine: 4, getEntryAtLine: failing });
  t.after(restore);
  const before = client.requests.filter((r) => r.method === 'pi/getTree').length;
  await state.commands.get('piSession.branchHere')();
  assert.equal(client.requests.filter((r) => r.method === 'pi/getTree').length, before);
  assert.equal(client.requests.filter((r) => r.method === 'pi/branch').length, 0);
  assert.match(state.messages.error.join(' '), /not a valid pi session/);
});

test('the filter picker re-requests the tree with the chosen mode', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  state.quickPickAnswer = 'user-only';
  await state.commands.get('piSession.tree.filter')();
  const last = client.requests.filter((r) => r.method === 'pi/getTree').pop();
  assert.equal(last.params.filter, 'user-only');
});

test('pi/didChange for the shown session refreshes the tree; for another file it does not', async (t) => {
  const { client, restore } = await activated();
  t.after(restore);
  const count = () => client.requests.filter((r) => r.method === 'pi/getTree').length;
  const before = count();
  client.notify('pi/didChange', { uri: 'file:///elsewhere/b.jsonl', kind: 'appended', newEntryIds: ['x'] });
  await flush();
  assert.equal(count(), before);
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'appended', newEntryIds: ['x'], leafId: 'x' });
  await flush();
  assert.equal(count(), before + 1);
});

test('Show Context at the cursor asks for that entry and opens a read-only Markdown document', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 2 });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  const request = client.requests.find((r) => r.method === 'pi/buildSessionContext');
  assert.deepEqual(request.params, { uri: SESSION_URI, leafId: 'a1' });
  const shown = state.shownDocuments.pop();
  assert.equal(shown.document.uri.scheme, 'pi-session-context');
  assert.match(shown.document.uri.path, /\.md$/);
  const text = shown.document.getText();
  assert.match(text, /# Context of a\.jsonl at entry a1/);
  assert.match(text, /## 2\. assistant \(m1\)/);
  assert.match(text, /tool call\*\* `read`/);
});

test('Show Context on the header line, and Show Context at Leaf, ask for the leaf (no leafId)', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 0 });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  await state.commands.get('piSession.showLeafContext')();
  const requests = client.requests.filter((r) => r.method === 'pi/buildSessionContext');
  assert.deepEqual(requests.map((r) => r.params), [{ uri: SESSION_URI }, { uri: SESSION_URI }]);
});

test('Show Context in JSON format shows the raw result', async (t) => {
  const { state, restore } = await activated({ config: { 'piSession.context.format': 'json' } });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  const shown = state.shownDocuments.pop();
  assert.match(shown.document.uri.path, /\.json$/);
  assert.deepEqual(JSON.parse(shown.document.getText()), CONTEXT);
});

test('Branch Here from a tree row sends pi/branch with its id and refreshes the tree', async (t) => {
  const { client, state, api, restore } = await activated();
  t.after(restore);
  const row = api.tree.getChildren(api.tree.getChildren()[1])[0]; // u2
  const before = client.requests.filter((r) => r.method === 'pi/getTree').length;
  await state.commands.get('piSession.branchHere')(row, [row]);
  assert.deepEqual(client.requests.find((r) => r.method === 'pi/branch').params, { uri: SESSION_URI, entryId: 'u2' });
  assert.equal(client.requests.filter((r) => r.method === 'pi/getTree').length, before + 1);
});

test('Branch Here on the header line is an error, and nothing is sent', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 0 });
  t.after(restore);
  await state.commands.get('piSession.branchHere')();
  assert.equal(client.requests.filter((r) => r.method === 'pi/branch').length, 0);
  assert.match(state.messages.error[0], /cursor on an entry line/);
});

test('Label Entry appends a label; an empty answer clears it (no label key); cancel sends nothing', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 4 });
  t.after(restore);
  state.inputBoxAnswer = ' keep ';
  await state.commands.get('piSession.labelEntry')();
  state.inputBoxAnswer = '';
  await state.commands.get('piSession.labelEntry')();
  state.inputBoxAnswer = undefined;
  await state.commands.get('piSession.labelEntry')();
  const appends = client.requests.filter((r) => r.method === 'pi/append').map((r) => r.params);
  assert.deepEqual(appends, [
    { uri: SESSION_URI, kind: 'label', targetId: 'a2', label: 'keep' },
    { uri: SESSION_URI, kind: 'label', targetId: 'a2' },
  ]);
});

test('Reveal Entry puts the cursor on the entry line', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  await state.commands.get('piSession.revealEntry')(SESSION_URI, 4);
  const shown = state.shownDocuments.pop();
  assert.equal(shown.document.uri.toString(), SESSION_URI);
});

test('Restart Server stops the client and starts a new one', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  await state.commands.get('piSession.restartServer')();
  assert.equal(state.clients.length, 2);
  assert.equal(state.clients[0].isRunning(), false);
  assert.equal(state.clients[1].isRunning(), true);
});

test('Check All Sessions runs "<cli> check --json" and fills the Problems panel', async (t) => {
  const fake = path.join(os.tmpdir(), `fake-pi-session-${process.pid}.js`);
  fs.writeFileSync(fake, `
    const args = process.argv.slice(2);
    if (args.join(' ') !== 'check --json') { console.error('bad args ' + args); process.exit(2); }
    console.log(JSON.stringify({ files: [
      { path: '/s/broken.jsonl', summary: { error: 1 }, diagnostics: [{ line: 4, column: 1, endColumn: 10, severity: 'error', code: 'PI001', message: 'malformed JSON line' }] },
      { path: '/s/fine.jsonl', summary: { error: 0 }, diagnostics: [] },
    ], totals: { files: 2 } }));
    process.exit(1);`);
  t.after(() => fs.rmSync(fake, { force: true }));
  const { state, restore } = await activated({ command: [process.execPath, fake] });
  t.after(restore);
  const problems = await state.commands.get('piSession.checkAllSessions')();
  assert.equal(problems, 1);
  const collection = state.diagnostics.get('pi-session-check');
  const diagnostics = collection.get('file:///s/broken.jsonl');
  assert.equal(diagnostics[0].message, 'malformed JSON line');
  assert.equal(diagnostics[0].severity, 0); // vscode.DiagnosticSeverity.Error
  assert.equal(diagnostics[0].range.start.line, 3);
  assert.ok(state.executed.some(([id]) => id === 'workbench.actions.view.problems'));
});

test('a .jsonl whose first line is a session header becomes pi-session; other .jsonl files stay jsonl', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  const session = makeDocument(Uri.parse('file:///w/elsewhere/s.jsonl'), `${HEADER}\n`, 'jsonl');
  const plain = makeDocument(Uri.parse('file:///w/data.jsonl'), '{"type":"event","id":"x"}\n', 'jsonl');
  const notHeader = makeDocument(Uri.parse('file:///w/other.jsonl'), '{"type":"session"}\n', 'jsonl'); // no string id
  for (const d of [session, plain, notHeader]) state.emitters.open.fire(d);
  await flush();
  assert.deepEqual(state.languageChanges, [{ uri: 'file:///w/elsewhere/s.jsonl', languageId: 'pi-session' }]);
  assert.equal(plain.languageId, 'jsonl');
});

test('a session file the user switched back to jsonl is left alone', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  const doc = makeDocument(Uri.parse('file:///w/s2.jsonl'), `${HEADER}\n`, 'pi-session');
  // what VS Code does when the user picks another language: close (old language), open (new)
  state.emitters.close.fire({ ...doc });
  doc.languageId = 'jsonl';
  state.emitters.open.fire(doc);
  await flush();
  assert.deepEqual(state.languageChanges, []);
});

test('detection can be turned off', async (t) => {
  const { state, restore } = await activated({ config: { 'piSession.detectByFirstLine': false } });
  t.after(restore);
  state.emitters.open.fire(makeDocument(Uri.parse('file:///w/x.jsonl'), `${HEADER}\n`, 'jsonl'));
  await flush();
  assert.deepEqual(state.languageChanges, []);
});

test('deactivate stops the server', async (t) => {
  const { ext, client, restore } = await activated();
  t.after(restore);
  await ext.deactivate();
  assert.equal(client.isRunning(), false);
});

test('pushed diagnostics for an open document are dropped when the server answers pulls (no duplicates)', async (t) => {
  const { client, doc, restore } = await activated();
  t.after(restore);
  const handle = client.clientOptions.middleware.handleDiagnostics;
  const forwarded = [];
  const next = (uri, diagnostics) => forwarded.push([uri.toString(), diagnostics.length]);
  client.initializeResult = { capabilities: {} };
  handle(doc.uri, [{}], next);
  client.initializeResult = { capabilities: { diagnosticProvider: { interFileDependencies: false } } };
  handle(doc.uri, [{}], next);
  handle(Uri.parse('file:///not/open.jsonl'), [{}, {}], next);
  assert.deepEqual(forwarded, [[SESSION_URI, 1], ['file:///not/open.jsonl', 2]]);
});

test('the tree follows the active editor when first-line detection turns it into a session', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  const doc = makeDocument(Uri.parse('file:///w/late.jsonl'), `${HEADER}\n`, 'jsonl');
  state.activeTextEditor = { document: doc, selection: { active: { line: 0, character: 0 } } };
  state.emitters.active.fire(state.activeTextEditor); // still jsonl: the tree stays where it was
  state.emitters.open.fire(doc); // detection switches the language (close + open)
  await flush();
  const last = client.requests.filter((r) => r.method === 'pi/getTree').pop();
  assert.equal(last.params.uri, 'file:///w/late.jsonl');
});

/** A stand-in interpreter that "has" pi_session_server: exits 0 for `-c "import pi_session_server"`. */
function fakePython(t, works = true) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'py-')), 'python');
  fs.writeFileSync(file, `#!/bin/sh\nexit ${works ? 0 : 1}\n`, { mode: 0o755 });
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  return file;
}

test("the Python extension's active interpreter is used when it has the server (environments API)", async (t) => {
  const python = fakePython(t);
  const loaded = loadExtension();
  t.after(loaded.restore);
  loaded.state.extensions['ms-python.python'] = {
    isActive: true,
    exports: {
      environments: {
        getActiveEnvironmentPath: () => ({ id: 'x', path: '/env' }),
        resolveEnvironment: async () => ({ executable: { uri: { fsPath: python } } }),
      },
    },
  };
  openSession(loaded.state);
  await loaded.ext.activate(fakeContext()).ready;
  assert.equal(loaded.state.clients[0].serverOptions.command, python);
  assert.deepEqual(loaded.state.clients[0].serverOptions.args, ['-m', 'pi_session_server', 'serve']);
});

test("the Python extension's older API (getExecutionDetails) works too; an interpreter without the server is skipped", async (t) => {
  const good = fakePython(t);
  const loaded = loadExtension();
  t.after(loaded.restore);
  let activated = false;
  loaded.state.extensions['ms-python.python'] = {
    isActive: false,
    activate: async () => {
      activated = true;
      return { settings: { getExecutionDetails: () => ({ execCommand: [good] }) } };
    },
  };
  openSession(loaded.state);
  await loaded.ext.activate(fakeContext()).ready;
  assert.ok(activated);
  assert.equal(loaded.state.clients[0].serverOptions.command, good);

  const bad = fakePython(t, false);
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'nopath-'));
  const savedPath = process.env.PATH;
  process.env.PATH = empty;
  t.after(() => { process.env.PATH = savedPath; });
  const again = loadExtension();
  t.after(again.restore);
  again.state.extensions['ms-python.python'] = { isActive: true, exports: { settings: { getExecutionDetails: () => ({ execCommand: [bad] }) } } };
  openSession(again.state);
  await again.ext.activate(fakeContext()).ready;
  assert.equal(again.state.clients.length, 0);
  assert.match(again.state.messages.error[0], /not found/);
  assert.ok(again.state.output.some((line) => line.includes(`${bad} has no pi_session_server`)));
});

test('a context document at the leaf is rebuilt when the session changes; one at an entry is not', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 2 });
  t.after(restore);
  await state.commands.get('piSession.showLeafContext')();
  await state.commands.get('piSession.showContext')(); // at a1
  const [leafDoc, entryDoc] = state.shownDocuments.map((s) => s.document.uri.toString());
  const provider = state.contentProviders.get('pi-session-context');
  const fired = [];
  provider.onDidChange((uri) => fired.push(uri.toString()));
  client.notify('pi/didChange', { uri: SESSION_URI, kind: 'appended', newEntryIds: ['z'], leafId: 'z' });
  await flush();
  assert.deepEqual(fired, [leafDoc]);
  assert.notEqual(leafDoc, entryDoc);
});

test('an ordinary .jsonl activates the extension but does not start the server; a session document does', async (t) => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'nopath-'));
  const savedPath = process.env.PATH;
  process.env.PATH = empty; // and no server anywhere: still no error for an ordinary file
  t.after(() => { process.env.PATH = savedPath; });
  const loaded = loadExtension();
  t.after(loaded.restore);
  loaded.state.documents.push(makeDocument(Uri.parse('file:///w/data.jsonl'), '{"a":1}\n', 'jsonl'));
  await loaded.ext.activate(fakeContext()).ready;
  await flush();
  assert.equal(loaded.state.messages.error.length, 0);
  assert.equal(loaded.state.clients.length, 0);
  loaded.state.config['piSession.server.command'] = ['/opt/pi/bin/pi-session'];
  loaded.state.emitters.open.fire(makeDocument(Uri.parse('file:///w/s.jsonl'), `${HEADER}\n`, 'pi-session'));
  await flush();
  assert.equal(loaded.state.clients.length, 1);
});
