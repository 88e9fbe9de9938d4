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
const { fetchWholeTree, TREE_PAGE_SIZE } = require(path.join(out, 'treePages.js'));
const serverCommand = require(path.join(out, 'serverCommand.js'));
const { parseCheckOutput } = require(path.join(out, 'checkReport.js'));
const { renderContextMarkdown } = require(path.join(out, 'contextMarkdown.js'));
const { isSessionHeaderLine } = require(path.join(out, 'detect.js'));
loaded.restore();
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

const node = (id, depth, extra = {}) => ({ id, parentId: null, type: 'message', role: 'user', preview: id, line: 0, depth, isLeaf: false, onLeafPath: false, isBranchPoint: false, ...extra });

const shape = (rows) => rows.map((r) => (r.children.length ? [r.node.id, shape(r.children)] : r.node.id));

test('buildVisibleTree rebuilds the tree from preorder rows and their depth (not from ids)', () => {
  const rows = treeModel.buildVisibleTree([node('a', 0), node('b', 1), node('c', 2), node('b', 1), node('d', 0)]);
  assert.deepEqual(shape(rows), [['a', [['b', ['c']], 'b']], 'd']);
});

test('buildDisplayTree: a chain stays flat, a branch point fans out, each branch nests under its first entry', () => {
  // a - b - c <-- branch point with two branches: d - e and f - g - h (h branches again: i, j)
  const nodes = [node('a', 0), node('b', 1), node('c', 2), node('d', 3), node('e', 4), node('f', 3), node('g', 4), node('h', 5), node('i', 6), node('j', 6)];
  const roots = treeModel.buildDisplayTree(nodes);
  assert.deepEqual(shape(roots), ['a', 'b', ['c', [['d', ['e']], ['f', ['g', ['h', ['i', 'j']]]]]]]);
  const d = roots[2].children[0];
  assert.equal(d.head, true);
  assert.equal(d.parent, roots[2]);
  assert.equal(d.children[0].parent, d);
});

test('buildDisplayTree: several roots are each a branch; an empty tree has no rows', () => {
  assert.deepEqual(shape(treeModel.buildDisplayTree([node('a', 0), node('b', 1), node('c', 2), node('x', 0)])), [['a', ['b', 'c']], 'x']);
  assert.deepEqual(treeModel.buildDisplayTree([]), []);
});

test('buildDisplayTree copes with a 100,000-entry chain', () => {
  const chain = Array.from({ length: 100_000 }, (_, i) => node(`n${i}`, i));
  const roots = treeModel.buildDisplayTree(chain);
  assert.equal(roots.length, 100_000);
  assert.ok(roots.every((r) => r.children.length === 0));
});

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
  assert.match(bad.message, /\/venv\/bin\/python -m pip install pi-session-server/);
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

test('renderContextMarkdown: headings per message, tool calls, summaries, bash and errors', () => {
  const md = renderContextMarkdown({
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'q' }, { type: 'image', mimeType: 'image/png', data: '' }] },
      { role: 'assistant', content: [], model: 'm', errorMessage: 'boom' },
      { role: 'toolResult', toolName: 'bash', isError: true, content: [{ type: 'text', text: 'r```x' }] },
      { role: 'compactionSummary', summary: 'S', tokensBefore: 1 },
      { role: 'bashExecution', command: 'ls', output: 'a', exitCode: 0 },
    ],
    thinkingLevel: 'high',
    model: { provider: 'p', modelId: 'm' },
  }, 'T');
  assert.match(md, /^# T\n/);
  assert.match(md, /- model: p\/m\n- thinking level: high\n- messages: 5/);
  assert.match(md, /## 1\. user\n\nq\n\n\*\[image image\/png\]\*/);
  assert.match(md, /## 2\. assistant \(m\)\n\n\*\*error:\*\* boom/);
  assert.match(md, /## 3\. toolResult \(bash, error\)/);
  assert.match(md, /## 4\. compactionSummary\n\nS/);
  assert.match(md, /\$ ls\na/);
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

test('leafMarker: on the leaf, else on the deepest shown node of the leaf path, else nowhere', () => {
  const a = node('a', 0, { onLeafPath: true });
  const b = node('b', 1, { onLeafPath: true });
  const c = node('c', 1);
  assert.deepEqual(treeModel.leafMarker([a, { ...b, isLeaf: true }, c], 'b').hidden, false);
  assert.deepEqual(treeModel.leafMarker([a, b, c], 'hidden-label'), { node: b, hidden: true });
  assert.equal(treeModel.leafMarker([a, b, c], null), undefined);
});

/** A pi/getTree stand-in over `nodes` that pages as the server does (at most `max` per reply). */
function pager(nodes, max, { leafId = 'x', log = [] } = {}) {
  return async ({ offset, limit }) => {
    log.push([offset, limit]);
    const list = typeof nodes === 'function' ? nodes(log.length) : nodes;
    const page = list.slice(offset, offset + Math.min(limit, max));
    const following = offset + page.length;
    return { leafId, nodes: page, total: list.length, hasMore: following < list.length, ...(following < list.length ? { nextOffset: following } : {}) };
  };
}

test('fetchWholeTree follows nextOffset while hasMore and joins the pages in order', async () => {
  const nodes = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id, i) => node(id, i));
  const log = [];
  const result = await fetchWholeTree(pager(nodes, 3, { log }), 3);
  assert.deepEqual(log, [[0, 3], [3, 3], [6, 3]]);
  assert.deepEqual(result.nodes.map((n) => n.id), ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  assert.equal(result.leafId, 'x');
  assert.equal(result.total, 7);
  assert.equal(TREE_PAGE_SIZE, 50000);
  // the server may cap a page below the asked limit: nextOffset is followed all the same
  const capped = [];
  assert.equal((await fetchWholeTree(pager(nodes, 2, { log: capped }))).nodes.length, 7);
  assert.deepEqual(capped.map(([offset]) => offset), [0, 2, 4, 6]);
});

test('fetchWholeTree: a reply without paging fields is the whole tree; a stuck nextOffset or an empty page ends it', async () => {
  const plain = await fetchWholeTree(async () => ({ leafId: null, nodes: [node('a', 0)] }));
  assert.deepEqual(plain.nodes.map((n) => n.id), ['a']);
  assert.equal(plain.leafId, null);
  let calls = 0;
  const stuck = await fetchWholeTree(async ({ offset }) => {
    calls++;
    return { leafId: null, nodes: [node(`n${offset}`, 0)], total: 5, hasMore: true, nextOffset: offset === 0 ? 1 : 1 };
  });
  assert.deepEqual(stuck.nodes.map((n) => n.id), ['n0', 'n1']);
  assert.equal(calls, 2);
  const nothing = await fetchWholeTree(async () => null);
  assert.deepEqual(nothing, { leafId: null, nodes: [], total: 0 });
});

test('fetchWholeTree starts over when the session changed between pages, and gives up starting over after a few tries', async () => {
  const before = ['a', 'b', 'c', 'd'].map((id, i) => node(id, i));
  const after = ['a', 'b', 'c', 'd', 'e'].map((id, i) => node(id, i));
  const log = [];
  // the second request already sees the grown session: the first page is stale, so it starts over
  const result = await fetchWholeTree(pager((n) => (n === 1 ? before : after), 2, { log }), 2);
  assert.deepEqual(log.map(([offset]) => offset), [0, 2, 0, 2, 4]);
  assert.deepEqual(result.nodes.map((n) => n.id), ['a', 'b', 'c', 'd', 'e']);
  // a session that changes between every two requests: after 3 restarts the pages are joined as they come
  const churn = [];
  const grown = await fetchWholeTree(pager((n) => Array.from({ length: 3 + n }, (_, i) => node(`n${i}`, i)), 2, { log: churn }), 2);
  assert.equal(churn.filter(([offset]) => offset === 0).length, 4);
  assert.ok(grown.nodes.length >= 4);
});
