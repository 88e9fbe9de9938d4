// A stand-in for the server's pi/getTree windows (flat form, filter "none", activeBranchFirst) over a
// small tree, as protocol/pi-session.openrpc.json describes them: rootId, depth, chain, aroundId,
// offset/limit with total, hasMore, nextOffset (and offset, aroundIndex with aroundId), the session's
// revision (`server.revision`: set it to another string for a session that changed; a window asked
// with another one is refused with TreeChanged).
'use strict';

/**
 * entries: [{ id, parent, role?, type?, preview?, label? }] in file order; leafId: the leaf.
 * `server.append(entries)` appends entries below the leaf, or below an older entry (pi's /tree, then a
 * turn there), the last one the new leaf, as pi does, `server.branch(id)` moves the leaf alone,
 * `server.relabel(id, label)` changes a label: each a new revision. A `levels` request with `since`
 * is answered as the server does: the levels after those as that revision's reply gave them
 * (`keptLevels`, their rows but for the labels of relabelled rows) and the relabelled rows, after a
 * branch the rows that left the leaf's path or joined it and the lists stale (the branches of a row
 * that left it, in another order now, and the list that holds that row), or `{ reload: true }` for a revision it did not give, or
 * once `server.rewrite()` made the session anew.
 */
function makeTreeServer(initialEntries, initialLeafId) {
  let entries = [...initialEntries];
  let leafId = initialLeafId;
  let nodes;
  let roots;
  let onPath;
  function build() {
    nodes = new Map();
    roots = [];
    entries.forEach((e, i) => nodes.set(e.id, { ...e, line: i + 1, children: [] }));
    for (const node of nodes.values()) {
      if (node.parent !== null && node.parent !== undefined && nodes.has(node.parent)) nodes.get(node.parent).children.push(node);
      else roots.push(node);
    }
    onPath = new Set();
    for (let n = nodes.get(leafId); n; n = n.parent ? nodes.get(n.parent) : undefined) onPath.add(n.id);
  }
  build();
  /** Each levels reply's levels (JSON) by revision; the label changes: [revision number, id]. */
  const sent = new Map();
  const relabels = [];
  const ordered = (list) => [...list.filter((n) => onPath.has(n.id)), ...list.filter((n) => !onPath.has(n.id))];
  const row = (n, depth, visibleParentId) => ({
    id: n.id,
    parentId: n.parent ?? null,
    visibleParentId,
    childIds: ordered(n.children).map((c) => c.id),
    type: n.type ?? 'message',
    ...(n.type && n.type !== 'message' ? {} : { role: n.role ?? 'user' }),
    ...(n.label ? { label: n.label } : {}),
    preview: n.preview ?? `${n.role ?? 'user'}: ${n.id}`,
    line: n.line,
    depth,
    isLeaf: n.id === leafId,
    onLeafPath: onPath.has(n.id),
    isBranchPoint: n.children.length > 1,
  });
  const log = [];

  function rowsOf(params) {
    const tops = params.rootId !== undefined ? [nodes.get(params.rootId)] : ordered(roots);
    if (tops[0] === undefined) throw Object.assign(new Error(`Entry ${params.rootId} not found`), { code: -32002 });
    const out = [];
    if (params.chain) {
      if (tops.length !== 1) return tops.map((t) => [t, 0, null]);
      let node = tops[0];
      let depth = 0;
      let parent = null;
      for (;;) {
        out.push([node, depth, parent]);
        if (node.children.length !== 1 || (params.depth !== undefined && depth >= params.depth)) return out;
        parent = node.id;
        node = node.children[0];
        depth++;
      }
    }
    const stack = [...tops].reverse().map((t) => [t, 0, null]);
    while (stack.length) {
      const [node, depth, parent] = stack.pop();
      out.push([node, depth, parent]);
      if (params.depth !== undefined && depth >= params.depth) continue;
      for (const child of [...ordered(node.children)].reverse()) stack.push([child, depth + 1, node.id]);
    }
    return out;
  }

  function checkRevision(params) {
    if (params.revision !== undefined && params.revision !== server.revision) {
      const message = `The session changed since revision ${params.revision} of its tree (now ${server.revision})`;
      throw Object.assign(new Error(message), { code: -32015, data: { revision: server.revision } });
    }
  }

  function getTree(params) {
    log.push(params);
    checkRevision(params);
    const result = windowOf(params);
    if (params.offset !== undefined || params.limit !== undefined || params.aroundId !== undefined) {
      result.revision = server.revision;
    }
    return result;
  }

  function windowOf(params) {
    const rows = rowsOf(params);
    const limit = params.limit ?? rows.length;
    let offset = params.offset ?? 0;
    const result = { leafId };
    if (params.aroundId !== undefined) {
      if (!nodes.has(params.aroundId)) throw Object.assign(new Error(`Entry ${params.aroundId} not found`), { code: -32002 });
      const path = new Set();
      for (let n = nodes.get(params.aroundId); n; n = n.parent ? nodes.get(n.parent) : undefined) path.add(n.id);
      let found = null;
      rows.forEach(([n], i) => { if (path.has(n.id)) found = i; });
      if (found !== null) offset = Math.max(0, Math.min(found - Math.floor(limit / 2), rows.length - limit));
      result.aroundIndex = found;
    }
    const page = rows.slice(offset, offset + limit);
    result.nodes = page.map(([n, depth, parent]) => row(n, depth, parent));
    if (params.offset !== undefined || params.limit !== undefined || params.aroundId !== undefined) {
      result.total = rows.length;
      result.hasMore = offset + page.length < rows.length;
      if (result.hasMore) result.nextOffset = offset + page.length;
      if (params.aroundId !== undefined) result.offset = offset;
    }
    return result;
  }

  /** pi/getTree `levels`: the windows a tree view asks level by level, in one reply (at most maxLevels). */
  function getLevels(params, maxLevels = Infinity) {
    log.push(params);
    checkRevision(params);
    const reply = levelsOf(params, maxLevels);
    const levels = reply.levels.map((level) => JSON.stringify(level));
    const since = params.since === undefined ? undefined : sent.get(params.since);
    sent.set(server.revision, { levels, onPath: new Set(onPath) });
    if (params.since === undefined) return { ...reply, revision: server.revision };
    if (since === undefined) return { reload: true, revision: server.revision };
    const before = since.levels;
    const left = [...since.onPath].filter((id) => nodes.has(id) && !onPath.has(id));
    const joined = [...onPath].filter((id) => !since.onPath.has(id) && nodes.get(id).line <= lastLine(params.since));
    const stale = new Set();
    for (const id of left) {
      if (nodes.get(id).children.length < 2) continue;
      stale.add(id);
      for (const holder of listHolding(nodes.get(id))) stale.add(holder);
    }
    const relabelled = relabels
      .filter(([at]) => at > Number(params.since))
      .map(([, id]) => id)
      .filter((id, i, ids) => ids.indexOf(id) === i)
      .map((id) => ({ id, ...(nodes.get(id).label ? { label: nodes.get(id).label } : {}) }));
    // a level whose rows changed only in the label of relabelled rows is kept (the view relabels them)
    const ids = new Set(relabelled.map((r) => r.id));
    const unlabelled = (level) => {
      const parsed = JSON.parse(level);
      parsed.nodes = parsed.nodes.map(({ label, ...node }) => (ids.has(node.id) ? node : { ...node, ...(label ? { label } : {}) }));
      return JSON.stringify(parsed);
    };
    const same = (a, b) => a === b || (ids.size > 0 && unlabelled(a) === unlabelled(b));
    // no level kept hangs under a stale list (the top list's: null)
    const hungUnder = [null, ...reply.levels.slice(0, -1).map((level) => level.nodes[level.aroundIndex - level.offset].id)];
    const most = hungUnder.findIndex((id) => stale.has(id));
    let kept = 0;
    while (kept < levels.length && kept < before.length && (most < 0 || kept < most) && same(levels[kept], before[kept])) kept++;
    return {
      ...reply,
      levels: reply.levels.slice(kept),
      keptLevels: kept,
      ...(relabelled.length ? { relabelled } : {}),
      ...(left.length || joined.length ? { leftLeafPath: left, joinedLeafPath: joined } : {}),
      ...(stale.size ? { staleLists: [...stale].filter((id) => id !== null) } : {}),
      revision: server.revision,
    };
  }

  /** The line of the last entry at `revision` (the entries after it are new since). */
  function lastLine(revision) {
    return linesAt.get(revision) ?? 0;
  }

  /** The row the list that holds `node`'s row hangs under (null: the top list; at the top both). */
  function listHolding(node) {
    for (;;) {
      const parent = node.parent ? nodes.get(node.parent) : undefined;
      if (!parent) return [null];
      if (parent.children.length > 1) return [parent.id];
      const grand = parent.parent ? nodes.get(parent.parent) : undefined;
      if (!grand) return [parent.id, null];
      if (grand.children.length > 1) return [parent.id];
      node = parent;
    }
  }

  /** The line of the last entry of each revision. */
  const linesAt = new Map([['1', initialEntries.length]]);
  function next() {
    server.revision = String(Number(server.revision) + 1);
    linesAt.set(server.revision, entries.length);
  }

  function append(more) {
    entries = [...entries, ...more];
    leafId = more[more.length - 1].id;
    build();
    next();
  }

  /** The leaf moved, nothing appended (pi/branch: the editor's Branch Here, or pi's /tree). */
  function branch(id) {
    leafId = id;
    build();
    next();
  }

  function relabel(id, label) {
    entries = entries.map((e) => (e.id === id ? { ...e, label } : e));
    build();
    next();
    relabels.push([Number(server.revision), id]);
  }

  function rewrite(newEntries, newLeaf) {
    entries = [...newEntries];
    leafId = newLeaf;
    build();
    next();
    sent.clear();
  }

  function levelsOf(params, maxLevels) {
    const levels = [];
    const several = ordered(roots).length > 1;
    let kind = 'top';
    let window = { chain: true };
    for (;;) {
      if (levels.length >= maxLevels) return { leafId, levels, complete: false };
      const extra = kind === 'branches' ? 1 : 0;
      const { leafId: _leaf, ...result } = windowOf({ ...window, aroundId: params.aroundId, limit: params.limit + extra });
      levels.push({ kind, ...window, ...result });
      const index = result.aroundIndex;
      if (index === null || index < extra) break;
      const row = result.nodes[index - result.offset];
      if (row.id === params.aroundId) break;
      const head = kind === 'branches' || (kind === 'top' && several);
      if (row.isBranchPoint) {
        kind = 'branches';
        window = { rootId: row.id, depth: 1 };
      } else if (head && row.childIds.length === 1) {
        kind = 'chain';
        window = { rootId: row.childIds[0], chain: true };
      } else break;
    }
    return { leafId, levels, complete: true };
  }

  const server = {
    getTree,
    getLevels,
    append,
    branch,
    relabel,
    rewrite,
    log,
    get nodes() {
      return nodes;
    },
    get leafId() {
      return leafId;
    },
    revision: '1',
  };
  return server;
}

/** A chain of `n` entries (u0, a1, u2, ...), then the branches given as { at, ids } off it. */
function chainEntries(n, prefix = '') {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i % 2 ? 'a' : 'u'}${i}`,
    parent: i === 0 ? null : `${prefix}${(i - 1) % 2 ? 'a' : 'u'}${i - 1}`,
    role: i % 2 ? 'assistant' : 'user',
  }));
}

module.exports = { makeTreeServer, chainEntries };
