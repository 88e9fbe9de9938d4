// The session tree's loads (src/treeView.ts): one at a time, the changes during one sharing the next,
// each shown unless the document or the filter changed meanwhile.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { loadExtension, Uri } = require('./stubs');
const { makeTreeServer, chainEntries } = require('./fakeTree');

const loaded = loadExtension(); // treeView.js imports vscode: the stub must be in place
const { SessionTreeProvider, RELOADS_ON_CHANGE } = require(path.join(__dirname, '..', '..', 'out', 'src', 'treeView.js'));
loaded.restore();

const flush = () => new Promise((resolve) => setTimeout(resolve, 5));

/**
 * A tree source whose replies wait until the test lets them through (`release`), as a server busy
 * with a big session would. `loads` counts loads (each asks pi/getInfo once), per document.
 */
function gatedSource(serverFor) {
  let gate;
  let open;
  const close = () => { gate = new Promise((resolve) => { open = resolve; }); };
  close();
  const source = {
    loads: [],
    waiting: 0,
    async info(uri) {
      source.loads.push(uri.toString());
      return { entryCount: 5000 };
    },
    async window(uri, _filter, params) {
      source.waiting++;
      await gate;
      source.waiting--;
      return serverFor(uri.toString()).getTree(params);
    },
    release() { open(); close(); },
  };
  return source;
}

/** A tree view over a gated source; `shown`: the leaf of each load it showed, in order. */
function gatedTree(serverFor) {
  const source = gatedSource(serverFor);
  const provider = new SessionTreeProvider(source, 'default', 10);
  const shown = [];
  provider.onDidLoad = () => shown.push(provider.tree.leafId);
  return { source, provider, shown };
}

/** Let requests through until `promise` settles (a load asks several windows, one after another). */
async function drive(promise, source) {
  let done = false;
  void promise.then(() => { done = true; });
  for (let i = 0; i < 50 && !done; i++) {
    source.release();
    await flush();
  }
  assert.ok(done, 'the load did not end');
}

/** Let every request through until the provider has no load running or queued. */
async function settle(provider, source) {
  for (let i = 0; i < 50; i++) {
    await flush();
    if (source.waiting === 0 && !provider.loading && !provider.queued) return;
    source.release();
  }
  assert.fail('the loads did not end');
}

const A = Uri.parse('file:///w/a.jsonl');
const B = Uri.parse('file:///w/b.jsonl');

test('changes during a load share one load after it, and the load they waited for is shown', async () => {
  let leaf = 'a5';
  const { source, provider, shown } = gatedTree(() => makeTreeServer(chainEntries(12), leaf));

  const first = provider.setDocument(A);
  await flush();
  assert.equal(source.loads.length, 1);
  leaf = 'a7'; // pi appends, three times, while the first load waits on the server
  const refreshes = [provider.refresh(), provider.refresh(), provider.refresh()];
  assert.equal(refreshes[0], refreshes[1]);
  assert.equal(refreshes[1], refreshes[2]);
  await flush();
  assert.equal(source.loads.length, 1, 'no second load while the first runs');

  await drive(first, source);
  assert.equal(shown.length, 1, 'the first load is shown: only the file changed since it began');
  await settle(provider, source);
  await Promise.all(refreshes);
  assert.equal(source.loads.length, 2, 'the three changes shared one load');
  assert.equal(shown.length, 2);
  assert.equal(provider.tree.leafId, 'a7');
});

test('a change after the queued load began queues one more; none is lost', async () => {
  let leaf = 'a3';
  const { source, provider } = gatedTree(() => makeTreeServer(chainEntries(12), leaf));
  void provider.setDocument(A);
  await flush();
  leaf = 'a5';
  const second = provider.refresh();
  for (let i = 0; i < 50 && source.loads.length < 2; i++) {
    source.release();
    await flush();
  }
  assert.equal(source.loads.length, 2, 'the queued load started once the first ended');
  leaf = 'a9';
  const third = provider.refresh();
  assert.notEqual(third, second);
  await settle(provider, source);
  await Promise.all([second, third]);
  assert.equal(source.loads.length, 3);
  assert.equal(provider.tree.leafId, 'a9');
});

test('another document during a load is loaded at once; the old load is not shown', async () => {
  const servers = { [A.toString()]: makeTreeServer(chainEntries(6, 'x'), 'xa5'), [B.toString()]: makeTreeServer(chainEntries(6, 'y'), 'ya5') };
  const { source, provider, shown } = gatedTree((uri) => servers[uri]);
  void provider.setDocument(A);
  await flush();
  const switched = provider.setDocument(B);
  void provider.refresh(); // a change of B while both loads wait: after B's load, not after A's
  await flush();
  assert.deepEqual(source.loads, [A.toString(), B.toString()], 'B did not wait for A');
  await settle(provider, source);
  await switched;
  assert.ok(shown.length >= 1 && shown.every((leaf) => leaf === 'ya5'), JSON.stringify(shown));
  assert.equal(provider.uri, B);
  assert.equal(provider.tree.leafId, 'ya5');
});

test('the user\'s Refresh loads at once, without waiting for the load running (which is not shown)', async () => {
  let leaf = 'a3';
  const { source, provider, shown } = gatedTree(() => makeTreeServer(chainEntries(12), leaf));
  void provider.setDocument(A);
  await flush();
  leaf = 'a5';
  const refreshed = provider.reload();
  await flush();
  assert.equal(source.loads.length, 2, 'the second load did not wait');
  await settle(provider, source);
  await refreshed;
  assert.deepEqual(shown, ['a5'], 'only the load asked for last is shown');
});

test('a session that changes while its tree loads is loaded anew, never shown with rows of two trees', async () => {
  const server = makeTreeServer(chainEntries(30), 'a29');
  let windows = 0;
  const source = {
    async info() {
      return { entryCount: 5000 };
    },
    async window(_uri, _filter, params) {
      windows++;
      const reply = server.getTree(params);
      if (windows === 1) server.revision = '2'; // pi appends after the first window
      return reply;
    },
  };
  const provider = new SessionTreeProvider(source, 'default', 10);
  const shown = [];
  provider.onDidLoad = () => shown.push(provider.tree.revision);
  await provider.setDocument(A);
  assert.deepEqual(shown, ['2'], 'shown once, the tree of the changed session');
  assert.equal(provider.error, undefined);
  assert.equal(provider.marker.node.id, 'a29');
  assert.ok(server.log.some((p) => p.revision === '1'), 'the window after the change was asked with the first revision');
  assert.ok(server.log.slice(-2).every((p) => p.revision === undefined || p.revision === '2'));
});

test('a session that changes on every window is shown as an error after a few loads, not mixed', async () => {
  const server = makeTreeServer(chainEntries(30), 'a29');
  let revision = 1;
  const source = {
    async info() {
      return { entryCount: 5000 };
    },
    async window(_uri, _filter, params) {
      const reply = server.getTree(params);
      server.revision = String(++revision);
      return reply;
    },
  };
  const provider = new SessionTreeProvider(source, 'default', 10);
  await provider.setDocument(A);
  assert.match(provider.error, /changed/);
  assert.equal(provider.marker, undefined);
  assert.equal(server.log.filter((p) => p.revision === undefined).length, 1 + RELOADS_ON_CHANGE);
});

// --- following a session pi appends to: the levels that changed, asked with `since` ------------------

/** A branchy session (a branch point every few entries down the path: many levels). */
function branchyEntries() {
  const entries = chainEntries(40);
  for (let at = 5; at < 40; at += 6) entries.push({ id: `side${at}`, parent: entries[at].id, role: 'user' });
  return entries;
}

/** A tree view over `server` that counts what it asks; `failSince`: the `since` requests fail. */
function followingTree(server, options = {}) {
  const source = {
    infos: 0,
    async info() {
      source.infos++;
      return { entryCount: 5000 };
    },
    async window(_uri, _filter, params) {
      return server.getTree(params);
    },
    async levels(_uri, _filter, params) {
      if (params.since !== undefined && options.failSince) {
        server.log.push(params);
        throw new Error('the server went away');
      }
      return server.getLevels(params);
    },
  };
  const provider = new SessionTreeProvider(source, 'default', 10);
  const shown = [];
  provider.onDidLoad = () => shown.push(provider.marker?.node.id);
  return { source, provider, shown };
}

/** The rows a view loaded anew holds: each must be in `provider`'s tree, at its place, as it is now. */
async function assertHoldsAFreshLoad(server, provider) {
  const { provider: fresh } = followingTree(server);
  await fresh.setDocument(A);
  const held = new Map(provider.tree.loadedRows().map((row) => [row.key, row]));
  for (const row of fresh.tree.loadedRows()) {
    assert.ok(held.has(row.key), `row ${row.key} (${row.node.id}) is missing`);
    assert.deepEqual(held.get(row.key).node, row.node, `row ${row.key}`);
  }
  const now = new Map(fresh.tree.loadedRows().map((row) => [row.node.id, row.node]));
  for (const row of provider.tree.loadedRows()) {
    if (now.has(row.node.id)) assert.deepEqual(row.node, now.get(row.node.id), `row of ${row.node.id}`);
  }
  assert.equal(provider.marker.key, fresh.marker.key);
}

test('a turn appended while the view is open shows its rows from one `since` request, no load anew', async () => {
  const server = makeTreeServer(branchyEntries(), 'a39');
  const { source, provider, shown } = followingTree(server);
  await provider.setDocument(A);
  const levels = server.log.find((p) => p.levels);
  const before = server.log.length;
  server.append([
    { id: 'n40', parent: 'a39', role: 'user' },
    { id: 'n41', parent: 'n40', role: 'assistant' },
  ]);
  await provider.refresh({ id: 'n41' });
  assert.deepEqual(server.log.slice(before), [{ levels: true, aroundId: 'n41', limit: levels.limit, since: '1' }]);
  assert.equal(source.infos, 1, 'not loaded anew');
  assert.deepEqual(shown, ['a39', 'n41']);
  assert.equal(provider.tree.leafId, 'n41');
  assert.equal(provider.tree.revision, '2', 'the windows asked from now on are of the new tree');
  const rows = provider.tree.loadedRows();
  assert.deepEqual(rows.filter((r) => ['a39', 'n40', 'n41'].includes(r.node.id)).map((r) => [r.node.id, r.node.isLeaf]), [
    ['a39', false],
    ['n40', false],
    ['n41', true],
  ]);
  await assertHoldsAFreshLoad(server, provider);
  // and the next turn again: since the revision the last delta gave
  server.append([{ id: 'n42', parent: 'n41', role: 'user' }]);
  await provider.refresh({ id: 'n42' });
  assert.equal(server.log[server.log.length - 1].since, '2');
  assert.equal(source.infos, 1);
  await assertHoldsAFreshLoad(server, provider);
});

test('a label set on an older entry changes its row wherever the view holds it', async () => {
  // a long chain at the top, then branches: the levels' pages hold none of its first rows
  const entries = chainEntries(60);
  entries.push({ id: 'side40', parent: 'u40', role: 'user' }, { id: 'side50', parent: 'u50', role: 'user' });
  const server = makeTreeServer(entries, 'a59');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  const top = provider.tree.top;
  while (top.start > 0) await provider.loadMore(top, 'before'); // the user scrolls up
  assert.ok(provider.tree.loadedRows().some((r) => r.node.id === 'u2'), 'the top list holds u2');
  const levelRows = new Set(server.getLevels({ levels: true, aroundId: 'a59', limit: 10 }).levels.flatMap((l) => l.nodes.map((n) => n.id)));
  assert.ok(!levelRows.has('u2'), 'no level holds u2');
  server.relabel('u2', 'start');
  server.append([{ id: 'l60', parent: 'a59', type: 'label' }]);
  await provider.refresh({ id: 'l60' });
  assert.equal(source.infos, 1, 'not loaded anew');
  assert.equal(provider.tree.loadedRows().find((r) => r.node.id === 'u2').node.label, 'start');
  await assertHoldsAFreshLoad(server, provider);
});

test('a level sent again keeps the rows it still has, and the lists the view opened under them', async () => {
  // a branch point a9: the leaf's branch `side`, and the other branch u10..., which the user opens
  const entries = chainEntries(20);
  entries.push({ id: 'side', parent: 'a9', role: 'user' });
  const server = makeTreeServer(entries, 'side');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  const other = provider.tree.loadedRows().find((r) => r.node.id === 'u10');
  const opened = provider.tree.childContainer(other);
  await provider.tree.ensureLoaded(opened);
  assert.ok(opened.rows.length > 0);
  const asked = server.log.length;
  server.append([{ id: 'n1', parent: 'side', role: 'assistant' }]);
  await provider.refresh({ id: 'n1' });
  assert.equal(source.infos, 1, 'not loaded anew');
  assert.deepEqual(server.log.slice(asked).map((p) => p.since), ['1'], 'one request: the opened list is not asked again');
  const side = provider.tree.loadedRows().find((r) => r.node.id === 'side');
  assert.deepEqual(side.node.childIds, ['n1'], 'the branch point\'s level was sent again');
  const now = provider.tree.loadedRows().find((r) => r.node.id === 'u10');
  assert.equal(now, other, 'the row keeps its object (the view\'s item)');
  assert.equal(now.children, opened, 'and the list opened under it');
  assert.ok(opened.loaded);
  await assertHoldsAFreshLoad(server, provider);
});

test('a branch to an older entry is followed from one `since` request: the lists opened stay, the old path\'s rows are marked', async () => {
  // a branch point a9 with the leaf's branch u10... and another, side1 side2 (a branch point), which
  // the user opens; then pi's /tree to side2 and a turn there
  const entries = chainEntries(20);
  entries.push({ id: 'side1', parent: 'a9', role: 'user' }, { id: 'side2', parent: 'side1', role: 'assistant' });
  entries.push({ id: 'far1', parent: 'side2', role: 'user' }, { id: 'far2', parent: 'side2', role: 'user' });
  const server = makeTreeServer(entries, 'a19');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  const side = provider.tree.loadedRows().find((r) => r.node.id === 'side1');
  const opened = provider.tree.childContainer(side);
  await provider.tree.ensureLoaded(opened);
  const u10 = provider.tree.loadedRows().find((r) => r.node.id === 'u10');
  assert.equal(u10.index, 0, 'the branch on the path comes first');
  const asked = server.log.length;
  server.append([{ id: 'n1', parent: 'far2', role: 'assistant' }]);
  await provider.refresh({ id: 'n1' });
  assert.equal(source.infos, 1, 'not loaded anew');
  assert.deepEqual(server.log.slice(asked).map((p) => p.since), ['1'], 'one request');
  const rows = provider.tree.loadedRows();
  const now = rows.find((r) => r.node.id === 'u10');
  assert.equal(now, u10, 'the old branch keeps its object, at its new place');
  assert.equal(now.index, 1);
  assert.ok(now.children?.loaded, 'and the list of the old path under it');
  assert.equal(rows.find((r) => r.node.id === 'a19').node.isLeaf, false, 'the old leaf is not the leaf');
  assert.equal(rows.find((r) => r.node.id === 'a15').node.onLeafPath, false, 'nor on its path');
  assert.equal(provider.marker.node.id, 'n1');
  await assertHoldsAFreshLoad(server, provider);
});

test('a branch away from a path with a branch point drops the lists the server names stale: its branches are in another order', async () => {
  // the leaf far2 below side2, a branch point (far2 first while on the path); then pi's /tree to a19
  const entries = chainEntries(20);
  entries.push({ id: 'side1', parent: 'a9', role: 'user' }, { id: 'side2', parent: 'side1', role: 'assistant' });
  entries.push({ id: 'far1', parent: 'side2', role: 'user' }, { id: 'far2', parent: 'side2', role: 'user' });
  const server = makeTreeServer(entries, 'far2');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  const held = provider.tree.loadedRows().find((r) => r.node.id === 'side2');
  assert.deepEqual(held.node.childIds, ['far2', 'far1']);
  server.append([{ id: 'n1', parent: 'a19', role: 'assistant' }]);
  await provider.refresh({ id: 'n1' });
  assert.equal(source.infos, 1, 'not loaded anew');
  const rows = provider.tree.loadedRows();
  const side1 = rows.find((r) => r.node.id === 'side1');
  assert.ok(side1, 'the head of the old branch stays');
  assert.equal(side1.node.onLeafPath, false);
  assert.equal(side1.children, undefined, 'the list under it is dropped: loaded anew when opened');
  assert.equal(rows.find((r) => r.node.id === 'side2'), undefined, 'no row of side2 with its branches in the old order');
  await provider.tree.ensureLoaded(provider.tree.childContainer(side1));
  assert.deepEqual(provider.tree.loadedRows().find((r) => r.node.id === 'side2').node.childIds, ['far1', 'far2']);
  await assertHoldsAFreshLoad(server, provider);
});

test('a label set on a row of a level half way down keeps the levels: only the leaf\'s are sent again', async () => {
  const server = makeTreeServer(branchyEntries(), 'a39');
  const replies = [];
  const getLevels = server.getLevels;
  server.getLevels = (params) => {
    const reply = getLevels(params);
    replies.push(reply);
    return reply;
  };
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  const levels = replies[replies.length - 1].levels;
  const middle = levels[Math.floor(levels.length / 2)];
  const target = middle.nodes[middle.aroundIndex - middle.offset].id;
  server.relabel(target, 'half way');
  server.append([{ id: 'n40', parent: 'a39', role: 'user' }]);
  await provider.refresh({ id: 'n40' });
  const delta = replies[replies.length - 1];
  assert.equal(source.infos, 1, 'not loaded anew');
  assert.deepEqual(delta.relabelled, [{ id: target, label: 'half way' }]);
  assert.equal(delta.keptLevels, levels.length - 1);
  assert.equal(provider.tree.loadedRows().find((r) => r.node.id === target).node.label, 'half way');
  await assertHoldsAFreshLoad(server, provider);
});

test('a change the server cannot tell as appended entries, or a failed `since` request, loads the tree anew', async () => {
  const server = makeTreeServer(branchyEntries(), 'a39');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  server.rewrite(chainEntries(12), 'a11');
  await provider.refresh({ id: 'a11' });
  assert.ok(server.log.some((p) => p.since === '1'), 'asked what changed first');
  assert.equal(source.infos, 2, 'then loaded anew');
  assert.equal(provider.marker.node.id, 'a11');
  await assertHoldsAFreshLoad(server, provider);

  const failing = makeTreeServer(branchyEntries(), 'a39');
  const broken = followingTree(failing, { failSince: true });
  await broken.provider.setDocument(A);
  failing.append([{ id: 'n40', parent: 'a39', role: 'user' }]);
  await broken.provider.refresh({ id: 'n40' });
  assert.equal(broken.source.infos, 2, 'loaded anew after the error');
  assert.equal(broken.provider.error, undefined);
  assert.equal(broken.provider.marker.node.id, 'n40');
});

test('a change not told as appended entries loads anew; changes during a load share one follow after it', async () => {
  const server = makeTreeServer(branchyEntries(), 'a39');
  const { source, provider } = followingTree(server);
  await provider.setDocument(A);
  server.append([{ id: 'n40', parent: 'a39', role: 'user' }]);
  await provider.refresh();
  assert.equal(source.infos, 2, 'no leaf told: loaded anew');
  assert.ok(!server.log.some((p) => p.since !== undefined));

  server.append([{ id: 'n41', parent: 'n40', role: 'assistant' }]);
  const first = provider.refresh({ id: 'n41' });
  server.append([{ id: 'n42', parent: 'n41', role: 'user' }]);
  const second = provider.refresh({ id: 'n42' });
  server.append([{ id: 'n43', parent: 'n42', role: 'assistant' }]);
  const third = provider.refresh({ id: 'n43' });
  await Promise.all([first, second, third]);
  assert.equal(source.infos, 2, 'followed, not loaded anew');
  assert.deepEqual(server.log.filter((p) => p.since !== undefined).map((p) => p.aroundId), ['n41', 'n43']);
  assert.equal(provider.marker.node.id, 'n43');
  await assertHoldsAFreshLoad(server, provider);
});

// --- a window refused (TreeChanged) while the view follows the change that refused it -------------
// The cursor's entry is revealed (its levels, a list opened, a page) at the revision the view holds;
// pi appends just then: the request is refused, naming the revision now, and pi/didChange has the
// view follow the append, before the refusal comes back or while it does.

/** A long chain (the top list shows a page around u50), a branch point u50, and a branch s1 s2 off it. */
function revealEntries() {
  const entries = chainEntries(60);
  entries.push({ id: 's1', parent: 'u50', role: 'user' }, { id: 's2', parent: 's1', role: 'assistant' });
  return entries;
}

/**
 * A tree view over `server` whose requests `holding(params)` picks wait until the test lets them
 * through (`held`: their params and release, in order); each is answered when let through.
 */
function holdingTree(server) {
  const held = [];
  const gate = { holding: () => false };
  const pass = async (params, answer) => {
    if (gate.holding(params)) await new Promise((release) => held.push({ params, release }));
    return answer(params);
  };
  const source = {
    infos: 0,
    async info() {
      source.infos++;
      return { entryCount: 5000 };
    },
    window: (_uri, _filter, params) => pass(params, server.getTree),
    levels: (_uri, _filter, params) => pass(params, server.getLevels),
  };
  const provider = new SessionTreeProvider(source, 'default', 10);
  return { source, provider, held, gate };
}

/** Wait until `held` has `count` requests waiting. */
async function waitingFor(held, count) {
  for (let i = 0; i < 50 && held.length < count; i++) await flush();
  assert.equal(held.length, count, 'the requests waiting');
}

/** Wait until the view has no load running or queued (a load anew begun by a refusal included). */
async function loadsEnded(provider) {
  for (let i = 0; i < 50; i++) {
    await flush();
    if (!provider.loading && !provider.queued) return;
  }
  assert.fail('the loads did not end');
}

/** What the view asks while it reveals an entry; `check` its answer and what it loaded. */
const reveals = {
  'the levels down to the cursor\'s entry (locate)': {
    ask: (provider) => provider.locate('u44'),
    check: (answer) => assert.equal(answer?.node.id, 'u44'),
  },
  'a list the reveal opens (getChildren)': {
    ask: (provider) => provider.getChildren(provider.tree.loadedRows().find((r) => r.node.id === 's1')),
    check: (answer) => assert.deepEqual(answer.map((item) => item.node?.id), ['s2']),
  },
  'a page (load more)': {
    ask: (provider) => provider.loadMore(provider.tree.top, 'before'),
    check: (_answer, provider) => assert.ok(provider.tree.loadedRows().some((r) => r.node.id === 'u32'), 'the earlier page is loaded'),
  },
};

/** Is `params` a window or levels request pinned to `revision` (not a follow's `since`)? */
const pinnedTo = (revision) => (params) => params.revision === revision && params.since === undefined;

for (const [what, reveal] of Object.entries(reveals)) {
  test(`${what} refused after an append the view has followed is asked again at the followed revision, not loaded anew`, async () => {
    const server = makeTreeServer(revealEntries(), 'a59');
    const { source, provider, held, gate } = holdingTree(server);
    await provider.setDocument(A);
    gate.holding = pinnedTo('1');
    const asking = reveal.ask(provider);
    await waitingFor(held, 1);
    server.append([{ id: 'n60', parent: 'a59', role: 'user' }]);
    await provider.refresh({ id: 'n60' }); // pi/didChange: the view follows, then the refusal comes
    assert.equal(provider.tree.revision, '2');
    held[0].release();
    const answer = await asking;
    await loadsEnded(provider);
    assert.equal(source.infos, 1, 'not loaded anew');
    assert.ok(provider.followed);
    const answered = server.log.slice(server.log.indexOf(held[0].params)); // (answered after the follow)
    assert.deepEqual(answered.map((p) => p.revision), ['1', '2'], 'refused at the revision held, then asked again at the followed one');
    reveal.check(answer, provider);
    await assertHoldsAFreshLoad(server, provider);
  });

  test(`${what} refused while the view follows the append waits for the follow, then is asked again at its revision`, async () => {
    const server = makeTreeServer(revealEntries(), 'a59');
    const { source, provider, held, gate } = holdingTree(server);
    await provider.setDocument(A);
    gate.holding = (params) => pinnedTo('1')(params) || params.since !== undefined;
    const asking = reveal.ask(provider);
    await waitingFor(held, 1);
    server.append([{ id: 'n60', parent: 'a59', role: 'user' }]);
    const following = provider.refresh({ id: 'n60' });
    await waitingFor(held, 2);
    assert.equal(held[1].params.since, '1', 'the follow waits on its `since` request');
    held[0].release(); // refused while the follow runs
    await flush();
    assert.equal(source.infos, 1, 'no load anew begun on the refusal');
    held[1].release();
    const answer = await asking;
    await following;
    await loadsEnded(provider);
    assert.equal(source.infos, 1, 'not loaded anew');
    assert.ok(provider.followed);
    assert.deepEqual(server.log.filter((p) => p.since === undefined && p.revision !== undefined).slice(-2).map((p) => p.revision), ['1', '2']);
    reveal.check(answer, provider);
    await assertHoldsAFreshLoad(server, provider);
  });

  test(`${what} refused before the pi/didChange it is due to waits for it, then is asked again at the followed revision, not loaded anew`, async () => {
    const server = makeTreeServer(revealEntries(), 'a59');
    const { source, provider, held, gate } = holdingTree(server);
    await provider.setDocument(A);
    provider.catchUpWaitMs = 60_000; // (the notification comes well within it)
    gate.holding = pinnedTo('1');
    const asking = reveal.ask(provider);
    await waitingFor(held, 1);
    server.append([{ id: 'n60', parent: 'a59', role: 'user' }]);
    held[0].release(); // refused, pi/didChange not here yet
    for (let i = 0; i < 10; i++) await flush();
    assert.equal(source.infos, 1, 'no load anew begun on the refusal');
    await provider.refresh({ id: 'n60' }); // pi/didChange: the view follows
    const answer = await asking;
    await loadsEnded(provider);
    assert.equal(source.infos, 1, 'not loaded anew');
    assert.ok(provider.followed);
    const answered = server.log.slice(server.log.indexOf(held[0].params));
    assert.deepEqual(
      answered.filter((p) => p.since === undefined).map((p) => p.revision),
      ['1', '2'],
      'refused at the revision held, then asked again at the followed one',
    );
    reveal.check(answer, provider);
    await assertHoldsAFreshLoad(server, provider);
  });
}

test('a window refused when the view cannot catch up is loaded anew, once: no follow, a follow that reloaded, a second refusal', async () => {
  // no pi/didChange (yet): the tree is behind the revision the refusal names
  let server = makeTreeServer(revealEntries(), 'a59');
  let view = holdingTree(server);
  await view.provider.setDocument(A);
  view.provider.catchUpWaitMs = 10; // (waited for, in vain)
  view.gate.holding = pinnedTo('1');
  let asking = view.provider.locate('u2');
  await waitingFor(view.held, 1);
  server.append([{ id: 'n60', parent: 'a59', role: 'user' }]);
  view.held[0].release();
  assert.equal(await asking, undefined);
  await loadsEnded(view.provider);
  assert.equal(view.source.infos, 2, 'loaded anew');
  assert.equal(view.provider.marker.node.id, 'n60');

  // the follow answered that the tree must be loaded anew: that load is the only one
  server = makeTreeServer(revealEntries(), 'a59');
  view = holdingTree(server);
  await view.provider.setDocument(A);
  view.gate.holding = pinnedTo('1');
  asking = view.provider.locate('u2');
  await waitingFor(view.held, 1);
  server.rewrite(chainEntries(12), 'a11');
  await view.provider.refresh({ id: 'a11' });
  assert.equal(view.source.infos, 2, 'the follow loaded anew');
  view.held[0].release();
  assert.equal(await asking, undefined, 'the row of the old tree is not revealed');
  await loadsEnded(view.provider);
  assert.equal(view.source.infos, 2, 'not loaded anew once more');

  // asked again at the followed revision and refused again (pi appended once more): loaded anew,
  // the window asked twice in all
  server = makeTreeServer(revealEntries(), 'a59');
  view = holdingTree(server);
  await view.provider.setDocument(A);
  view.gate.holding = (params) => params.revision !== undefined && params.since === undefined;
  asking = view.provider.locate('u2');
  await waitingFor(view.held, 1);
  server.append([{ id: 'n60', parent: 'a59', role: 'user' }]);
  await view.provider.refresh({ id: 'n60' });
  view.held[0].release();
  await waitingFor(view.held, 2);
  server.append([{ id: 'n61', parent: 'n60', role: 'assistant' }]);
  view.gate.holding = () => false;
  view.held[1].release();
  assert.equal(await asking, undefined);
  await loadsEnded(view.provider);
  assert.deepEqual(server.log.filter((p) => p.aroundId === 'u2').map((p) => p.revision), ['1', '2'], 'asked twice');
  assert.equal(view.source.infos, 2, 'loaded anew');
  assert.equal(view.provider.marker.node.id, 'n61');
});
