// Activation and command wiring of the extension, against stubs of `vscode` and the language client.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadExtension, fakeContext, fakePanel, makeDocument, Uri } = require('./stubs');
const { makeTreeServer, chainEntries } = require('./fakeTree');

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
const HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}';
const SESSION_URI = 'file:///w/sessions/a.jsonl';

// The session behind the stub server: a root chain that branches at a1 (u2 - a2, labelled "first";
// u3 - a3, the leaf). Lines are 1-based positions in the file (the header is line 0).
const ENTRIES = [
  { id: 'u1', parent: null, preview: 'user: hello' },
  { id: 'a1', parent: 'u1', role: 'assistant', preview: 'assistant: hi' },
  { id: 'u2', parent: 'a1', preview: 'user: try A', label: 'first' },
  { id: 'a2', parent: 'u2', role: 'assistant', preview: 'assistant: A done' },
  { id: 'u3', parent: 'a1', preview: 'user: try B' },
  { id: 'a3', parent: 'u3', role: 'assistant', preview: 'assistant: B done' },
];
const TREE = makeTreeServer(ENTRIES, 'a3').getTree({});

const CONTEXT = {
  messages: [
    { role: 'user', content: 'hello', timestamp: 1 },
    { role: 'assistant', content: [{ type: 'text', text: 'hi there' }, { type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'x' } }], model: 'm1', timestamp: 2 },
  ],
  thinkingLevel: 'off',
  model: { provider: 'anthropic', modelId: 'm1' },
};

/** What the server answers with `format: "markdown"` (it renders the context; the client shows it). */
const markdownOf = (params) => `# Context of a.jsonl at ${params.leafId ? `entry ${params.leafId}` : 'the leaf'}\n\n- messages: 2\n`;

const flush = () => new Promise((resolve) => setTimeout(resolve, 5));
/**
 * Resolves once `condition()` holds, checked every few milliseconds (rejects after a few seconds):
 * for what the extension reaches over several timers, which a loaded machine may not have run
 * within one flush.
 */
async function until(condition, what) {
  for (const started = Date.now(); !condition(); await flush()) {
    if (Date.now() - started > 5000) throw new Error(`never happened: ${what}`);
  }
}

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
  Object.assign(state, options.state ?? {});
  const doc = makeDocument(Uri.parse(SESSION_URI), options.text ?? `${HEADER}\n{"type":"message"}\n`, 'pi-session');
  state.documents.push(doc);
  state.activeTextEditor = { document: doc, selection: { active: { line: options.cursorLine ?? 0, character: 0 } } };
  const server = options.server ?? makeTreeServer(ENTRIES, 'a3');
  state.responder = (method, params) => {
    if (method === 'pi/getTree') {
      if (options.getTree) return options.getTree(params);
      return params.levels ? server.getLevels(params) : server.getTree(params);
    }
    if (method === 'pi/getEntryAtLine') return (options.getEntryAtLine ?? entryAtLineOf(TREE))(params);
    if (method === 'pi/buildSessionContext') return params.format === 'markdown' ? { markdown: markdownOf(params) } : CONTEXT;
    if (method === 'pi/getInfo') return options.getInfo ? options.getInfo(params) : { skippedLines: 0, entryCount: ENTRIES.length };
    if (options.other) return options.other(method, params);
    if (method === 'pi/branch') return { leafId: params.entryId };
    if (method === 'pi/append') return { id: 'new1' };
    return null;
  };
  const context = fakeContext();
  const api = loaded.ext.activate(context);
  await api.ready;
  await flush();
  return { ...loaded, api, context, doc, server, client: state.clients[0] };
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
  assert.match(state.messages.error[0], /pip install \/path\/to\/pi-session-server/);
  assert.doesNotMatch(state.messages.error[0], /pip install pi-session-server/);
  assert.match(state.messages.error[0], /piSession\.server\.pythonPath/);
});

/** Activated with a session open and a server command that cannot be started (or `initializeError`:
 * a server that answers initialize with it). */
async function failedStart(t, initializeError) {
  const loaded = loadExtension();
  t.after(loaded.restore);
  loaded.state.config['piSession.server.command'] = ['/nowhere/pi-session'];
  if (initializeError) loaded.state.initializeError = initializeError;
  else loaded.state.startError = new Error('spawn /nowhere/pi-session ENOENT');
  openSession(loaded.state);
  await loaded.ext.activate(fakeContext()).ready;
  return loaded;
}

test('a start failure is reported once, by the extension, with the command that was tried', async (t) => {
  const loaded = await failedStart(t);
  // (the client's own "couldn't create connection to server" goes to the output only)
  assert.equal(loaded.state.messages.error.length, 1);
  assert.match(loaded.state.messages.error[0], /did not start .*ENOENT.*\/nowhere\/pi-session serve/);
  assert.ok(loaded.state.clientLog.some((line) => line.includes("couldn't create connection to server")));
});

test('a server that refuses initialize is reported once, with its answer', async (t) => {
  const loaded = await failedStart(t, new Error('unknown piVersion "9.9.9"'));
  assert.equal(loaded.state.messages.error.length, 1);
  assert.match(loaded.state.messages.error[0], /did not start \(unknown piVersion "9\.9\.9"\)/);
});

/** The rows the view shows under an element (or at the top), "load more" items included. */
const children = (api, element) => api.tree.getChildren(element);
const ids = (items) => items.map((i) => (i.kind === 'row' ? i.node.id : `more:${i.direction}:${i.count}`));

test('the tree view loads the top level, then every level down to the leaf in one request (levels)', async (t) => {
  const { client, state, api, restore } = await activated();
  t.after(restore);
  const trees = client.requests.filter((r) => r.method === 'pi/getTree').map((r) => r.params);
  const base = { uri: SESSION_URI, filter: 'default', form: 'flat', activeBranchFirst: true };
  assert.deepEqual(trees[0], { ...base, chain: true, offset: 0, limit: 200 });
  assert.deepEqual(trees[1], { ...base, levels: true, aroundId: 'a3', limit: 50, revision: '1' }); // the first window's
  assert.equal(trees.length, 2);
  assert.equal(state.treeViews[0].id, 'piSession.tree');
  const roots = await children(api);
  assert.deepEqual(ids(roots), ['u1', 'a1']);
  const branches = await children(api, roots[1]);
  assert.deepEqual(ids(branches), ['u3', 'u2']); // the leaf's branch first, as pi's /tree
  const branchItem = api.tree.getTreeItem(roots[1]);
  assert.match(branchItem.description, /2 branches/);
  assert.equal(branchItem.iconPath.id, 'hubot');
  assert.equal(branchItem.collapsibleState, 2); // expanded: on the leaf's path
  const labeled = api.tree.getTreeItem(branches[1]);
  assert.equal(labeled.label, '[first] user: try A');
  assert.equal(labeled.iconPath.id, 'account');
  assert.equal(labeled.iconPath.color.id, 'disabledForeground'); // off the leaf's path
  const leafRow = (await children(api, branches[0]))[0];
  assert.equal(api.tree.getParent(leafRow).node.id, 'u3');
  assert.equal(api.tree.getParent(api.tree.getParent(leafRow)).node.id, 'a1');
  const leaf = api.tree.getTreeItem(leafRow);
  assert.match(leaf.description, /◀ leaf/);
  assert.equal(leaf.iconPath.color.id, 'charts.orange');
  assert.deepEqual(leaf.command, { command: 'piSession.openEntry', title: 'Open', arguments: [{ uri: SESSION_URI, entryId: 'a3', line: 6 }] });
  assert.match(state.treeViews[0].description, /a\.jsonl · default/);
  // the leaf is selected on load, without taking the focus
  assert.deepEqual(state.treeViews[0].revealed.map((r) => [r.element.node.id, r.opts.select, r.opts.focus]), [['a3', true, false]]);
});

test('a 100,001-entry session: the view loads pages around the leaf, never the whole tree; "load more" extends them', async (t) => {
  const entries = chainEntries(100_001);
  const server = makeTreeServer(entries, entries[100_000].id);
  const { client, state, api, restore } = await activated({ server, getInfo: () => ({ skippedLines: 0, entryCount: 100_001 }) });
  t.after(restore);
  const requests = client.requests.filter((r) => r.method === 'pi/getTree');
  assert.equal(requests.length, 2);
  assert.ok(requests.every((r) => r.params.limit <= 200 && (r.params.chain === true || r.params.levels === true)));
  const top = await children(api);
  assert.equal(top[0].kind, 'more');
  assert.equal(top[0].count, 100_001 - 50);
  assert.equal(top.length, 51); // "load earlier" and the 50 rows ending with the leaf (LEVEL_PAGE)
  assert.match(api.tree.getTreeItem(top[50]).description, /◀ leaf/);
  assert.equal(state.treeViews[0].revealed[0].element, top[50]);
  const more = api.tree.getTreeItem(top[0]);
  assert.match(more.label, /^Load 200 earlier \(of 99,951\)…$/);
  assert.equal(more.command.command, 'piSession.tree.loadMore');
  await state.commands.get('piSession.tree.loadMore')(...more.command.arguments);
  const after = await children(api);
  assert.equal(after.length, 251);
  assert.equal(after[201], top[1]); // rows shown before keep their objects (the view keeps its state)
  assert.equal(after[250], top[50]);
});

test('the tree view says when pi skips lines of the file (pi/getInfo)', async (t) => {
  const asked = [];
  const skipped = { skippedLines: 1, skipped: [{ line: 7, column: 3, kind: 'malformed', message: 'invalid JSON: Unterminated string' }] };
  const { state, restore } = await activated({ getInfo: (params) => (asked.push(params.uri), skipped) });
  t.after(restore);
  assert.deepEqual(asked, [SESSION_URI]);
  assert.match(state.treeViews[0].message, /^pi skips 1 line of this file, so the tree lacks what it holds: line 8 \(invalid JSON/);
});

test('errors of pi/getEntryAtLine are shown, unknown method included: there is no fallback to the tree', async (t) => {
  for (const code of [-32003, -32601]) {
    const failing = () => {
      throw Object.assign(new Error(`failure ${code}`), { code });
    };
    const { client, state, restore } = await activated({ cursorLine: 4, getEntryAtLine: failing });
    t.after(restore);
    const before = client.requests.filter((r) => r.method === 'pi/getTree').length;
    await state.commands.get('piSession.branchHere')();
    assert.equal(client.requests.filter((r) => r.method === 'pi/getTree').length, before);
    assert.equal(client.requests.filter((r) => r.method === 'pi/branch').length, 0);
    assert.match(state.messages.error.join(' '), new RegExp(`failure ${code}`));
  }
});

test('the tree follows the cursor: the entry on the cursor line is selected', async (t) => {
  const { client, state, doc, restore } = await activated();
  t.after(restore);
  const view = state.treeViews[0];
  const editor = { document: doc, selection: { active: { line: 4, character: 0 } } }; // u2, off the leaf's path
  state.emitters.selection.fire({ textEditor: editor });
  await new Promise((r) => setTimeout(r, 250));
  assert.deepEqual(client.requests.filter((r) => r.method === 'pi/getEntryAtLine').pop().params, { uri: SESSION_URI, line: 4 });
  const last = view.revealed[view.revealed.length - 1];
  assert.equal(last.element.node.id, 'a2');
  assert.deepEqual([last.opts.select, last.opts.focus], [true, false]);
  const revealed = view.revealed.length;
  state.treeVisible = false; // a hidden view is not opened by following
  state.emitters.selection.fire({ textEditor: { document: doc, selection: { active: { line: 1, character: 0 } } } });
  await new Promise((r) => setTimeout(r, 250));
  assert.equal(view.revealed.length, revealed);
});

test('a tree loaded while its view was hidden is revealed once the shown view has its rows', async (t) => {
  const { state, api, restore } = await activated();
  t.after(restore);
  const view = state.treeViews[0];
  view.show(false);
  // the session renamed: VS Code opens it under its new name, and the tree follows it
  const renamed = makeDocument(Uri.parse('file:///w/sessions/renamed.jsonl'), `${HEADER}\n`, 'pi-session');
  state.documents.push(renamed);
  state.activeTextEditor = { document: renamed, selection: { active: { line: 0, character: 0 } } };
  state.emitters.active.fire(state.activeTextEditor);
  await until(() => api.tree.uri?.toString() === 'file:///w/sessions/renamed.jsonl', 'the tree follows the renamed session');
  await flush();
  const revealed = view.revealed.length;
  view.show();
  await until(() => view.revealed.length > revealed, 'the leaf revealed once the view is shown');
  assert.deepEqual(state.output.filter((line) => line.includes('could not reveal')), []);
  assert.equal(view.revealed.length, revealed + 1);
  assert.equal(view.revealed[revealed].element, api.tree.marker);
  assert.equal(api.tree.marker.node.id, 'a3');
  // shown again with nothing changed meanwhile: the leaf is selected at once
  view.show(false);
  view.show();
  await until(() => view.revealed.length > revealed + 1, 'the leaf revealed again');
  assert.equal(view.revealed.length, revealed + 2);
});

test('the tree is cleared when no editor shows the session any more', async (t) => {
  const { state, api, restore } = await activated();
  t.after(restore);
  const { TabInputText, TabInputCustom } = require('vscode'); // the stub, while loaded
  state.tabGroups = [{ viewColumn: 1, tabs: [{ input: new TabInputCustom(Uri.parse(SESSION_URI), 'piSession.viewer') }] }];
  state.emitters.tabs.fire({ opened: [], closed: [{ input: new TabInputText(Uri.parse(SESSION_URI)) }], changed: [] });
  await flush();
  assert.equal(api.tree.uri.toString(), SESSION_URI); // the viewer still shows it
  state.tabGroups = [{ viewColumn: 1, tabs: [] }];
  state.emitters.tabs.fire({ opened: [], closed: [{ input: new TabInputCustom(Uri.parse(SESSION_URI), 'piSession.viewer') }], changed: [] });
  await flush();
  assert.equal(api.tree.uri, undefined);
  assert.deepEqual(await children(api), []);
});

test('closing all editors clears the tree even when each one became active on the way', async (t) => {
  const { state, api, restore } = await activated();
  t.after(restore);
  const { TabInputText } = require('vscode');
  const other = makeDocument(Uri.parse('file:///w/sessions/b.jsonl'), `${HEADER}\n`, 'pi-session');
  state.documents.push(other);
  // the first tab closes, the other becomes active, and its tab closes right away too
  state.tabGroups = [];
  state.activeTextEditor = { document: other, selection: { active: { line: 0, character: 0 } } };
  state.emitters.active.fire(state.activeTextEditor);
  state.emitters.tabs.fire({ opened: [], closed: [{ input: new TabInputText(other.uri) }], changed: [] });
  await flush();
  assert.equal(api.tree.uri, undefined);
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
  assert.ok(count() > before);
});

test('pi/didChange "appended" takes in the rows that changed from one levels request; "reloaded" loads anew', async (t) => {
  const { api, client, server, state, restore } = await activated();
  t.after(restore);
  const asked = client.requests.length;
  server.append([{ id: 'x', parent: 'a3', role: 'assistant' }]);
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'appended', newEntryIds: ['x'], leafId: 'x' });
  await flush();
  const sent = client.requests.slice(asked).filter((r) => r.method.startsWith('pi/'));
  assert.deepEqual(
    sent.map((r) => [r.method, r.params.since, r.params.aroundId, r.params.uri]),
    [['pi/getTree', '1', 'x', SESSION_URI]],
  );
  assert.equal(api.tree.marker.node.id, 'x');
  assert.ok(state.output.some((line) => line.includes('Tree: ') && line.includes('followed (the levels that changed), leaf x')));
  assert.deepEqual(
    api.tree.tree.loadedRows().filter((r) => ['a3', 'x'].includes(r.node.id)).map((r) => [r.node.id, r.node.isLeaf]),
    [['a3', false], ['x', true]],
  );
  const again = client.requests.length;
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'reloaded', newEntryIds: [], leafId: 'x' });
  await flush();
  const reloaded = client.requests.slice(again).map((r) => r.method);
  assert.ok(reloaded.includes('pi/getInfo') && !client.requests.slice(again).some((r) => r.params?.since !== undefined));
});

test('pi/didChange "leafMoved" (another view\'s pi/branch) takes in the move from one levels request', async (t) => {
  const { api, client, server, restore } = await activated();
  t.after(restore);
  const asked = client.requests.length;
  server.branch('a2');
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'leafMoved', newEntryIds: [], leafId: 'a2' });
  await flush();
  const sent = client.requests.slice(asked).filter((r) => r.method.startsWith('pi/'));
  assert.deepEqual(
    sent.map((r) => [r.method, r.params.since, r.params.aroundId]),
    [['pi/getTree', '1', 'a2']],
  );
  assert.equal(api.tree.marker.node.id, 'a2');
});

test('pi/didChange "rewriting" waits for the file: no re-read, no error; the reload after it refreshes', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  const count = () => client.requests.filter((r) => r.method === 'pi/getTree').length;
  const before = count();
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'rewriting', newEntryIds: [] });
  await flush();
  assert.equal(count(), before);
  assert.deepEqual(state.messages.error, []);
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'reloaded', newEntryIds: [], leafId: 'a3' });
  await flush();
  assert.ok(count() > before);
});

test('pi/didChange "unreadable" warns once that the file is not a session now, without re-reading it', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  const count = () => client.requests.filter((r) => r.method === 'pi/getTree').length;
  const before = count();
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'rewriting', newEntryIds: [] });
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'unreadable', newEntryIds: [] });
  await flush();
  assert.equal(count(), before);
  assert.deepEqual(state.messages.error, []);
  assert.equal(state.messages.warning.length, 1);
  assert.match(state.messages.warning[0], /^Pi Session: a\.jsonl is not a session file now \(it has no session header/);
  client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'reloaded', newEntryIds: [], leafId: 'a3' });
  await flush();
  assert.ok(count() > before);
  assert.equal(state.messages.warning.length, 1);
});

test('Show Context at the cursor asks for that entry and opens a read-only Markdown document', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 2 });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  const request = client.requests.find((r) => r.method === 'pi/buildSessionContext');
  assert.deepEqual(request.params, { uri: SESSION_URI, leafId: 'a1', format: 'markdown' });
  const shown = state.shownDocuments.pop();
  assert.equal(shown.document.uri.scheme, 'pi-session-context');
  assert.match(shown.document.uri.path, /\.md$/);
  assert.equal(shown.document.getText(), markdownOf({ leafId: 'a1' })); // the server's document, as it is
});

test('Show Context on the header line, and Show Context at Leaf, ask for the leaf (no leafId)', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 0 });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  await state.commands.get('piSession.showLeafContext')();
  const requests = client.requests.filter((r) => r.method === 'pi/buildSessionContext');
  assert.deepEqual(requests.map((r) => r.params), [{ uri: SESSION_URI, format: 'markdown' }, { uri: SESSION_URI, format: 'markdown' }]);
});

test('Show Context in JSON format shows the raw result', async (t) => {
  const { state, restore } = await activated({ config: { 'piSession.context.format': 'json' } });
  t.after(restore);
  await state.commands.get('piSession.showContext')();
  const shown = state.shownDocuments.pop();
  assert.match(shown.document.uri.path, /\.json$/);
  assert.deepEqual(JSON.parse(shown.document.getText()), CONTEXT);
  // pi's key order, not sorted: `role` before `content`, `type` before `text`
  const text = shown.document.getText();
  assert.ok(text.indexOf('"role"') < text.indexOf('"content"'));
  assert.ok(text.indexOf('"type": "text"') < text.indexOf('"text": "hi there"'));
});

test('Branch Here from a tree row sends pi/branch with its id, refreshes the tree and the code lenses', async (t) => {
  const { client, state, api, restore } = await activated();
  t.after(restore);
  const roots = await children(api);
  const row = (await children(api, roots[1]))[1]; // u2
  const before = client.requests.filter((r) => r.method === 'pi/getTree').length;
  await state.commands.get('piSession.branchHere')(row, [row]);
  assert.deepEqual(client.requests.find((r) => r.method === 'pi/branch').params, { uri: SESSION_URI, entryId: 'u2' });
  assert.ok(client.requests.filter((r) => r.method === 'pi/getTree').length > before);
  assert.equal(state.codeLensRefreshes, 1); // the leaf lens follows Branch Here
});

test('Branch Here with a server that tells the move (pi/didChange leafMoved before its answer) follows it once', async (t) => {
  let client;
  const server = makeTreeServer(ENTRIES, 'a3');
  const tells = (method, params) => {
    if (method !== 'pi/branch') return null;
    server.branch(params.entryId);
    client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'leafMoved', newEntryIds: [], leafId: params.entryId });
    return { leafId: params.entryId };
  };
  const activation = await activated({ server, other: tells });
  client = activation.client;
  t.after(activation.restore);
  const roots = await children(activation.api);
  const row = (await children(activation.api, roots[1]))[1]; // u2
  const asked = client.requests.length;
  await activation.state.commands.get('piSession.branchHere')(row, [row]);
  await flush();
  const trees = client.requests.slice(asked).filter((r) => r.method === 'pi/getTree');
  assert.deepEqual(trees.map((r) => [r.params.since, r.params.aroundId]), [['1', 'u2']]);
  assert.equal(activation.api.tree.marker.node.id, 'u2');
});

test('an entry named by {uri, entryId} is looked up alone (one node of pi/getTree), not in the whole tree', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  await state.commands.get('piSession.branchHere')({ uri: SESSION_URI, entryId: 'u2' });
  const lookup = client.requests.filter((r) => r.method === 'pi/getTree').find((r) => r.params.rootId === 'u2');
  assert.deepEqual(lookup.params, { uri: SESSION_URI, rootId: 'u2', depth: 0, previews: false });
  assert.deepEqual(client.requests.find((r) => r.method === 'pi/branch').params, { uri: SESSION_URI, entryId: 'u2' });
});

test('the pi release setting goes to the server as initializationOptions.piVersion; a change restarts it', async (t) => {
  const { state, client, restore } = await activated({ config: { 'piSession.piVersion': '0.86.1' } });
  t.after(restore);
  assert.deepEqual(client.clientOptions.initializationOptions, { piVersion: '0.86.1' });
  state.config['piSession.piVersion'] = '1.6.0';
  state.emitters.config.fire({ affectsConfiguration: (section) => section === 'piSession.piVersion' });
  await flush();
  assert.equal(state.clients.length, 2);
  assert.equal(state.clients[0].isRunning(), false);
  assert.deepEqual(state.clients[1].clientOptions.initializationOptions, { piVersion: '1.6.0' });
  state.emitters.config.fire({ affectsConfiguration: (section) => section === 'piSession.tree.filter' });
  await flush();
  assert.equal(state.clients.length, 2); // other settings do not restart it
});

test('an unknown piVersion setting falls back to the default release', async (t) => {
  const { client, restore } = await activated({ config: { 'piSession.piVersion': '9.9' } });
  t.after(restore);
  assert.deepEqual(client.clientOptions.initializationOptions, { piVersion: '1.6.0' });
});

test('Branch Here on the header line is an error, and nothing is sent', async (t) => {
  const { client, state, restore } = await activated({ cursorLine: 0 });
  t.after(restore);
  await state.commands.get('piSession.branchHere')();
  assert.equal(client.requests.filter((r) => r.method === 'pi/branch').length, 0);
  // the line is named as the editor numbers it, and a line pi skips is among what it may be
  assert.match(state.messages.error[0], /line 1 holds no entry pi reads \(the header, a blank line, or a line pi skips\)/);
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

test('Label Entry with a server that tells the append (pi/didChange appended before its answer) takes it in once, from one levels request', async (t) => {
  let client;
  const server = makeTreeServer(ENTRIES, 'a3');
  const tells = (method, params) => {
    if (method !== 'pi/append') return null;
    server.relabel(params.targetId, params.label);
    client.notify('pi/didChange', { session: 's', uri: SESSION_URI, kind: 'appended', newEntryIds: ['l1'], leafId: 'a3' });
    return { id: 'l1', leafId: 'a3' };
  };
  const activation = await activated({ server, other: tells, cursorLine: 4 });
  client = activation.client;
  t.after(activation.restore);
  await children(activation.api);
  const asked = client.requests.length;
  activation.state.inputBoxAnswer = 'keep';
  await activation.state.commands.get('piSession.labelEntry')();
  await flush();
  const after = client.requests.slice(asked);
  const trees = after.filter((r) => r.method === 'pi/getTree' && r.params.rootId === undefined);
  assert.deepEqual(trees.map((r) => r.params.since), ['1'], 'followed, not loaded anew');
  assert.equal(after.filter((r) => r.method === 'pi/getInfo').length, 0, 'not loaded anew');
});

test('a tree row opens its line in the session editor', async (t) => {
  const { state, doc, restore } = await activated();
  t.after(restore);
  state.visibleTextEditors = [{ document: doc }];
  await state.commands.get('piSession.openEntry')({ uri: SESSION_URI, entryId: 'u2', line: 3 });
  const shown = state.shownDocuments.pop();
  assert.equal(shown.document.uri.toString(), SESSION_URI);
});

test('a file with lone CRs: the lines VS Code shows are converted to pi\'s for the server and back (pi/getLineBreaks)', async (t) => {
  // pi's line 2 (u2's parent a1) holds two lone CRs: VS Code's lines 2-4; pi's line 3 (u2) is VS Code's 5
  const breaks = { loneCarriageReturns: [{ line: 2, count: 2 }] };
  const entryAtLine = [];
  const other = (method) => (method === 'pi/getLineBreaks' ? breaks : null);
  const { state, doc, restore } = await activated({ cursorLine: 5, getEntryAtLine: entryAtLineOf(TREE, entryAtLine), other });
  t.after(restore);
  // the entry under the cursor: VS Code's line 5 is pi's line 3 (u2); VS Code's line 4 is pi's line 2
  await state.commands.get('piSession.showContext')();
  assert.equal(entryAtLine.pop().line, 3);
  state.emitters.selection.fire({ textEditor: { document: doc, selection: { active: { line: 4, character: 0 } } } });
  await until(() => entryAtLine.length > 0, 'the tree followed the cursor');
  assert.equal(entryAtLine.pop().line, 2);
  // a tree row (pi's line 3; the viewer's "line" button reveals the same way) opens VS Code's line 5
  state.visibleTextEditors = [{ document: doc }];
  await state.commands.get('piSession.openEntry')({ uri: SESSION_URI, entryId: 'u2', line: 3 });
  assert.equal(state.shownDocuments.pop().editor.selection.active.line, 5);
  await state.commands.get('piSession.openEntry')({ uri: SESSION_URI, entryId: 'u1', line: 1 });
  assert.equal(state.shownDocuments.pop().editor.selection.active.line, 1); // (above the lone CRs)
});

test('a file with lone CRs: the tree\'s tooltips and its notice name lines as VS Code does, from one pi/getLineBreaks per file state', async (t) => {
  // pi's line 2 (a1) holds two lone CRs: pi's line 3 (u2) is VS Code's 5, pi's 4 (a2) VS Code's 6
  const breaks = { loneCarriageReturns: [{ line: 2, count: 2 }] };
  const info = { skippedLines: 1, skipped: [{ line: 4, column: 0, kind: 'malformed', message: 'invalid JSON' }], entryCount: ENTRIES.length };
  // (the protection of a session with lone CRs asks on its own: it is tested on its own)
  const { api, client, state, restore } = await activated({
    getInfo: () => info,
    other: (method) => (method === 'pi/getLineBreaks' ? breaks : null),
    config: { 'piSession.protectLoneCarriageReturns': false },
  });
  t.after(restore);
  const asked = () => client.requests.filter((r) => r.method === 'pi/getLineBreaks').length;
  assert.match(state.treeViews[0].message, /what it holds: line 7 \(invalid JSON; pi's line 5\)\./);
  assert.equal(asked(), 1);
  // a row's tooltip is made as the mouse is on it (resolveTreeItem), from the same reply
  const tooltip = async (row) => {
    const item = api.tree.getTreeItem(row);
    assert.equal(item.tooltip, undefined); // (VS Code resolves only what is left undefined)
    return (await api.tree.resolveTreeItem(item, row)).tooltip.value;
  };
  const roots = await children(api);
  const [, u2] = await children(api, roots[1]);
  assert.match(await tooltip(u2), /line 6 \(pi's line 4\) · /);
  assert.match(await tooltip(roots[0]), /line 2 · /); // (above the lone CRs)
  assert.equal(asked(), 1);
  // the file changed: the next line named asks again, once
  breaks.loneCarriageReturns = [];
  client.notify('pi/didChange', { uri: SESSION_URI, kind: 'reloaded' });
  await until(() => asked() === 2, 'the reload asked for the lone CRs again');
  await until(() => state.treeViews[0].message?.includes('line 5 (invalid JSON)'), 'the notice named the line anew');
  const rows = await children(api, (await children(api))[1]);
  assert.match(await tooltip(rows[1]), /line 4 · /);
  assert.equal(asked(), 2);
  // the user's Refresh (a file changed without a word: one the server no longer held) asks again too
  breaks.loneCarriageReturns = [{ line: 1, count: 1 }];
  await state.commands.get('piSession.tree.refresh')();
  assert.match(state.treeViews[0].message, /line 6 \(invalid JSON; pi's line 5\)/);
  assert.equal(asked(), 3);
});

// A session whose line 1 holds a lone CR inside its entry, and line 3 two: VS Code holds each as a
// line break (its text below), and would write a line break in its place on save.
const SPLIT_TEXT = `${HEADER}\n{"type":"message",\n"id":"a1"}\n{"type":"message","id":"a2"}\n{"type":"message",\n"id":"a3",\n"x":1}\n`;
const SPLIT_BREAKS = [{ line: 1, count: 1 }, { line: 3, count: 2 }];
const READONLY = 'workbench.action.files.setActiveEditorReadonlyInSession';
const WRITEABLE = 'workbench.action.files.setActiveEditorWriteableInSession';
const RESET_READONLY = 'workbench.action.files.resetActiveEditorReadonlyInSession';

/** Activated on a session document with these lone CRs in its file (pi/getLineBreaks answers `breaks.now`). */
async function activatedWithLoneCrs(breaks, options = {}) {
  const other = (method) => {
    if (method !== 'pi/getLineBreaks') return null;
    if (breaks.now instanceof Error) throw breaks.now;
    return { loneCarriageReturns: breaks.now };
  };
  const loaded = await activated({ text: SPLIT_TEXT, other, ...options });
  const asked = () => loaded.client.requests.filter((r) => r.method === 'pi/getLineBreaks').length;
  const ran = (command) => loaded.state.executed.filter(([id]) => id === command).length;
  return { ...loaded, asked, ran };
}

test('a session whose file holds a CR inside a line is made read-only with one notice; Allow Editing makes it writable', async (t) => {
  const breaks = { now: SPLIT_BREAKS };
  const { state, doc, ran, restore } = await activatedWithLoneCrs(breaks, { state: { warningAnswer: 'Allow Editing' } });
  t.after(restore);
  await until(() => ran(READONLY) === 1, 'the editor was made read-only');
  await until(() => ran(WRITEABLE) === 1, 'Allow Editing made it writable');
  assert.equal(state.messages.warning.length, 1);
  const [notice] = state.messages.warning;
  // the lines named as VS Code numbers them (pi's beside), and why
  assert.match(notice, /a\.jsonl is read-only: 2 lines hold a carriage return inside the line \(line 2, line 5 \(pi's line 4\)\)/);
  assert.match(notice, /VS Code would write it as a line break on save, and pi would lose those entries/);
  // the document's editor was brought forward first: the workbench's command acts on the active editor
  assert.equal(state.shownDocuments.pop().document, doc);
  // shown again (another editor, then this one): the user answered once, that holds
  state.emitters.active.fire({ document: doc, selection: { active: { line: 0, character: 0 } } });
  await flush();
  assert.equal(ran(READONLY), 1);
  assert.equal(state.messages.warning.length, 1);
});

test('a CR at the start or the end of a line, or at the end of the file, is no reason: a save leaves what pi reads', async (t) => {
  // line 1: a CR before its entry; line 2: one after it, with spaces; the last line: a CR and no "\n"
  const text = `${HEADER}\n\n{"type":"message","id":"a1"}\n{"type":"message","id":"a2"}  \n \t\n{"type":"message","id":"a3"}\n`;
  const breaks = { now: [{ line: 1, count: 1 }, { line: 2, count: 1 }, { line: 3, count: 1 }] };
  const { state, asked, ran, restore } = await activatedWithLoneCrs(breaks, { text });
  t.after(restore);
  await until(() => asked() > 0, 'the lone CRs were asked for');
  await flush();
  assert.equal(ran(READONLY), 0);
  assert.deepEqual(state.messages.warning, []);
});

test('the protection can be turned off: no read-only editor, no notice, no warning on save', async (t) => {
  const breaks = { now: SPLIT_BREAKS };
  const { state, doc, ran, restore } = await activatedWithLoneCrs(breaks, { config: { 'piSession.protectLoneCarriageReturns': false } });
  t.after(restore);
  await flush();
  state.emitters.willSave.fire({ document: doc, waitUntil() {} });
  await flush();
  assert.equal(ran(READONLY), 0);
  assert.deepEqual(state.messages.warning, []);
});

test('saving a session whose lone CRs the save splits is warned about once', async (t) => {
  const breaks = { now: SPLIT_BREAKS };
  const { state, doc, ran, restore } = await activatedWithLoneCrs(breaks);
  t.after(restore);
  await until(() => ran(READONLY) === 1, 'the editor was made read-only');
  await until(() => state.messages.warning.length === 1, 'the notice was shown');
  // the user allowed editing (its answer aside here) and saves, twice
  state.emitters.willSave.fire({ document: doc, waitUntil() {} });
  await until(() => state.messages.warning.length === 2, 'the save was warned about');
  assert.match(state.messages.warning[1], /saving a\.jsonl writes a line break where 2 lines held a carriage return inside the line \(line 2, line 5 \(pi's line 4\)\)\. pi will read each such entry as damaged lines and lose it/);
  state.emitters.willSave.fire({ document: doc, waitUntil() {} });
  await flush();
  assert.equal(state.messages.warning.length, 2);
  // the protection turned off: shown again, the editor's read-only state is reset
  state.config['piSession.protectLoneCarriageReturns'] = false;
  state.emitters.active.fire({ document: doc, selection: { active: { line: 0, character: 0 } } });
  await until(() => ran(RESET_READONLY) === 1, 'the read-only state was reset');
});

test('a session made read-only whose lone CRs are gone when it is shown again is made writable; a server that cannot tell is asked again', async (t) => {
  const breaks = { now: new Error('Method not found') };
  const { state, client, doc, asked, ran, restore } = await activatedWithLoneCrs(breaks);
  t.after(restore);
  await until(() => asked() === 1, 'the lone CRs were asked for');
  await flush();
  assert.equal(ran(READONLY), 0);
  // shown again: asked again (an error is not kept), and now the server tells
  breaks.now = SPLIT_BREAKS;
  const editor = { document: doc, selection: { active: { line: 0, character: 0 } } };
  state.emitters.active.fire(editor);
  await until(() => ran(READONLY) === 1, 'the editor was made read-only');
  assert.equal(asked(), 2);
  // closed and opened again after another program removed the lone CRs: the read-only state VS Code
  // kept for the file is reset
  state.emitters.close.fire(doc);
  breaks.now = [];
  client.notify('pi/didChange', { uri: SESSION_URI, kind: 'reloaded' });
  state.emitters.active.fire(editor);
  await until(() => ran(RESET_READONLY) === 1, 'the read-only state was reset');
  assert.equal(ran(READONLY), 1);
});

/** A save of `document` as VS Code announces it: what the listeners asked it to wait for is kept. */
function saveOf(document) {
  const waited = [];
  return { event: { document, waitUntil: (thenable) => waited.push(thenable) }, waited: () => Promise.all(waited) };
}

test('a session opened in the background, never shown, is asked about as it opens; its save (Save All) waits for that and is warned about', async (t) => {
  // the active editor's session has no lone CR; another opens without an editor (an extension's edit)
  const background = makeDocument(Uri.parse('file:///w/sessions/b.jsonl'), SPLIT_TEXT, 'pi-session');
  const other = (method, params) => {
    if (method !== 'pi/getLineBreaks') return null;
    return { loneCarriageReturns: params.uri === background.uri.toString() ? SPLIT_BREAKS : [] };
  };
  const { state, client, ran, restore } = await activatedWithLoneCrs({ now: [] }, { text: `${HEADER}\n`, other });
  t.after(restore);
  const askedOf = (uri) => client.requests.filter((r) => r.method === 'pi/getLineBreaks' && r.params.uri === uri).length;
  state.documents.push(background);
  state.emitters.open.fire(background);
  await until(() => askedOf('file:///w/sessions/b.jsonl') === 1, 'the background session was asked about as it opened');
  const save = saveOf(background);
  state.emitters.willSave.fire(save.event);
  await save.waited(); // (the save waited: the warning was given before the file was written)
  assert.equal(state.messages.warning.length, 1);
  assert.match(state.messages.warning[0], /saving b\.jsonl writes a line break where 2 lines held a carriage return inside the line \(line 2, line 5 \(pi's line 4\)\)/);
  assert.equal(askedOf('file:///w/sessions/b.jsonl'), 1);
  assert.equal(ran(READONLY), 0); // (the workbench makes only the active editor read-only)
});

test('a session saved before it was asked about: the save waits for the answer', async (t) => {
  const { state, client, doc, restore } = await activatedWithLoneCrs({ now: SPLIT_BREAKS }, { config: { 'piSession.protectLoneCarriageReturns': false } });
  t.after(restore);
  // the protection turned on only now: nothing was asked as the session opened
  assert.equal(client.requests.filter((r) => r.method === 'pi/getLineBreaks').length, 0);
  state.config['piSession.protectLoneCarriageReturns'] = true;
  const save = saveOf(doc);
  state.emitters.willSave.fire(save.event);
  await save.waited();
  assert.match(state.messages.warning[0] ?? '', /saving a\.jsonl writes a line break where 2 lines/);
});

test('a session read from disk again is asked about again: a rewrite the server could not tell (the same size within one clock tick) is not answered from before', async (t) => {
  const breaks = { now: [] };
  const { state, doc, asked, ran, restore } = await activatedWithLoneCrs(breaks);
  t.after(restore);
  await until(() => asked() === 1, 'the lone CRs were asked for');
  // another program wrote lone CRs into the file, and no pi/didChange came; VS Code read it again
  breaks.now = SPLIT_BREAKS;
  state.emitters.change.fire({ document: doc, contentChanges: [{ text: '' }], reason: undefined });
  await until(() => ran(READONLY) === 1, 'the editor was made read-only');
  assert.equal(asked(), 2);
  assert.match(state.messages.warning[0], /a\.jsonl is read-only: 2 lines hold a carriage return inside the line/);
  // an edit in the editor, and an undo, leave the file as it was: not asked again
  doc.isDirty = true;
  state.emitters.change.fire({ document: doc, contentChanges: [{ text: 'x' }], reason: undefined });
  doc.isDirty = false;
  state.emitters.change.fire({ document: doc, contentChanges: [{ text: '' }], reason: 1 });
  await flush();
  assert.equal(asked(), 2);
});

test('Restart Server stops the client and starts a new one', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  await state.commands.get('piSession.restartServer')();
  assert.equal(state.clients.length, 2);
  assert.equal(state.clients[0].isRunning(), false);
  assert.equal(state.clients[1].isRunning(), true);
  // the server stopped on request: its exit is information, not an error
  assert.deepEqual(state.clientLog, ['[Info] Server process exited with code 0.']);
  assert.deepEqual(state.messages.error, []);
});

test('the status bar shows the server running, and why it is not when it failed or keeps stopping', async (t) => {
  const { state, restore } = await activated({ command: ['/usr/bin/python3', '-m', 'pi_session_server'] });
  t.after(restore);
  const item = state.statusItems.get('piSession.server');
  assert.deepEqual(item.selector, { language: 'pi-session' });
  assert.equal(item.text, 'pi-session');
  assert.equal(item.severity, 0);
  assert.match(item.detail, /following pi 1\.6\.0; \/usr\/bin\/python3 -m pi_session_server serve \(from setting piSession\.server\.command\)/);

  const failed = await failedStart(t);
  const failedItem = failed.state.statusItems.get('piSession.server');
  assert.equal(failedItem.text, 'pi-session: not running');
  assert.equal(failedItem.severity, 2);
  assert.match(failedItem.detail, /^the language server did not start \(spawn \/nowhere\/pi-session ENOENT\)/);
  assert.equal(failedItem.command.command, 'piSession.restartServer');
});

/** The server process ended on its own: what the client asks its error handler, then the client is down. */
async function serverCrashes(client) {
  const answer = await client.clientOptions.errorHandler.closed();
  client.running = false;
  await flush();
  return answer;
}

test('a server that stops on its own is started again as a new client, and the tree is loaded from it', async (t) => {
  const { state, client, restore } = await activated();
  t.after(restore);
  const answer = await serverCrashes(client);
  // the client's own restart would keep features that no longer work (no diagnostics for sessions
  // opened after it): it is told not to, and a new client takes its place
  assert.equal(answer.action, 1); // CloseAction.DoNotRestart
  assert.equal(answer.handled, true);
  assert.equal(state.clients.length, 2);
  assert.equal(state.clients[1].isRunning(), true);
  assert.ok(state.clients[1].requests.some((r) => r.method === 'pi/getTree'));
  assert.equal(state.messages.error.length, 0);
});

test('a server that ends while it starts is not started again: its start failure is told once', async (t) => {
  const { state } = await failedStart(t);
  assert.equal(state.messages.error.length, 1);
  const answer = await serverCrashes(state.clients[0]);
  assert.equal(answer.action, 1); // CloseAction.DoNotRestart
  assert.equal(state.clients.length, 1);
  assert.equal(state.messages.error.length, 1);
  assert.equal(state.statusItems.get('piSession.server').text, 'pi-session: not running');
});

test('a server that keeps stopping is left stopped with a message, until Restart Server', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  for (let crash = 0; crash < 4; crash++) await serverCrashes(state.clients.at(-1));
  assert.equal(state.clients.length, 5);
  assert.equal(state.messages.error.length, 0);
  await serverCrashes(state.clients.at(-1));
  assert.equal(state.clients.length, 5);
  assert.equal(state.messages.error.length, 1);
  assert.match(state.messages.error[0], /stopped unexpectedly 5 times in 3 minutes.*Restart Server/);
  assert.equal(state.statusItems.get('piSession.server').text, 'pi-session: not running');
  // the user's restart counts afresh
  await state.commands.get('piSession.restartServer')();
  assert.equal(state.clients.length, 6);
  await serverCrashes(state.clients.at(-1));
  assert.equal(state.clients.length, 7);
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
  assert.deepEqual(state.messages.info, ['Pi Session: checked 2 session files, 1 problem.']);
  const collection = state.diagnostics.get('pi-session-check');
  const diagnostics = collection.get('file:///s/broken.jsonl');
  assert.equal(diagnostics[0].message, 'malformed JSON line');
  assert.equal(diagnostics[0].severity, 0); // vscode.DiagnosticSeverity.Error
  assert.equal(diagnostics[0].range.start.line, 3);
  assert.ok(state.executed.some(([id]) => id === 'workbench.actions.view.problems'));
});

test('Check All Sessions that finds no session file says where it looked', async (t) => {
  const fake = path.join(os.tmpdir(), `fake-pi-session-empty-${process.pid}.js`);
  fs.writeFileSync(fake, `
    console.error('pi-session check: /home/me/.pi/agent/sessions: no such directory (where pi keeps its sessions)');
    console.log(JSON.stringify({ files: [], totals: { files: 0 } }));`);
  t.after(() => fs.rmSync(fake, { force: true }));
  const { state, restore } = await activated({ command: [process.execPath, fake] });
  t.after(restore);
  assert.equal(await state.commands.get('piSession.checkAllSessions')(), 0);
  assert.deepEqual(state.messages.warning, [
    'Pi Session: no session file to check. /home/me/.pi/agent/sessions: no such directory (where pi keeps its sessions).',
  ]);
  assert.deepEqual(state.messages.info, []);
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

test('pushed and pulled diagnostics are kept in collections of their own names', async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  assert.deepEqual(state.hostWarnings, []);
  assert.ok(state.diagnostics.has('pi-session')); // pulled: named by the server's identifier
  assert.equal(state.diagnostics.get(client.clientOptions.diagnosticCollectionName), state.diagnostics.get('pi-session-files'));
  // a restart makes both again, without a name left in use
  await state.commands.get('piSession.restartServer')();
  assert.deepEqual(state.hostWarnings, []);
});

test("a file's problems come from one source: pushed while VS Code has no document for it, pulled once it has", async (t) => {
  const { client, state, restore } = await activated();
  t.after(restore);
  const pushed = state.diagnostics.get('pi-session-files');
  const big = Uri.parse('file:///w/sessions/big.jsonl');
  const BIG = big.toString();
  const problem = { message: 'line 3: unknown entry type', range: {} };
  client.publishDiagnostics(big, [problem]); // a file read from disk (too big for VS Code to open)
  assert.deepEqual(pushed.get(BIG), [problem]);
  // open as plain jsonl (its first line not a session's, as a big file's may be cut) the file is
  // not synced with the server: its pushed problems stay
  const asJsonl = makeDocument(big, '{"type":"mess', 'jsonl');
  state.documents.push(asJsonl);
  state.emitters.open.fire(asJsonl);
  assert.deepEqual(pushed.get(BIG), [problem]);
  // as a session it is: the push made before (which the server does not take back) goes
  asJsonl.languageId = 'pi-session';
  state.emitters.open.fire(asJsonl);
  assert.equal(pushed.get(BIG), undefined);
  // and a push arriving for it afterwards (sent before the open) is not listed beside the pulled ones
  client.publishDiagnostics(big, [problem]);
  assert.deepEqual(pushed.get(BIG), []);
  // code lenses are not rewritten: their titles' codicons are VS Code's
  assert.deepEqual(Object.keys(client.clientOptions.middleware), ['handleDiagnostics']);
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

// ---- detection of damaged sessions ----------------------------------------------------------------

test('a .jsonl without a header, or with the header moved down, becomes pi-session by its first lines', async (t) => {
  const { state, restore } = await activated();
  t.after(restore);
  const line = (id, parent) => `{"type":"message","id":"${id}","parentId":${parent ? `"${parent}"` : 'null'},"timestamp":"2026-01-05T10:00:00.000Z","message":{"role":"user","content":"x"}}`;
  const headerless = makeDocument(Uri.parse('file:///w/x/headerless.jsonl'), `${line('a1', null)}\n${line('a2', 'a1')}\n`, 'jsonl');
  const moved = makeDocument(Uri.parse('file:///w/x/moved.jsonl'), `${line('a1', null)}\n${HEADER}\n`, 'jsonl');
  const plain = makeDocument(Uri.parse('file:///w/x/events.jsonl'), '{"type":"event","id":"1","parentId":null}\n', 'jsonl');
  for (const d of [headerless, moved, plain]) state.emitters.open.fire(d);
  await flush();
  assert.deepEqual(state.languageChanges.map((c) => c.uri), ['file:///w/x/headerless.jsonl', 'file:///w/x/moved.jsonl']);
});

// ---- the session viewer ---------------------------------------------------------------------------

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';
const PATH_PAGE = {
  leafId: 'a3', endId: 'a3', total: 3, offset: 0, hasMore: false,
  items: [
    { entry: { type: 'message', id: 'u1', parentId: null, timestamp: '2026-01-05T10:00:00.000Z', message: { role: 'user', content: HOSTILE } }, childIds: ['a1'], line: 1 },
    { entry: { type: 'message', id: 'a1', parentId: 'u1', timestamp: '2026-01-05T10:00:01.000Z', message: { role: 'assistant', content: [{ type: 'toolCall', id: 't', name: 'bash', arguments: { command: HOSTILE } }], model: 'm', usage: { input: 5, output: 6, cost: { total: 0.5 } } } }, childIds: ['u2', 'u3'], line: 2 },
    { entry: { type: 'message', id: 'u3', parentId: 'a1', timestamp: '2026-01-05T10:00:02.000Z', message: { role: 'user', content: 'try B' } }, childIds: [], siblingIds: ['u2', 'u3'], line: 5, label: HOSTILE },
  ],
};
const STATS = { entryCount: 6, types: { message: 6 }, roles: { user: 3, assistant: 3 }, branchPoints: 1, leaves: 2, tokens: { input: 5, output: 6 }, cost: 0.5, models: { m: { turns: 1, totalTokens: 11, cost: 0.5 } } };

async function openViewer(options = {}) {
  const paths = [];
  const loaded = await activated({
    ...options,
    other: (method, params) => {
      if (method === 'pi/getPath') {
        paths.push(params);
        return params.offset >= PATH_PAGE.total ? { ...PATH_PAGE, offset: PATH_PAGE.total, items: [] } : PATH_PAGE;
      }
      if (method === 'pi/getStats') return options.stats ? Promise.resolve(options.stats()).then(() => STATS) : STATS;
      if (method === 'pi/getLineBreaks') return options.lineBreaks ?? null;
      return null;
    },
  });
  const registered = loaded.state.customEditors.get('piSession.viewer');
  const panel = fakePanel();
  registered.provider.resolveCustomEditor(registered.provider.openCustomDocument(Uri.parse(SESSION_URI)), panel);
  panel.send({ type: 'ready' });
  await flush();
  return { ...loaded, panel, paths, provider: registered.provider };
}

test('the viewer is a read-only custom editor that is an option for .jsonl files', () => {
  const [editor] = manifest.contributes.customEditors;
  assert.equal(editor.viewType, 'piSession.viewer');
  assert.equal(editor.priority, 'option');
  assert.deepEqual(editor.selector, [{ filenamePattern: '*.jsonl' }]);
  const explorer = manifest.contributes.menus['explorer/context'].find((m) => m.command === 'piSession.openViewer');
  assert.equal(explorer.when, 'resourceExtname == .jsonl');
  assert.ok(manifest.contributes.viewsContainers.activitybar.some((c) => c.id === 'piSession'));
  assert.deepEqual(manifest.contributes.views.piSession.map((v) => v.id), ['piSession.tree']);
});

test('the viewer page has a strict Content-Security-Policy: a nonce for its one script, no inline code', async (t) => {
  const { panel, restore } = await openViewer();
  t.after(restore);
  const html = panel.webview.html;
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)[1];
  const nonce = /script-src 'nonce-([^']+)'/.exec(csp)[1];
  assert.match(csp, /^default-src 'none'; img-src vscode-resource: data:; style-src vscode-resource:; script-src 'nonce-/);
  assert.doesNotMatch(csp, /unsafe/);
  const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
  assert.deepEqual(scripts, [` nonce="${nonce}" src="vscode-webview-resource:${path.join(__dirname, '..', '..')}/media/viewer.js"`]);
  assert.doesNotMatch(html, /\son[a-z]+=/i); // no inline event handlers
  assert.equal(panel.webview.options.enableScripts, true);
});

test('the viewer reads the path and then the totals through the server, and escapes what the session holds', async (t) => {
  const { panel, paths, client, restore } = await openViewer();
  t.after(restore);
  assert.deepEqual(paths, [{ uri: SESSION_URI, offset: 0, limit: 100 }]);
  const methods = client.requests.map((r) => r.method).filter((m) => m === 'pi/getPath' || m === 'pi/getStats');
  assert.deepEqual(methods, ['pi/getPath', 'pi/getStats']);
  const reset = panel.posted.find((m) => m.type === 'reset');
  assert.equal(reset.following, true);
  assert.deepEqual(reset.page.items.map((i) => [i.index, i.id, i.children]), [[0, '"u1"', 1], [1, '"a1"', 2], [2, '"u3"', 0]]);
  const html = reset.page.items.map((i) => i.html).join('');
  assert.doesNotMatch(html, /<script|<img src=x/);
  assert.match(html, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;/); // markdown-it escapes the text
  assert.match(html, /<span class="label">&#60;script&#62;/); // the label
  assert.match(html, /branch 2 of 2/);
  const stats = panel.posted.find((m) => m.type === 'stats');
  assert.match(stats.html, /6 entries/);
});

test('the viewer loads further pages, switches branches, lists them, and follows the file', async (t) => {
  const { panel, paths, client, restore } = await openViewer();
  t.after(restore);
  panel.send({ type: 'load', offset: 100, limit: 100, purpose: 'append' });
  await flush();
  assert.deepEqual(paths.pop(), { uri: SESSION_URI, offset: 100, limit: 100 });
  assert.equal(panel.posted.pop().purpose, 'append');
  panel.send({ type: 'switch', target: '"u2"', index: 2 });
  await flush();
  assert.deepEqual(paths.pop(), { uri: SESSION_URI, entryId: 'u2', descend: true, offset: 0, limit: 100 });
  const reset = panel.posted.filter((m) => m.type === 'reset').pop();
  assert.equal(reset.following, false);
  assert.equal(reset.focus, 2);
  assert.match(reset.path, /through entry &#34;u2&#34;/);
  panel.send({ type: 'branches', index: 2, parentId: '"a1"' });
  await flush();
  const listing = client.requests.filter((r) => r.method === 'pi/getTree').pop();
  assert.deepEqual(listing.params, { uri: SESSION_URI, filter: 'none', limit: 500, rootId: 'a1', depth: 1 });
  const branches = panel.posted.filter((m) => m.type === 'branches').pop();
  assert.deepEqual(branches.items.map((b) => b.id), ['"u3"', '"u2"']);
  // pi appends: the totals are read again and the webview is told (it asks for the new entries)
  const stats = client.requests.filter((r) => r.method === 'pi/getStats').length;
  client.notify('pi/didChange', { uri: SESSION_URI, kind: 'appended', newEntryIds: ['z'], leafId: 'z' });
  await flush();
  assert.equal(client.requests.filter((r) => r.method === 'pi/getStats').length, stats + 1);
  assert.ok(panel.posted.some((m) => m.type === 'changed'));
  panel.send({ type: 'toLeaf' });
  await flush();
  assert.equal(paths.pop().entryId, undefined);
});

test('the viewer asks for the totals one request at a time: changes meanwhile share one more', async (t) => {
  let gate = null; // while set, the totals wait until the test lets them through
  const { client, restore } = await openViewer({ stats: () => gate });
  t.after(restore);
  const asked = () => client.requests.filter((r) => r.method === 'pi/getStats').length;
  const before = asked();
  let open;
  gate = new Promise((resolve) => { open = resolve; });
  for (const id of ['x', 'y', 'z']) client.notify('pi/didChange', { uri: SESSION_URI, kind: 'appended', newEntryIds: [id], leafId: id });
  await flush();
  assert.equal(asked(), before + 1, 'one request on its way');
  const first = open;
  gate = new Promise((resolve) => { open = resolve; });
  first();
  await flush();
  assert.equal(asked(), before + 2, 'the changes during it shared one more');
  open();
  await flush();
  assert.equal(asked(), before + 2, 'and no more');
});

test('the viewer\'s buttons: open as text, the tree at an entry, the context at an entry, a line', async (t) => {
  const { panel, state, api, restore } = await openViewer();
  t.after(restore);
  panel.send({ type: 'openText' });
  await flush();
  assert.deepEqual(state.executed.pop(), ['vscode.openWith', Uri.parse(SESSION_URI), 'default']);
  panel.send({ type: 'tree', id: '"u2"' });
  await flush();
  assert.equal(api.tree.uri.toString(), SESSION_URI);
  assert.equal(state.treeViews[0].revealed.pop().element.node.id, 'u2');
  panel.send({ type: 'context', id: '"a1"' });
  await flush();
  assert.match(state.shownDocuments.pop().document.uri.path, /context at a1\.md$/);
});

test('the viewer names each entry\'s line as VS Code does after lone CRs, from one pi/getLineBreaks per file state', async (t) => {
  // pi's line 2 (a1) holds a lone CR: pi's line 5 (u3) is VS Code's 6
  const lineBreaks = { loneCarriageReturns: [{ line: 2, count: 1 }] };
  // (the protection of a session with lone CRs asks on its own: it is tested on its own)
  const { panel, client, state, doc, restore } = await openViewer({ lineBreaks, config: { 'piSession.protectLoneCarriageReturns': false } });
  t.after(restore);
  const asked = () => client.requests.filter((r) => r.method === 'pi/getLineBreaks').length;
  const lines = (page) => page.items.map((i) => /data-action="reveal"[^>]*>([^<]*)</.exec(i.html)[1]);
  const reset = panel.posted.find((m) => m.type === 'reset');
  assert.deepEqual(lines(reset.page), ['line 2', 'line 3', 'line 7 (pi&#39;s line 6)']);
  assert.equal(asked(), 1);
  panel.send({ type: 'load', offset: 0, limit: 100, purpose: 'append' });
  await flush();
  assert.deepEqual(lines(panel.posted.pop().page), ['line 2', 'line 3', 'line 7 (pi&#39;s line 6)']);
  assert.equal(asked(), 1);
  // its button reveals pi's line 5 where VS Code shows it
  state.visibleTextEditors = [{ document: doc }];
  panel.send({ type: 'reveal', line: 5 });
  await until(() => state.shownDocuments.length > 0, 'the line was revealed');
  assert.equal(state.shownDocuments.pop().editor.selection.active.line, 6);
  // the file changed: the next page asks again
  lineBreaks.loneCarriageReturns = [];
  client.notify('pi/didChange', { uri: SESSION_URI, kind: 'appended', newEntryIds: ['z'], leafId: 'z' });
  await flush();
  const before = asked();
  panel.send({ type: 'load', offset: 0, limit: 100, purpose: 'append' });
  await flush();
  assert.deepEqual(lines(panel.posted.pop().page), ['line 2', 'line 3', 'line 6']);
  assert.equal(asked(), before + 1);
});

function sessionFile(dir, name, lines) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

test('a session file too big for extensions opens in the viewer instead of the text editor; other files stay text', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'big-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const filler = `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-05T10:00:00.000Z","message":{"role":"user","content":"${'x'.repeat(3000)}"}}`;
  const big = sessionFile(dir, 'big.jsonl', [HEADER, filler]);
  const bigHeaderless = sessionFile(dir, 'cut.jsonl', [filler]);
  const data = sessionFile(dir, 'data.jsonl', [`{"a":"${'x'.repeat(3000)}"}`]);
  const small = sessionFile(dir, 'small.jsonl', [HEADER]);
  const { state, restore } = await activated({ config: { 'piSession.viewer.openFilesLargerThanMB': 0.002 } }); // 2 KB
  t.after(restore);
  const { TabInputText } = require('vscode');
  const tabs = [big, bigHeaderless, data, small].map((file) => ({ input: new TabInputText(Uri.file(file)), group: { viewColumn: 2 } }));
  state.tabGroups = [{ viewColumn: 2, tabs }];
  state.emitters.tabs.fire({ opened: tabs, closed: [], changed: [] });
  await new Promise((r) => setTimeout(r, 50));
  const opened = state.executed.filter(([id]) => id === 'vscode.openWith').map(([, uri, viewType, column]) => [uri.fsPath, viewType, column]);
  assert.deepEqual(opened, [[big, 'piSession.viewer', 2], [bigHeaderless, 'piSession.viewer', 2]]);
  assert.deepEqual(state.closedTabs, [[tabs[0]], [tabs[1]]]);
  // "Open as Text" is remembered: the file stays text
  await state.commands.get('piSession.openAsText')(Uri.file(big));
  state.executed.length = 0;
  state.emitters.tabs.fire({ opened: [tabs[0]], closed: [], changed: [] });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(state.executed.filter(([id, , viewType]) => id === 'vscode.openWith' && viewType === 'piSession.viewer'), []);
});

test('Branch Here on the shown session takes in the move of the leaf from one levels request with since, no load anew', async (t) => {
  const { api, client, server, state, restore } = await activated({
    other: (method, params) => {
      if (method !== 'pi/branch') return null;
      server.branch(params.entryId); // (the session's leaf moves, nothing appended)
      return { leafId: params.entryId };
    },
  });
  t.after(restore);
  const roots = await children(api);
  const row = (await children(api, roots[1]))[1]; // u2, off the leaf's path
  const asked = client.requests.length;
  await state.commands.get('piSession.branchHere')(row, [row]);
  const sent = client.requests.slice(asked).filter((r) => r.method !== 'pi/branch');
  assert.deepEqual(sent.map((r) => [r.method, r.params.since, r.params.aroundId]), [['pi/getTree', '1', 'u2']]);
  assert.equal(api.tree.marker.node.id, 'u2');
  const marks = (ids) =>
    api.tree.tree.loadedRows().filter((r) => ids.includes(r.node.id)).map((r) => [r.node.id, r.node.onLeafPath, r.node.isLeaf]);
  assert.deepEqual(marks(['u2', 'u3', 'a3']).sort(), [['a3', false, false], ['u2', true, true], ['u3', false, false]]);
});
