// The pure helpers: tree nesting and labels, server command resolution, check output, context Markdown,
// and the language contribution's patterns.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { loadExtension } = require('./stubs');

const loaded = loadExtension(); // compiled modules that import vscode need the stub too
const out = path.join(__dirname, '..', '..', 'out', 'src');
const treeModel = require(path.join(out, 'treeModel.js'));
const { LazyTree, hasChildContainer, isTreeChanged } = require(path.join(out, 'lazyTree.js'));
const serverCommand = require(path.join(out, 'serverCommand.js'));
const { parseCheckOutput } = require(path.join(out, 'checkReport.js'));
const { editorLineOf, lineBreaksOf, lineName, linesASaveSplits, piLineOf } = require(path.join(out, 'lineBreaks.js'));
const { isSessionHeaderLine, isEntryLine, looksLikeSession } = require(path.join(out, 'detect.js'));
const render = require(path.join(out, 'viewer', 'render.js'));
const { makeTreeServer, chainEntries } = require('./fakeTree');
loaded.restore();
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

const node = (id, depth, extra = {}) => ({ id, parentId: null, type: 'message', role: 'user', preview: id, line: 0, depth, isLeaf: false, onLeafPath: false, isBranchPoint: false, ...extra });

test('entryText: role prefix for messages, preview alone for other types, flattened and cut', () => {
  assert.equal(treeModel.entryText(node('x', 0, { preview: 'line1\nline2' })), 'user: line1 line2');
  assert.equal(treeModel.entryText(node('x', 0, { preview: 'user: already' })), 'user: already');
  assert.equal(treeModel.entryText(node('x', 0, { role: 'assistant', preview: '' })), 'assistant: (no content)');
  assert.equal(treeModel.entryText({ ...node('x', 0, { preview: '[model: m]' }), role: undefined, type: 'model_change' }), '[model: m]');
  assert.equal(treeModel.entryText({ ...node('x', 0, { preview: '' }), role: undefined, type: 'future_entry' }), '[future_entry]');
  assert.equal(treeModel.entryText(node('x', 0, { preview: 'y'.repeat(300) })).length, 'user: '.length + 120);
  assert.equal(treeModel.entryLabel(node('x', 0, { label: 'cp' })), '[cp] user: x');
  assert.equal(treeModel.idText(5), '5');
});

test('skippedNotice: what the tree view says of lines pi skips, naming the first one', () => {
  assert.equal(treeModel.skippedNotice(undefined), undefined);
  assert.equal(treeModel.skippedNotice({ skippedLines: 0 }), undefined);
  assert.equal(treeModel.skippedNotice({}), undefined); // a server without skippedLines
  assert.equal(
    treeModel.skippedNotice({ skippedLines: 1, skipped: [{ line: 7, column: 90, kind: 'malformed', message: 'invalid JSON: Unterminated string' }] }),
    'pi skips 1 line of this file, so the tree lacks what it holds: line 8 (invalid JSON: Unterminated string). ' +
      'The Problems panel lists it with the repairs.',
  );
  const glued = { line: 1, kind: 'glued', message: '2 lines glued together (entry `g1`, then entry `g2`)\n: pi skips the whole line' };
  assert.equal(
    treeModel.skippedNotice({ skippedLines: 3, skipped: [glued] }),
    'pi skips 3 lines of this file, so the tree lacks what they hold: line 2 (2 lines glued together (entry `g1`, then ' +
      'entry `g2`) : pi skips the whole line), and 2 more. The Problems panel lists them with the repairs.',
  );
  assert.equal(
    treeModel.skippedNotice({ skippedLines: 2 }),
    'pi skips 2 lines of this file, so the tree lacks what they hold. The Problems panel lists them with the repairs.',
  );
});

test('skippedNotice after lone CRs: the line as VS Code and its Problems panel number it, pi\'s beside it', () => {
  const info = { skippedLines: 2, skipped: [{ line: 7, column: 0, kind: 'malformed', message: 'invalid JSON' }] };
  const breaks = [{ line: 2, count: 2 }]; // pi's line 8 (1-based) is VS Code's line 10
  assert.equal(
    treeModel.skippedNotice(info, breaks),
    "pi skips 2 lines of this file, so the tree lacks what they hold: line 10 (invalid JSON; pi's line 8), and 1 more. " +
      'The Problems panel lists them with the repairs.',
  );
  assert.match(treeModel.skippedNotice(info, [{ line: 7, count: 3 }]), /: line 8 \(invalid JSON\), and/); // (its own lone CRs are below its start)
  assert.equal(treeModel.firstSkippedLine(info), 7);
  assert.equal(treeModel.firstSkippedLine({ skippedLines: 2 }), undefined);
});

const probes = (overrides = {}) => ({
  commandSetting: [],
  pythonPathSetting: '',
  pythonExtensionInterpreter: async () => undefined,
  canImport: async () => ({ ok: true }),
  findOnPath: () => undefined,
  ...overrides,
});

test('resolveCli: the command setting wins over everything', async () => {
  const r = await serverCommand.resolveCli(probes({ commandSetting: ['/x/pi-session'], pythonPathSetting: '/py', findOnPath: () => '/bin/pi-session' }));
  assert.equal(r.ok, true);
  assert.deepEqual([r.cli.command, ...r.cli.args], ['/x/pi-session']);
  assert.deepEqual(serverCommand.withSubcommand(r.cli, 'serve'), { command: '/x/pi-session', args: ['serve'] });
});

test('resolveCli: pythonPath runs the module; a broken pythonPath is an error naming the fix', async () => {
  const ok = await serverCommand.resolveCli(probes({ pythonPathSetting: '/venv/bin/python' }));
  assert.deepEqual(serverCommand.withSubcommand(ok.cli, 'serve'), { command: '/venv/bin/python', args: ['-m', 'pi_session_server', 'serve'] });
  const bad = await serverCommand.resolveCli(probes({ pythonPathSetting: '/venv/bin/python', canImport: async () => ({ ok: false, detail: 'ModuleNotFoundError' }), findOnPath: () => '/bin/pi-session' }));
  assert.equal(bad.ok, false);
  // the command to run is quoted whole, the note on the path after it
  assert.match(bad.message, /`\/venv\/bin\/python -m pip install \/path\/to\/pi-session-server` \(the path of a clone/);
  assert.doesNotMatch(bad.message, /pip install pi-session-server/);
});

test('resolveCli: a pythonPath that cannot be run says so, and does not ask to install into it', async () => {
  const missing = await serverCommand.resolveCli(probes({
    pythonPathSetting: '/nowhere/python3',
    canImport: async () => ({ ok: false, cannotRun: true, detail: 'no such file' }),
    findOnPath: () => '/bin/pi-session',
  }));
  assert.equal(missing.ok, false);
  assert.match(missing.message, /"piSession\.server\.pythonPath" is \/nowhere\/python3, which cannot be run \(no such file\)/);
  assert.doesNotMatch(missing.message, /pip install/);
});

test('canImport tells a Python that is not there, or not executable, from one without the server', async () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'python-'));
  assert.deepEqual(await serverCommand.canImport(path.join(dir, 'python3')), { ok: false, cannotRun: true, detail: 'no such file' });
  const plain = path.join(dir, 'plain');
  fs.writeFileSync(plain, '');
  if (process.getuid?.() !== 0) assert.deepEqual(await serverCommand.canImport(plain), { ok: false, cannotRun: true, detail: 'not an executable file' });
  const noServer = path.join(dir, 'python-without');
  fs.writeFileSync(noServer, '#!/bin/sh\necho "ModuleNotFoundError: No module named pi_session_server" >&2\nexit 1\n', { mode: 0o755 });
  assert.deepEqual(await serverCommand.canImport(noServer), { ok: false, detail: 'ModuleNotFoundError: No module named pi_session_server' });
});

test('resolveCli: the Python extension interpreter is used when it has the server, else PATH', async () => {
  const withModule = await serverCommand.resolveCli(probes({ pythonExtensionInterpreter: async () => '/ext/python', findOnPath: () => '/bin/pi-session' }));
  assert.equal(withModule.cli.command, '/ext/python');
  const without = await serverCommand.resolveCli(probes({
    pythonExtensionInterpreter: async () => '/ext/python',
    canImport: async () => ({ ok: false, detail: 'No module named pi_session_server' }),
    findOnPath: (name) => (name === 'pi-session' ? '/bin/pi-session' : undefined),
  }));
  assert.equal(without.cli.command, '/bin/pi-session');
  assert.equal(without.cli.source, 'PATH');
  assert.match(without.notes[0], /\/ext\/python has no pi_session_server/);
  const none = await serverCommand.resolveCli(probes({ canImport: async () => ({ ok: false }) }));
  assert.equal(none.ok, false);
  assert.equal(none.message, serverCommand.NOT_FOUND_MESSAGE);
  // the server is not on any package index: the messages name the install that works
  assert.doesNotMatch(none.message, /pip install pi-session-server/);
  assert.match(none.message, /`pip install \/path\/to\/pi-session-server` \(.*pip install -e \./);
});

test('findOnPath finds an executable file and ignores directories and non-executables', () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'path-'));
  fs.writeFileSync(path.join(dir, 'plain'), '');
  fs.writeFileSync(path.join(dir, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
  fs.mkdirSync(path.join(dir, 'folder'));
  assert.equal(serverCommand.findOnPath('tool', { PATH: dir }), path.join(dir, 'tool'));
  if (process.getuid?.() !== 0) assert.equal(serverCommand.findOnPath('plain', { PATH: dir }), undefined);
  assert.equal(serverCommand.findOnPath('folder', { PATH: dir }), undefined);
});

test('parseCheckOutput reads the CLI report: 1-based lines and columns, severities by name', () => {
  // as `pi-session check --json` prints it
  const out = JSON.stringify({
    files: [
      { path: '/s/a.jsonl', summary: { error: 1 }, diagnostics: [{ line: 8, column: 153, endColumn: 160, severity: 'error', code: 'PI001', message: 'invalid JSON' }] },
      { path: '/s/b.jsonl', summary: { error: 0 }, diagnostics: [{ line: 1, severity: 'warning', message: 'whole line' }] },
    ],
    totals: { files: 2 },
  });
  const [a, b] = parseCheckOutput(out);
  assert.deepEqual(a.diagnostics, [{ range: { start: { line: 7, character: 152 }, end: { line: 7, character: 159 } }, severity: 1, message: 'invalid JSON', code: 'PI001' }]);
  assert.equal(b.diagnostics[0].severity, 2);
  assert.deepEqual(b.diagnostics[0].range.start, { line: 0, character: 0 });
  assert.equal(b.diagnostics[0].range.end.character, Number.MAX_SAFE_INTEGER);
});

test('parseCheckOutput also takes LSP ranges, a bare array and JSON Lines', () => {
  const diag = { range: { start: { line: 1, character: 2 }, end: { line: 1, character: 5 } }, severity: 2, message: 'm' };
  assert.deepEqual(parseCheckOutput(JSON.stringify({ files: [{ path: '/a', diagnostics: [diag] }] })), [{ path: '/a', uri: undefined, diagnostics: [diag] }]);
  assert.equal(parseCheckOutput(JSON.stringify([{ uri: 'file:///b', diagnostics: [] }]))[0].uri, 'file:///b');
  const lines = `${JSON.stringify({ file: '/c', problems: [{ line: 4, severity: 'information', message: 'x' }] })}\n${JSON.stringify({ path: '/d', diagnostics: [] })}\n`;
  const parsed = parseCheckOutput(lines);
  assert.equal(parsed.length, 2);
  assert.equal(parsed[0].diagnostics[0].severity, 3);
  assert.equal(parsed[0].diagnostics[0].range.start.line, 3);
  assert.deepEqual(parseCheckOutput(''), []);
});

test('the language contribution: file pattern for ~/.pi/agent/sessions and a first-line rule for headers', () => {
  const language = manifest.contributes.languages.find((l) => l.id === 'pi-session');
  assert.deepEqual(language.filenamePatterns, ['**/.pi/agent/sessions/**/*.jsonl']);
  const firstLine = new RegExp(language.firstLine);
  assert.ok(firstLine.test('{"type":"session","version":3,"id":"x"}'));
  assert.ok(firstLine.test('{"version":1,"type": "session","id":"x"}'));
  assert.ok(!firstLine.test('{"type":"message","id":"x"}'));
  assert.ok(!firstLine.test('[1,2]'));
  assert.ok(manifest.activationEvents.includes('onLanguage:jsonl'));
});

test('isSessionHeaderLine needs an object with type "session" and a string id', () => {
  assert.equal(isSessionHeaderLine('{"type":"session","id":"a"}'), true);
  assert.equal(isSessionHeaderLine('  {"id":"a","type":"session"}  '), true);
  assert.equal(isSessionHeaderLine('{"type":"session","id":5}'), false);
  assert.equal(isSessionHeaderLine('{"type":"session","id":"a"'), false);
  assert.equal(isSessionHeaderLine('{"type":"message","id":"a"}'), false);
  assert.equal(isSessionHeaderLine(''), false);
});


// ---- detection of damaged sessions ------------------------------------------------------------

const HEADER_LINE = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}';
const entry = (id, parent, extra = '') =>
  `{"type":"message","id":"${id}","parentId":${parent ? `"${parent}"` : 'null'},"timestamp":"2026-01-01T00:00:0${id.length}.000Z","message":{"role":"user","content":"x"}${extra}}`;

test('looksLikeSession: a header on any of the first lines, or pi entries without one; ordinary JSON Lines are not', () => {
  assert.equal(looksLikeSession([HEADER_LINE, entry('a1', null)]), true);
  assert.equal(looksLikeSession([entry('a1', null), HEADER_LINE, entry('a2', 'a1')]), true); // header moved down
  assert.equal(looksLikeSession([entry('a1', null), entry('a2', 'a1')]), true); // no header at all
  assert.equal(looksLikeSession(['{"broken', entry('a1', null)]), true); // a cut-off line first
  assert.equal(looksLikeSession([`\uFEFF${HEADER_LINE}`]), true); // a BOM: the server reports it
  assert.equal(looksLikeSession(['{"type":"event","id":"x"}', '{"type":"event","id":"y"}']), false);
  assert.equal(looksLikeSession(['{"type":"message","id":"x"}']), false); // no parentId, no timestamp
  assert.equal(looksLikeSession([entry('a1', null), '{"a":1}', '{"b":2}', '{"c":3}']), false); // mostly other data
  assert.equal(looksLikeSession(['', '  ', 'not json']), false);
  assert.equal(looksLikeSession([...Array(25).fill('{"a":1}'), HEADER_LINE]), false); // only the first 20 lines count
  assert.equal(isEntryLine('{"type":"context_edit","id":"e","parentId":"a","timestamp":"t","targetId":"a","replacement":null}'), true);
});

// ---- the lazy tree ------------------------------------------------------------------------------

/** a0 .. a(n-1) in a chain; the leaf at the end. */
function lazyChain(n, pageSize) {
  const entries = chainEntries(n);
  const server = makeTreeServer(entries, entries[n - 1].id);
  return { server, tree: new LazyTree(async (params) => server.getTree(params), pageSize), entries };
}

test('LazyTree: a 10,000-entry chain opens on the page around the leaf, in two requests', async () => {
  const { server, tree, entries } = lazyChain(10_000, 50);
  await tree.load(tree.top);
  const leaf = await tree.locate(entries[9_999].id);
  assert.equal(leaf.node.id, entries[9_999].id);
  assert.equal(leaf.node.isLeaf, true);
  assert.equal(server.log.length, 2);
  assert.ok(server.log.every((p) => p.chain === true && p.limit <= 51));
  const items = tree.top.items();
  assert.equal(items[0].kind, 'more'); // "load earlier" above the window around the leaf
  assert.equal(items[0].direction, 'before');
  assert.equal(tree.top.total, 10_000);
  assert.ok(tree.top.rows.length <= 100);
  assert.equal(items[items.length - 1], leaf); // nothing after the leaf
});

test('LazyTree: every window after the first is asked with its revision; one of a changed session is refused', async () => {
  const { server, tree } = lazyChain(300, 40);
  await tree.load(tree.top);
  assert.equal(server.log[0].revision, undefined);
  assert.equal(tree.revision, '1');
  await tree.loadMore(tree.top, 'after');
  await tree.locate('a299');
  assert.ok(server.log.slice(1).every((p) => p.revision === '1'));
  server.revision = '2'; // pi appended: the next page is of another tree
  await assert.rejects(tree.loadMore(tree.top, 'before'), (e) => isTreeChanged(e) && e.data.revision === '2');
  assert.equal(isTreeChanged(new Error('another failure')), false);
  tree.reset(); // loaded anew: its first window gives the new revision
  await tree.load(tree.top);
  assert.equal(tree.revision, '2');

  const branchy = makeTreeServer([...chainEntries(30), { id: 'b', parent: 'u10' }], 'a29');
  const levelled = new LazyTree(async (p) => branchy.getTree(p), 5, async (p) => branchy.getLevels(p));
  await levelled.load(levelled.top);
  await levelled.locate('a29');
  assert.equal(branchy.log[1].levels, true);
  assert.equal(branchy.log[1].revision, '1');
  branchy.revision = '2';
  await assert.rejects(levelled.locate('b'), isTreeChanged);
});

test('LazyTree: "load more" extends the window either way and keeps the rows already shown', async () => {
  const { tree } = lazyChain(300, 40);
  await tree.load(tree.top);
  assert.deepEqual([tree.top.start, tree.top.end, tree.top.total], [0, 40, 300]);
  const first = tree.top.rows[0];
  await tree.loadMore(tree.top, 'after');
  assert.deepEqual([tree.top.start, tree.top.end], [0, 80]);
  assert.equal(tree.top.rows[0], first);
  assert.deepEqual(tree.top.rows.map((r) => r.index), Array.from({ length: 80 }, (_, i) => i));
  await tree.locate('a299'); // a window that does not touch the loaded one replaces it
  assert.equal(tree.top.end, 300);
  const start = tree.top.start;
  await tree.loadMore(tree.top, 'before');
  assert.equal(tree.top.start, start - 40);
  assert.deepEqual(tree.top.rows.map((r) => r.index), Array.from({ length: 300 - tree.top.start }, (_, i) => tree.top.start + i));
});

test("LazyTree: branches nest as in pi's /tree, each level loaded on expand; the leaf is found through them", async () => {
  // u0 - a1 (branch point: u2 - a3 (branch point: u4 leaf, u6), u5 - a7)
  const entries = [
    { id: 'u0', parent: null }, { id: 'a1', parent: 'u0', role: 'assistant' },
    { id: 'u2', parent: 'a1' }, { id: 'a3', parent: 'u2', role: 'assistant' },
    { id: 'u4', parent: 'a3' }, { id: 'u5', parent: 'a1' }, { id: 'u6', parent: 'a3' }, { id: 'a7', parent: 'u5', role: 'assistant' },
  ];
  const server = makeTreeServer(entries, 'u4');
  const tree = new LazyTree(async (p) => server.getTree(p), 10);
  await tree.load(tree.top);
  assert.deepEqual(tree.top.rows.map((r) => r.node.id), ['u0', 'a1']); // the root's chain ends at the branch point
  const leaf = await tree.locate('u4');
  assert.equal(leaf.node.id, 'u4');
  // the way up: u4 is a head of a3's branches; a3 continues the chain under the head u2; u2 is a branch of a1
  const a3 = leaf.container.owner;
  assert.equal(a3.node.id, 'a3');
  assert.equal(a3.container.kind, 'chain');
  const u2 = a3.container.owner;
  assert.equal(u2.node.id, 'u2');
  assert.equal(u2.head, true);
  assert.equal(u2.container.owner.node.id, 'a1');
  assert.equal(u2.container.owner.container, tree.top);
  assert.deepEqual(u2.container.rows.map((r) => r.node.id), ['u2', 'u5']); // the leaf's branch first
  assert.equal(hasChildContainer(u2.container.rows[1]), true); // u5 (a head) holds its continuation a7
  const a7 = tree.childContainer(u2.container.rows[1]);
  await tree.ensureLoaded(a7);
  assert.deepEqual(a7.rows.map((r) => r.node.id), ['a7']);
  assert.equal(hasChildContainer(tree.top.rows[0]), false); // a chain row with one child: the next row
  const keys = tree.loadedRows().map((r) => r.key);
  assert.equal(new Set(keys).size, keys.length);
});

test('LazyTree: several roots are listed at the top, each the head of its branch', async () => {
  const entries = [{ id: 'r1', parent: null }, { id: 'x1', parent: 'r1' }, { id: 'r2', parent: 'gone' }, { id: 'x2', parent: 'r2' }];
  const server = makeTreeServer(entries, 'x2');
  const tree = new LazyTree(async (p) => server.getTree(p), 10);
  await tree.load(tree.top);
  assert.equal(tree.top.roots, true);
  assert.deepEqual(tree.top.rows.map((r) => [r.node.id, r.head]), [['r2', true], ['r1', true]]);
  const leaf = await tree.locate('x2');
  assert.equal(leaf.container.owner.node.id, 'r2');
});

test('iconFor: a codicon per role and entry type', () => {
  const icon = (type, role) => treeModel.iconFor({ type, role });
  assert.equal(icon('message', 'user'), 'account');
  assert.equal(icon('message', 'assistant'), 'hubot');
  assert.equal(icon('message', 'toolResult'), 'tools');
  assert.equal(icon('message', 'bashExecution'), 'terminal');
  assert.equal(icon('compaction'), 'fold');
  assert.equal(icon('branch_summary'), 'git-merge');
  assert.equal(icon('context_edit'), 'diff');
  assert.equal(icon('label'), 'tag');
  assert.equal(icon('model_change'), 'chip');
  assert.equal(icon('future_entry'), 'circle-outline');
  assert.equal(icon('message', 'madeUp'), 'comment-discussion');
});

// ---- the viewer's HTML ------------------------------------------------------------------------------

const item = (entry, extra = {}) => ({ entry, childIds: [], line: 3, ...extra });
const msg = (role, message, id = 'e1') => ({ type: 'message', id, parentId: 'p', timestamp: '2026-01-05T10:00:00.000Z', message: { role, ...message } });
const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>';

test('renderItem escapes everything from the file: text, tool calls, results, labels, ids, names', () => {
  const pieces = [
    render.renderItem(item(msg('user', { content: `hello ${HOSTILE}` })), 0),
    render.renderItem(item(msg('assistant', { content: [
      { type: 'text', text: HOSTILE },
      { type: 'thinking', thinking: HOSTILE },
      { type: 'toolCall', id: 't1', name: HOSTILE, arguments: { command: HOSTILE } },
    ], provider: HOSTILE, model: 'm', usage: { input: 1 } })), 1),
    render.renderItem(item(msg('toolResult', { toolName: HOSTILE, content: [{ type: 'text', text: HOSTILE }] }), { label: HOSTILE }), 2),
    render.renderItem(item({ type: 'custom_message', id: HOSTILE, customType: HOSTILE, content: HOSTILE }), 3),
    render.renderItem(item({ type: HOSTILE, id: 'x' }), 4),
    render.renderItem(item(msg('bashExecution', { command: HOSTILE, output: HOSTILE, exitCode: HOSTILE })), 5),
    render.renderItem(item({ type: 'compaction', id: 'c', summary: HOSTILE, tokensBefore: 5 }), 6),
    render.renderItem(item({ type: 'label', id: 'l', targetId: HOSTILE, label: HOSTILE }), 7),
    render.renderItem(item(msg('user', { content: `[x](javascript:alert(1)) <a href="javascript:alert(3)">y</a>` })), 8),
  ].join('\n');
  assert.doesNotMatch(pieces, /<script/i);
  assert.doesNotMatch(pieces, /<img src=x/i);
  assert.doesNotMatch(pieces, /href="javascript:/i);
  assert.doesNotMatch(pieces, /<a href="javascript/i);
  assert.match(pieces, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(pieces, /&#60;script&#62;|&lt;script&gt;/);
});

test('renderItem names the entry\'s line as VS Code numbers it (pi\'s beside it after lone CRs); its button keeps pi\'s', () => {
  const plain = render.renderItem(item(msg('user', { content: 'x' }), { line: 5 }), 0);
  assert.match(plain, /<button class="link" data-action="reveal" data-line="5" title="[^"]*">line 6<\/button>/);
  const shifted = render.renderItem(item(msg('user', { content: 'x' }), { line: 5 }), 0, new Map(), [{ line: 1, count: 1 }, { line: 3, count: 2 }]);
  assert.match(shifted, /<button class="link" data-action="reveal" data-line="5" title="[^"]*">line 9 \(pi&#39;s line 6\)<\/button>/);
});

test('renderItem: Markdown, collapsible thinking / tool calls / tool results, images, the turn facts', () => {
  const assistant = render.renderItem(item(msg('assistant', {
    content: [
      { type: 'thinking', thinking: 'I should *look*' },
      { type: 'text', text: 'Here is **bold** and `code`' },
      { type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'src/a.py' } },
    ],
    provider: 'anthropic', model: 'claude-sonnet-4-5', stopReason: 'toolUse',
    usage: { input: 12345, output: 678, cacheRead: 1000, cacheWrite: 0, totalTokens: 14023, cost: { total: 0.0123 } },
  })), 4);
  assert.match(assistant, /<details class="thinking"><summary>Thinking<\/summary>/);
  assert.match(assistant, /<strong>bold<\/strong> and <code>code<\/code>/);
  assert.match(assistant, /<details class="tool-call"><summary><span class="kind">tool call<\/span> <span class="tool-name">read<\/span> <span class="tool-args">src\/a.py<\/span>/);
  assert.match(assistant, /anthropic\/claude-sonnet-4-5<\/span> · in 12,345 · out 678 · cache read 1,000 · <span class="cost">\$0\.01<\/span>/);
  assert.match(assistant, /data-index="4"/);
  const result = render.renderItem(item(msg('toolResult', { toolName: 'bash', isError: true, content: [{ type: 'text', text: 'a\nb' }, { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }] })), 5);
  assert.match(result, /<details class="tool-result error"><summary><span class="kind">tool error<\/span> <span class="tool-name">bash<\/span> <span class="tool-args">2 lines<\/span>/);
  assert.match(result, /<img alt="image \(image\/png\)" src="data:image\/png;base64,iVBORw0KGgo=">/);
  const bad = render.renderItem(item(msg('user', { content: [{ type: 'image', mimeType: 'text/html', data: 'PGI+' }, { type: 'image', mimeType: 'image/png', data: '"><script>' }] })), 6);
  assert.doesNotMatch(bad, /<img/);
  assert.match(bad, /\[image text\/html\]/);
  const long = render.renderItem(item(msg('user', { content: 'x'.repeat(render.MAX_TEXT + 50) })), 7);
  assert.match(long, /… 50 more characters/);
});

test('renderItem: compactions, branch summaries and context edits are separators; a branch switcher where siblings are', () => {
  const compaction = render.renderItem(item({ type: 'compaction', id: 'c1', summary: 'did **things**', tokensBefore: 48000 }), 0);
  assert.match(compaction, /class="entry separator compaction"/);
  assert.match(compaction, /Compaction · 48,000 tokens before/);
  const summary = render.renderItem(item({ type: 'branch_summary', id: 'b1', fromId: 'x', summary: 'tried A' }), 1);
  assert.match(summary, /class="entry separator branch-summary"/);
  const omitted = render.renderItem(item({ type: 'context_edit', id: 'k', targetId: 't9', replacement: null }), 2);
  assert.match(omitted, /Context edit · t9 left out of the context/);
  const replaced = render.renderItem(item({ type: 'context_edit', id: 'k2', targetId: 't9', replacement: { content: 'short' } }), 3);
  assert.match(replaced, /t9 replaced in the context/);
  const forked = render.renderItem(item(msg('user', { content: 'B' }, 'u3'), { siblingIds: ['u2', 'u3', 'u4'] }), 9);
  assert.match(forked, /<div class="switcher" data-index="9">.* branch 2 of 3 /);
  assert.match(forked, /data-action="switch" data-target="&#34;u2&#34;" title="previous branch"/);
  assert.match(forked, /data-action="switch" data-target="&#34;u4&#34;" title="next branch"/);
  const first = render.renderItem(item(msg('user', { content: 'A' }, 'u2'), { siblingIds: ['u2', 'u3'] }), 9);
  assert.match(first, /<button disabled title="previous branch">/);
  const point = render.renderItem(item(msg('assistant', { content: [] }, 'a1'), { childIds: ['u2', 'u3'] }), 8);
  assert.match(point, /2 branches/);
});

test('renderStats: counts, tokens, cost and models of the whole session', () => {
  const html = render.renderStats({
    entryCount: 45292, types: {}, roles: { user: 10, assistant: 20, toolResult: 15 }, branchPoints: 3, leaves: 4,
    tokens: { input: 1500000, output: 2000, cacheRead: 100, cacheWrite: 0, totalTokens: 1502000 }, cost: 12.3456,
    models: { 'anthropic/<b>m</b>': { turns: 20, totalTokens: 1502000, cost: 12.3456 } },
    firstTimestamp: '2026-01-05T10:00:00.000Z', lastTimestamp: '2026-01-05T12:00:00.000Z',
  });
  assert.match(html, /45,292 entries/);
  assert.match(html, /10 user · 20 assistant · 15 tool results/);
  assert.match(html, /3 branch points · 4 leaves/);
  assert.match(html, /in 1,500,000 · out 2,000/);
  assert.match(html, /\$12\.35/);
  assert.match(html, /anthropic\/&#60;b&#62;m&#60;\/b&#62; \(20 turns, \$12\.35\)/);
});

/** A chain with a branch point every `step` entries down to the leaf: u0 .. and a side entry s<i> at each. */
function branchyEntries(branchPoints, step) {
  const entries = [];
  let parent = null;
  for (let i = 0; i < branchPoints * step; i++) {
    const id = `m${i}`;
    entries.push({ id, parent, role: i % 2 ? 'assistant' : 'user' });
    if (i % step === step - 1) entries.push({ id: `s${i}`, parent: id });
    parent = id;
  }
  return entries;
}

test('LazyTree: with levels the way down to the leaf is one request, the same rows as level by level', async () => {
  const entries = branchyEntries(40, 3);
  const leaf = entries[entries.length - 1].id;
  const byLevel = makeTreeServer(entries, leaf);
  const oneByOne = new LazyTree(async (p) => byLevel.getTree(p), 5);
  const server = makeTreeServer(entries, leaf);
  const tree = new LazyTree(async (p) => server.getTree(p), 5, async (p) => server.getLevels(p));
  const found = await tree.locate(leaf);
  const expected = await oneByOne.locate(leaf);
  assert.equal(found.node.id, leaf);
  assert.equal(server.log.length, 1); // one request
  assert.ok(byLevel.log.length > 70); // a request per level: the top, then branches and a chain per branch point
  const shape = (t) => t.loadedRows().map((r) => [r.key, r.node.id, r.index, r.container.kind, r.container.start, r.container.total]);
  assert.deepEqual(shape(tree), shape(oneByOne));
  assert.equal(tree.leafId, leaf);
  let row = found;
  let depth = 0;
  while (row.container.owner) {
    row = row.container.owner;
    depth++;
  }
  assert.equal(row.container, tree.top);
  assert.ok(depth >= 70);
});

test('LazyTree: levels that stop short, or another layout, are finished level by level', async () => {
  const entries = branchyEntries(10, 2);
  const leaf = entries[entries.length - 1].id;
  const server = makeTreeServer(entries, leaf);
  const short = new LazyTree(async (p) => server.getTree(p), 5, async (p) => server.getLevels(p, 4));
  const found = await short.locate(leaf);
  assert.equal(found.node.id, leaf);
  const asked = server.log.filter((p) => !p.levels).length;
  assert.ok(asked > 0 && asked < 20 - 4 + 2); // the levels after the 4th, one request each
  const reference = makeTreeServer(entries, leaf);
  const plain = new LazyTree(async (p) => reference.getTree(p), 5);
  await plain.locate(leaf);
  const ids = (t) => t.loadedRows().map((r) => [r.key, r.node.id]);
  assert.deepEqual(ids(short), ids(plain));
  // a reply whose levels are not this tree's windows (another server's layout): asked level by level
  const odd = makeTreeServer(entries, leaf);
  const other = new LazyTree(async (p) => odd.getTree(p), 5, async (p) => {
    const reply = odd.getLevels(p);
    reply.levels[1] = { ...reply.levels[1], kind: 'chain' };
    return reply;
  });
  assert.equal((await other.locate(leaf)).node.id, leaf);
  assert.deepEqual(ids(other), ids(plain));
});

test('lineBreaks: pi\'s lines ("\\n" only) against VS Code\'s ("\\r\\n", "\\r", "\\n") both ways, from the lone CRs of each line', () => {
  const text = 'h\na\rb\nc\r\nd\r\re\rf\ng\nh\r';
  const piLines = text.split('\n');
  // each line's lone CRs: the "\r" of a "\r\n" is none; the last line's final "\r" is one
  const reply = {
    loneCarriageReturns: piLines
      .map((raw, line) => ({ line, count: (line === piLines.length - 1 ? raw : raw.replace(/\r$/, '')).split('\r').length - 1 }))
      .filter((b) => b.count > 0)
      .reverse(), // (any order: sorted)
  };
  const breaks = lineBreaksOf(reply);
  assert.deepEqual(breaks.map((b) => b.line), [1, 3, 5]);
  // VS Code's lines, each with pi's line it is part of, and where each pi line starts
  const editorOf = [];
  let at = 0;
  const starts = [];
  piLines.forEach((raw, n) => {
    starts.push(at);
    const inside = (n === piLines.length - 1 ? raw : raw.replace(/\r$/, '')).split('\r').length;
    for (let k = 0; k < inside; k++) editorOf[at++] = n;
  });
  assert.equal(editorOf.length, text.split(/\r\n|\r|\n/).length);
  editorOf.forEach((n, editorLine) => assert.equal(piLineOf(editorLine, breaks), n, `editor line ${editorLine}`));
  starts.forEach((start, n) => assert.equal(editorLineOf(n, breaks), start, `pi line ${n}`));
  // past the end, and a reply of another shape (an older server): lines as they are
  assert.equal(piLineOf(editorOf.length + 3, breaks), piLines.length + 3);
  for (const other of [null, {}, { loneCarriageReturns: [{ line: -1, count: 1 }, { line: 2, count: 0 }, 'x'] }]) {
    assert.deepEqual(lineBreaksOf(other), []);
    assert.equal(piLineOf(7, lineBreaksOf(other)), 7);
  }
});

test('lineName: a line named as VS Code numbers it, and pi\'s number beside it where they differ', () => {
  const breaks = [{ line: 2, count: 2 }];
  assert.equal(lineName(0, []), 'line 1');
  assert.equal(lineName(2, breaks), 'line 3'); // (the line holding them starts where pi's does)
  assert.equal(lineName(3, breaks), "line 6 (pi's line 4)");
  assert.equal(lineName(3, breaks, 'invalid JSON'), "line 6 (invalid JSON; pi's line 4)");
  assert.equal(lineName(1, breaks, 'invalid JSON'), 'line 2 (invalid JSON)');
  assert.equal(lineName(1, breaks, ''), 'line 2');
});

test('linesASaveSplits: the lines whose lone CRs a save would make two lines pi reads, not a CR at either end of one', () => {
  // the file on disk, as pi reads it (lines end at "\n"), and VS Code's lines of it (a lone CR ends one too)
  const text = [
    '{"type":"session"}',
    '{"type":"message",\r"id":"a1"}', // inside an entry: a save makes two broken lines of it
    '\r{"id":"a2"}', // at the start of the line: a blank line pi skips, then the entry
    '{"id":"a3"} \r\t', // at its end, with white space after it
    '{"id":"a4",\r\r"x":1,\r"y":2}', // three inside one entry
    '{"id":"a5"}\r', // the file's last line, without "\n": VS Code's last line is empty
  ].join('\n');
  const piLines = text.split('\n');
  const breaks = lineBreaksOf({
    loneCarriageReturns: piLines.map((raw, line) => ({ line, count: raw.split('\r').length - 1 })).filter((b) => b.count > 0),
  });
  const editorLines = text.split(/\r\n|\r|\n/);
  const split = linesASaveSplits(breaks, (n) => editorLines[n]);
  assert.deepEqual(split, [{ line: 1, count: 1 }, { line: 4, count: 3 }]);
  // a text shorter than the breaks say (the document changed since): what is not there holds nothing
  assert.deepEqual(linesASaveSplits([{ line: 1, count: 1 }], (n) => ['h', 'x'][n]), []);
  assert.deepEqual(linesASaveSplits([], () => 'x'), []);
});
