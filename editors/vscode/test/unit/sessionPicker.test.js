// Open Session...: the items of pi's sessions, the listing requests, and what is opened or said.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { loadExtension, fakeContext, Uri } = require('./stubs');

const out = path.join(__dirname, '..', '..', 'out', 'src');
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
const loaded = loadExtension(); // the picker module imports vscode
const picker = require(path.join(out, 'sessionPicker.js'));
loaded.restore();

const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const ago = (ms) => new Date(NOW - ms).toISOString();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A session as pi/list answers it with `text: "first"`. */
function listed(name, extra = {}) {
  return {
    path: `/agent/sessions/--w-proj--/${name}.jsonl`, id: name, cwd: '/w/proj', created: ago(DAY), modified: ago(HOUR),
    messageCount: 4, firstMessage: `first message of ${name}`, ...extra,
  };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 5));

test('a session is titled by its name, else its first message on one line, cut ones marked', () => {
  assert.equal(picker.sessionTitle({ name: 'Refactor  the\nparser', firstMessage: 'ignored' }), 'Refactor the parser');
  assert.equal(picker.sessionTitle({ name: '  ', firstMessage: 'fix\tthe\r\nbuild  ' }), 'fix the build');
  assert.equal(picker.sessionTitle({ firstMessage: 'a long one', textTruncated: true }), 'a long one…');
  assert.equal(picker.sessionTitle({ firstMessage: '' }), '(no messages)');
  assert.equal(picker.sessionTitle({}), '(no messages)');
});

test('when a session changed: how long ago within a week, its local date after, unknown when invalid', () => {
  assert.equal(picker.whenText(ago(10_000), NOW), 'just now');
  assert.equal(picker.whenText(ago(-5 * MINUTE), NOW), 'just now');
  assert.equal(picker.whenText(ago(MINUTE), NOW), '1 minute ago');
  assert.equal(picker.whenText(ago(59 * MINUTE), NOW), '59 minutes ago');
  assert.equal(picker.whenText(ago(3 * HOUR + MINUTE), NOW), '3 hours ago');
  assert.equal(picker.whenText(ago(DAY), NOW), '1 day ago');
  assert.equal(picker.whenText(ago(6 * DAY), NOW), '6 days ago');
  const old = new Date(NOW - 30 * DAY);
  const two = (n) => String(n).padStart(2, '0');
  const local = `${old.getFullYear()}-${two(old.getMonth() + 1)}-${two(old.getDate())} ${two(old.getHours())}:${two(old.getMinutes())}`;
  assert.equal(picker.whenText(old.toISOString(), NOW), local);
  assert.equal(picker.whenText(null, NOW), 'unknown time');
  assert.equal(picker.whenText('not a date', NOW), 'unknown time');
});

test('an item: title, when and messages, and the file; the folder too in all sessions', () => {
  const session = listed('s1', { messageCount: 1, firstMessage: 'hello\nthere' });
  const item = picker.sessionItem(session, NOW, false);
  assert.equal(item.label, 'hello there');
  assert.equal(item.description, '1 hour ago · 1 message');
  assert.equal(item.detail, 's1.jsonl · /agent/sessions/--w-proj--'); // the name first: a narrow picker cuts the end
  assert.equal(item.session, session);
  assert.equal(item.buttons[0].tooltip, 'Open as Text');
  assert.equal(picker.sessionItem({ ...session, messageCount: 1234 }, NOW, true).description, '1 hour ago · 1,234 messages · /w/proj');
});

test('a file and a folder under the home folder show as ~/...; the item still opens the full path', () => {
  const home = '/home/ann';
  const session = listed('s1', { path: '/home/ann/.pi/agent/sessions/--home-ann-proj--/s1.jsonl', cwd: '/home/ann/proj' });
  const item = picker.sessionItem(session, NOW, true, home);
  assert.equal(item.detail, 's1.jsonl · ~/.pi/agent/sessions/--home-ann-proj--');
  assert.match(item.description, / · ~\/proj$/);
  assert.equal(item.session.path, '/home/ann/.pi/agent/sessions/--home-ann-proj--/s1.jsonl');
  assert.equal(picker.sessionItem(session, NOW, false, '/home/ann/').detail, 's1.jsonl · ~/.pi/agent/sessions/--home-ann-proj--');
  assert.equal(picker.fileThenFolder('/s1.jsonl', home), 's1.jsonl · /');
  assert.equal(picker.fileThenFolder('s1.jsonl', home), 's1.jsonl');
  // elsewhere, or only sharing the home folder's first letters: as it is
  assert.equal(picker.homeRelative('/home/anna/s.jsonl', home), '/home/anna/s.jsonl');
  assert.equal(picker.homeRelative('/var/tmp/s.jsonl', home), '/var/tmp/s.jsonl');
  assert.equal(picker.homeRelative('/home/ann', home), '~');
  assert.equal(picker.homeRelative('/home/ann/s.jsonl', ''), '/home/ann/s.jsonl');
});

test("pi's file name shows as its session's id whole, then its time, which a narrow picker keeps the id of; other names whole", () => {
  const name = '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl';
  assert.equal(picker.shownFileName(name), '0199e2e0-aaaa-7bbb-8ccc-0000000000a1 · 2026-01-05T09-00-00-000Z');
  assert.equal(picker.shownFileName(name.toUpperCase().replace('.JSONL', '.jsonl')), '0199E2E0-AAAA-7BBB-8CCC-0000000000A1 · 2026-01-05T09-00-00-000Z');
  // two sessions of one minute, their ids' starts the same time: told apart within the id's 36 characters
  const other = '2026-01-05T09-00-41-512Z_0199e2e0-ffff-7bbb-8ccc-00000000b7c2.jsonl';
  assert.notEqual(picker.shownFileName(other).slice(0, 36), picker.shownFileName(name).slice(0, 36));
  const item = picker.sessionItem(listed('x', { path: `/home/ann/.pi/agent/sessions/--home-ann-proj--/${name}` }), NOW, false, '/home/ann');
  assert.equal(item.detail, '0199e2e0-aaaa-7bbb-8ccc-0000000000a1 · 2026-01-05T09-00-00-000Z · ~/.pi/agent/sessions/--home-ann-proj--');
  assert.equal(item.session.path, `/home/ann/.pi/agent/sessions/--home-ann-proj--/${name}`); // opens the file itself
  // not pi's naming (a session saved elsewhere, an id of pi's --session that is no UUID, another
  // extension): the name as it is
  for (const whole of ['notes.jsonl', '2026-01-05T09-00-00-000Z_my-session.jsonl', '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.json',
    '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl.bak', 'x2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl']) {
    assert.equal(picker.shownFileName(whole), whole);
  }
});

test('a pasted file name or path names its file, quoted or not; other text names none', () => {
  const name = '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl';
  for (const value of [name, `  ${name}\n`, `/home/ann/.pi/agent/sessions/--home-ann-proj--/${name}`, `~/.pi/agent/sessions/--p--/${name}`, `'${name}'`, `"/a b/${name}"`]) {
    assert.equal(picker.pastedFileName(value), name, value);
  }
  assert.equal(picker.pastedFileName('notes.JSONL'), 'notes.JSONL');
  for (const value of ['', '0199e2e0-aaaa', '2026-01-05T09-00', `${name}.bak`, '/a/sessions/', `${name}\n${name}`]) {
    assert.equal(picker.pastedFileName(value), undefined, value);
  }
});

test("a pasted file name shows its session (its items otherwise unchanged); a session of another name stays filtered", () => {
  const name = '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl';
  const items = [
    { label: 'All sessions...', alwaysShow: true, all: true },
    picker.sessionItem(listed('a', { path: `/s/--p--/${name}` }), NOW, false),
    picker.sessionItem(listed('b', { path: '/s/--p--/2026-01-05T09-00-41-512Z_0199e2e0-ffff-7bbb-8ccc-00000000b7c2.jsonl' }), NOW, false),
  ];
  const shown = picker.showingPasted(items, `/elsewhere/${name.toUpperCase().replace('.JSONL', '.jsonl')}`);
  assert.deepEqual(shown.map((i) => !!i.alwaysShow), [true, true, false]);
  assert.deepEqual({ ...shown[1], alwaysShow: undefined }, { ...items[1], alwaysShow: undefined });
  assert.equal(picker.showingPasted(items, 'first message'), items); // nothing to change: the same items
  assert.equal(picker.showingPasted(shown, name), shown);
  assert.deepEqual(picker.showingPasted(shown, '').map((i) => !!i.alwaysShow), [true, false, false]); // the paste removed
});

test("Open Session: pi's whole file name, or a path to it, pasted finds its session, which Enter opens", async (t) => {
  const name = '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl';
  const older = listed('older', { path: `/home/ann/.pi/agent/sessions/--w-proj--/${name}` });
  const sessions = [listed('newer'), older];
  const { state, run, restore } = await activated({ folder: '/w/proj', listing: () => sessions });
  t.after(restore);
  const done = run();
  await flush();
  const pick = state.quickPicks[0];
  const shownSessions = () => pick.shownItems().filter((i) => i.session).map((i) => i.session.path);
  pick.type('0199e2e0-aaaa-7bbb'); // a part of what it shows, as before
  assert.deepEqual(shownSessions(), [older.path]);
  for (const pasted of [name, older.path, `'${older.path}'`]) {
    pick.type(pasted);
    assert.deepEqual(shownSessions(), [older.path], pasted);
    assert.equal(pick.activeItems[0].session, older); // not "All sessions...", shown always
  }
  assert.equal(pick.items.find((i) => i.session === older).detail, `0199e2e0-aaaa-7bbb-8ccc-0000000000a1 · 2026-01-05T09-00-00-000Z · ${picker.homeRelative('/home/ann/.pi/agent/sessions/--w-proj--', require('node:os').homedir())}`);
  pick.type(`${name}x`); // typed on: no longer the name
  assert.deepEqual(shownSessions(), []);
  pick.type(name);
  pick.accept();
  await done;
  assert.deepEqual(viewerOpened(state), [older.path]);
});

test('a file name pasted while the sessions are read shows its session when they come', async (t) => {
  let answer;
  const { state, run, restore } = await activated({ folder: '/w/proj', listing: () => new Promise((resolve) => { answer = resolve; }) });
  t.after(restore);
  const done = run();
  await flush();
  const pick = state.quickPicks[0];
  pick.type('/w/s/b.jsonl');
  answer([listed('a'), listed('b')]);
  await flush();
  assert.deepEqual(pick.shownItems().map((i) => i.label), ['All sessions...', 'first message of b']);
  assert.equal(pick.activeItems[0].label, 'first message of b');
  pick.hide();
  await done;
});

test("a session's own $(name) text shows as written, not as an icon", () => {
  const item = picker.sessionItem(listed('s1', { firstMessage: 'echo $(whoami)', path: '/a/$(x).jsonl' }), NOW, false);
  assert.equal(item.label, 'echo \\$(whoami)');
  assert.equal(item.detail, '\\$(x).jsonl · /a');
});

/** The extension activated with no session open, a workspace folder (or none), and a server answering `listing`. */
async function activated({ folder, listing }) {
  const ext = loadExtension();
  const { state } = ext;
  state.config['piSession.server.command'] = ['/opt/pi/bin/pi-session'];
  if (folder) state.workspaceFolders = [{ uri: Uri.file(folder), name: path.basename(folder), index: 0 }];
  state.responder = (method, params) => listing(method, params);
  const api = ext.ext.activate(fakeContext());
  await api.ready;
  const requests = () => state.clients.flatMap((c) => c.requests).filter((r) => r.method.startsWith('pi/list'));
  const run = () => state.commands.get('piSession.openSession')();
  return { ...ext, requests, run };
}

const viewerOpened = (state) => state.executed.filter(([id, , viewType]) => id === 'vscode.openWith' && viewType === 'piSession.viewer').map(([, uri]) => uri.fsPath);

test("Open Session lists the folder's sessions newest first, and opens the one picked in the viewer", async (t) => {
  const beforeNow = (ms) => new Date(Date.now() - ms).toISOString(); // the picker's clock is the real one
  const sessions = [listed('newer', { modified: beforeNow(2 * MINUTE), name: 'Named session' }), listed('older', { modified: beforeNow(2 * DAY) })];
  const { state, requests, run, restore } = await activated({ folder: '/w/proj', listing: () => sessions });
  t.after(restore);
  const done = run();
  await flush();
  const pick = state.quickPicks[0];
  assert.deepEqual(requests().map((r) => r.params), [
    // where pi's command line keeps sessions (its variable, the folder's sessionDir setting)
    { cwd: '/w/proj', environment: { cwd: '/w/proj' }, cliSessionDir: true, text: 'first', maxTextChars: 200 },
  ]);
  assert.equal(requests()[0].method, 'pi/list');
  assert.equal(pick.busy, false);
  assert.deepEqual(pick.items.map((i) => i.label), ['All sessions...', 'Named session', 'first message of older']);
  assert.deepEqual(pick.items.slice(1).map((i) => i.description), ['2 minutes ago · 4 messages', '2 days ago · 4 messages']);
  assert.equal(pick.activeItems[0].label, 'Named session'); // Enter opens the newest
  pick.accept('first message of older');
  await done;
  assert.deepEqual(viewerOpened(state), [sessions[1].path]);
  assert.equal(pick.disposed, true);
  assert.deepEqual(state.messages.error, []);
});

test('with several workspace folders the sessions are those of the active file\'s folder', async (t) => {
  const { state, requests, run, restore, makeDocument } = await activated({ folder: '/w/proj', listing: () => [] });
  t.after(restore);
  state.workspaceFolders.push({ uri: Uri.file('/w/second'), name: 'second', index: 1 });
  state.activeTextEditor = { document: makeDocument(Uri.file('/w/second/src/a.ts'), '', 'typescript') };
  await run();
  assert.deepEqual(requests().map((r) => r.params.cwd), ['/w/second']);
  state.activeTextEditor = { document: makeDocument(Uri.file('/elsewhere/b.ts'), '', 'typescript') };
  await run();
  assert.deepEqual(requests().map((r) => r.params.cwd), ['/w/second', '/w/proj']); // not in a folder: the first
});

test("the item's button opens the session as text", async (t) => {
  const sessions = [listed('only')];
  const { state, run, restore } = await activated({ folder: '/w/proj', listing: () => sessions });
  t.after(restore);
  const done = run();
  await flush();
  state.quickPicks[0].pressButton('first message of only');
  await done;
  const opened = state.executed.filter(([id]) => id === 'vscode.openWith').map(([, uri, viewType]) => [uri.fsPath, viewType]);
  assert.deepEqual(opened, [[sessions[0].path, 'default']]);
});

test('"All sessions..." lists every folder\'s sessions with pi/listAll; no workspace folder lists them at once', async (t) => {
  const all = [listed('elsewhere', { cwd: '/w/other' }), listed('here')];
  const listing = (method) => (method === 'pi/listAll' ? all : [listed('here')]);
  const withFolder = await activated({ folder: '/w/proj', listing });
  t.after(withFolder.restore);
  const done = withFolder.run();
  await flush();
  const pick = withFolder.state.quickPicks[0];
  pick.accept('All sessions...');
  await flush();
  assert.deepEqual(withFolder.requests().map((r) => [r.method, r.params]), [
    ['pi/list', { cwd: '/w/proj', environment: { cwd: '/w/proj' }, cliSessionDir: true, text: 'first', maxTextChars: 200 }],
    // the folder's settings say where pi keeps every session too
    ['pi/listAll', { environment: { cwd: '/w/proj' }, cliSessionDir: true, text: 'first', maxTextChars: 200 }],
  ]);
  assert.deepEqual(pick.items.map((i) => i.label), ['first message of elsewhere', 'first message of here']);
  assert.match(pick.items[0].description, /· \/w\/other$/);
  assert.equal(pick.shown, true); // still open: the user picks from the new list
  pick.accept();
  await done;
  assert.deepEqual(viewerOpened(withFolder.state), [all[0].path]);

  const noFolder = await activated({ folder: undefined, listing });
  t.after(noFolder.restore);
  const done2 = noFolder.run();
  await flush();
  assert.deepEqual(noFolder.requests().map((r) => [r.method, r.params]), [
    ['pi/listAll', { cliSessionDir: true, text: 'first', maxTextChars: 200 }],
  ]);
  assert.deepEqual(noFolder.state.quickPicks[0].items.map((i) => i.label), ['first message of elsewhere', 'first message of here']);
  noFolder.state.quickPicks[0].hide(); // Escape
  await done2;
  assert.deepEqual(viewerOpened(noFolder.state), []);
});

test('a folder without sessions says so and offers all sessions; none anywhere says so', async (t) => {
  const none = await activated({ folder: '/w/empty', listing: () => [] });
  t.after(none.restore);
  await none.run();
  assert.deepEqual(none.state.messages.info, ['Pi Session: pi has no sessions of /w/empty yet.']);
  assert.equal(none.state.quickPicks[0].shown, false);
  assert.deepEqual(viewerOpened(none.state), []);

  const offered = await activated({ folder: '/w/empty', listing: (method) => (method === 'pi/listAll' ? [listed('elsewhere')] : []) });
  t.after(offered.restore);
  offered.state.infoAnswer = 'All sessions...';
  const done = offered.run();
  await flush();
  const allPick = offered.state.quickPicks[1];
  assert.deepEqual(allPick.items.map((i) => i.label), ['first message of elsewhere']);
  allPick.accept();
  await done;
  assert.deepEqual(viewerOpened(offered.state), [listed('elsewhere').path]);

  const nowhere = await activated({ folder: undefined, listing: () => ({ sessions: [], total: 0, hasMore: false }) });
  t.after(nowhere.restore);
  await nowhere.run();
  assert.equal(nowhere.state.messages.info.length, 1);
  assert.match(nowhere.state.messages.info[0], /^Pi Session: pi has no sessions yet/);
});

test('a server error is shown, the picker closes, nothing is thrown or opened', async (t) => {
  const failing = () => Promise.reject(Object.assign(new Error('Listing failed: EACCES: permission denied'), { code: -32005 }));
  const { state, run, restore } = await activated({ folder: '/w/proj', listing: failing });
  t.after(restore);
  const result = await run(); // resolves: the command does not throw
  assert.equal(result, undefined);
  assert.deepEqual(state.messages.error, ['Pi Session: could not list the sessions: Listing failed: EACCES: permission denied']);
  assert.equal(state.quickPicks[0].shown, false);
  assert.equal(state.quickPicks[0].busy, true); // never filled
  assert.deepEqual(viewerOpened(state), []);
});

test('the folder\'s answer arriving after the switch to all sessions does not replace them', async (t) => {
  let answerFolder;
  const listing = (method) => (method === 'pi/listAll' ? [listed('all-one')] : new Promise((resolve) => { answerFolder = resolve; }));
  const { state, run, restore } = await activated({ folder: '/w/proj', listing });
  t.after(restore);
  const done = run();
  await flush();
  const pick = state.quickPicks[0];
  // the user cannot pick "All sessions..." before the list is there, but a late answer of one
  // listing must never land on the other: start the all-sessions listing by hand
  pick.items = [{ label: 'All sessions...', all: true }];
  pick.accept('All sessions...');
  await flush();
  answerFolder([listed('folder-one')]);
  await flush();
  assert.deepEqual(pick.items.map((i) => i.label), ['first message of all-one']);
  pick.hide();
  await done;
});

test('the picker names a folder under the home folder as ~/...', async (t) => {
  const folder = path.join(require('node:os').homedir(), 'proj');
  const { state, run, restore } = await activated({ folder, listing: () => [listed('only')] });
  t.after(restore);
  const done = run();
  await flush();
  assert.equal(state.quickPicks[0].title, `Pi sessions of ~${path.sep}proj`);
  state.quickPicks[0].hide();
  await done;
});

test('a picker closed while its listing is on its way cancels the request; one switched to all sessions cancels the folder\'s', async (t) => {
  const answers = {};
  const listing = (method) => new Promise((resolve) => { answers[method] = resolve; });
  const { state, requests, run, restore } = await activated({ folder: '/w/proj', listing });
  t.after(restore);
  const done = run();
  await flush();
  const pick = state.quickPicks[0];
  assert.equal(pick.shown, true); // shown at once, busy, before the answer
  assert.equal(pick.busy, true);
  const [folderRequest] = requests();
  assert.equal(folderRequest.token.isCancellationRequested, false);
  pick.items = [{ label: 'All sessions...', all: true }]; // (as in the test above)
  pick.accept('All sessions...');
  await flush();
  const allRequest = requests()[1];
  assert.equal(allRequest.method, 'pi/listAll');
  assert.equal(folderRequest.token.isCancellationRequested, true);
  assert.equal(allRequest.token.isCancellationRequested, false);
  pick.hide(); // Escape while all sessions are read
  assert.equal(await done, undefined);
  assert.equal(allRequest.token.isCancellationRequested, true);
  answers['pi/listAll']([listed('late')]); // the answer arriving anyway changes nothing
  await flush();
  assert.deepEqual(viewerOpened(state), []);
  assert.deepEqual(state.messages.error, []);
});

test('a listing answered leaves nothing to cancel', async (t) => {
  const { state, requests, run, restore } = await activated({ folder: '/w/proj', listing: () => [listed('only')] });
  t.after(restore);
  const done = run();
  await flush();
  state.quickPicks[0].accept();
  await done;
  assert.equal(requests()[0].token.isCancellationRequested, false);
});

test('Open Session is in the command palette, the Session Tree title bar, its welcome view and the README', () => {
  const command = manifest.contributes.commands.find((c) => c.command === 'piSession.openSession');
  assert.equal(`${command.category}: ${command.title}`, 'Pi Session: Open Session...');
  assert.equal(manifest.contributes.menus.commandPalette.find((m) => m.command === 'piSession.openSession'), undefined); // no `when` hides it
  assert.ok(manifest.contributes.menus['view/title'].some((m) => m.command === 'piSession.openSession' && m.when === 'view == piSession.tree'));
  assert.ok(manifest.contributes.viewsWelcome[0].contents.includes('command:piSession.openSession'));
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
  assert.match(readme, /Open Session\.\.\./);
});
