// The session tree, loaded a level and a page at a time (pi/getTree windows), in the layout of pi's
// /tree: a single-child chain is one flat list, a branch point fans out into its branches, and each
// branch's continuation nests under the branch's first entry. No vscode import: unit-tested directly.
//
// Each list the view shows is a Container:
//   top       what the view lists at the top: the root's chain (`chain: true`), or the roots when
//             there are several (each is then the head of a branch)
//   chain     the continuation of a branch: the chain from the head's only child (`rootId`, `chain`)
//   branches  the branches of a branch point (`rootId` = the branch point, `depth: 1`, its own row
//             skipped), each the head of a branch
// A container holds one window [start, start + rows.length) of its rows; "load more" items extend it.
import { ErrorCodes, type GetTreeParams, type TreeLevel, type TreeLevels, type RelabelledRow, type TreeNode, type TreeReload, type TreeView } from './protocol';

/** pi/getTree params of one window of the tree (flat form, paged). */
export type TreeWindowParams = Pick<GetTreeParams, 'rootId' | 'depth' | 'chain' | 'aroundId' | 'offset' | 'revision'> & { limit: number };

/**
 * pi/getTree `levels`: every list of the /tree layout from the top down to `aroundId`, in one reply (`limit`: rows per level);
 * with `since` (the revision of the levels the tree holds) only what changed since.
 */
export type TreeLevelsParams = Required<Pick<GetTreeParams, 'aroundId' | 'limit'>> & Pick<GetTreeParams, 'revision' | 'since'> & { levels: true };

/** Rows asked for per page. */
export const TREE_PAGE = 200;
/**
 * Rows of each level when the view opens down to an entry (`locate`): the levels of a long session
 * (hundreds) come at once, each with the rows around its row on the path; scrolling loads the rest
 * a page at a time.
 */
export const LEVEL_PAGE = 50;

export type WindowRequest = (params: TreeWindowParams) => Promise<TreeView>;

/** pi/getTree `levels`: every level down to an entry in one request (see LazyTree.locate), or what changed (LazyTree.follow). */
export type LevelsRequest = (params: TreeLevelsParams) => Promise<TreeLevels | TreeReload>;

export type ContainerKind = 'top' | 'chain' | 'branches';

export interface Row {
  readonly kind: 'row';
  node: TreeNode;
  container: Container;
  /** Index in the whole container (not in the loaded window). */
  index: number;
  /** The first entry of a branch: its continuation nests under it. */
  head: boolean;
  /** Stable across reloads of the same tree: the view's item id (ids may repeat in a damaged file). */
  key: string;
  children?: Container;
}

export interface MoreItem {
  readonly kind: 'more';
  container: Container;
  direction: 'before' | 'after';
  count: number;
  key: string;
}

export type TreeItemData = Row | MoreItem;

export class Container {
  rows: Row[] = [];
  start = 0;
  total = 0;
  loaded = false;
  /** top only: the rows are roots (several trees), each the head of a branch. */
  roots = false;
  private pending: Promise<void> | undefined;

  constructor(
    readonly kind: ContainerKind,
    readonly owner: Row | undefined,
    readonly rootId: unknown,
  ) {}

  get key(): string {
    return this.owner ? `${this.owner.key}>` : 'top';
  }

  get end(): number {
    return this.start + this.rows.length;
  }

  /** What the view lists: a "load earlier" item, the loaded rows, a "load more" item. */
  items(): TreeItemData[] {
    const items: TreeItemData[] = [];
    if (this.start > 0) items.push({ kind: 'more', container: this, direction: 'before', count: this.start, key: `${this.key}<more` });
    items.push(...this.rows);
    if (this.end < this.total) {
      items.push({ kind: 'more', container: this, direction: 'after', count: this.total - this.end, key: `${this.key}more>` });
    }
    return items;
  }

  /** Forget the rows held (they are loaded anew). */
  clear(): void {
    this.rows = [];
    this.start = 0;
    this.total = 0;
    this.loaded = false;
  }

  /** Serialises loads of one container (a click on "load more" while the first page still loads). */
  async exclusive(job: () => Promise<void>): Promise<void> {
    const previous = this.pending ?? Promise.resolve();
    const next = previous.then(job, job);
    this.pending = next.catch(() => undefined);
    return next;
  }
}

/**
 * Did the server refuse a window because the session changed since the revision it was asked at
 * (TreeChanged)? Its rows would be of another tree than the rows loaded: the window is asked again
 * once the tree has followed the change (see changedRevision), else the tree is loaded anew.
 */
export function isTreeChanged(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === ErrorCodes.TreeChanged;
}

/** The session's revision a TreeChanged refusal names (its `data.revision`), if it names one. */
export function changedRevision(error: unknown): string | undefined {
  const data = typeof error === 'object' && error !== null ? (error as { data?: unknown }).data : undefined;
  const revision = typeof data === 'object' && data !== null ? (data as { revision?: unknown }).revision : undefined;
  return typeof revision === 'string' ? revision : undefined;
}

/** Is the reply of pi/getTree `levels` levels (not TreeReload: load the tree anew)? */
export function isTreeLevels(reply: TreeLevels | TreeReload): reply is TreeLevels {
  return typeof reply === 'object' && reply !== null && (reply as Partial<TreeReload>).reload !== true && Array.isArray((reply as TreeLevels).levels);
}

/** Does the node hang its own list under it in the view? */
export function hasChildContainer(row: Pick<Row, 'node' | 'head'>): boolean {
  const childIds = Array.isArray(row.node.childIds) ? row.node.childIds : [];
  return row.node.isBranchPoint || (row.head && childIds.length === 1);
}

/** Same entry id (ids of a damaged file may be any JSON value). */
export function sameId(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && a !== null && JSON.stringify(a) === JSON.stringify(b));
}

/** A Map key of an entry id: equal for ids sameId tells equal (and for no others). */
function idKey(id: unknown): string {
  return typeof id === 'string' ? `s${id}` : `j${JSON.stringify(id)}`;
}

/** The keys (idKey) of a list of ids a reply gave (none when it is not a list). */
function idKeys(ids: unknown): Set<string> {
  return new Set(Array.isArray(ids) ? ids.map(idKey) : []);
}

export class LazyTree {
  top: Container = new Container('top', undefined, undefined);
  leafId: unknown = null;
  /**
   * The session's revision the loaded rows were cut from (the first reply's). Every window after it
   * is asked with it: one of a session that changed meanwhile is refused (see isTreeChanged)
   * instead of joining another tree's rows to these.
   */
  revision: string | undefined;
  /**
   * The levels of the last `levels` reply taken in whole: its revision and the row on the path in
   * each level (the next level is that row's list). What `follow` asks the changes since.
   */
  private heldLevels: { revision: string; rows: Row[] } | undefined;

  constructor(
    private readonly request: WindowRequest,
    readonly pageSize = TREE_PAGE,
    private readonly levels?: LevelsRequest,
    readonly levelSize = Math.min(pageSize, LEVEL_PAGE),
  ) {}

  reset(): void {
    this.top = new Container('top', undefined, undefined);
    this.leafId = null;
    this.revision = undefined;
    this.heldLevels = undefined;
  }

  /** The revision of the first reply that gives one (a server that gives none is asked without). */
  private noteRevision(revision: unknown): void {
    if (this.revision === undefined && typeof revision === 'string') this.revision = revision;
  }

  /** The list under a row, made on first use (undefined: the row has none). */
  childContainer(row: Row): Container | undefined {
    if (row.children) return row.children;
    if (!hasChildContainer(row)) return undefined;
    const childIds = Array.isArray(row.node.childIds) ? row.node.childIds : [];
    row.children = row.node.isBranchPoint ? new Container('branches', row, row.node.id) : new Container('chain', row, childIds[0]);
    return row.children;
  }

  private windowParams(container: Container): Omit<TreeWindowParams, 'limit'> {
    switch (container.kind) {
      case 'top':
        return { chain: true };
      case 'chain':
        return { rootId: container.rootId, chain: true };
      case 'branches':
        return { rootId: container.rootId, depth: 1 };
    }
  }

  /** Rows of the server's window before the container's own (the branch point's row for branches). */
  private static skipped(container: Container): number {
    return container.kind === 'branches' ? 1 : 0;
  }

  /**
   * Load a page of `container`: at `offset`, or around the row on the path to `aroundId`. The page
   * joins the loaded window when the two touch, else replaces it. Returns the index (in the container)
   * of the row on the path to `aroundId`, if any.
   */
  async load(container: Container, options: { offset?: number; aroundId?: unknown; limit?: number } = {}): Promise<number | undefined> {
    let aroundIndex: number | undefined;
    await container.exclusive(async () => {
      const skip = LazyTree.skipped(container);
      const limit = Math.max(1, options.limit ?? this.pageSize);
      const params: TreeWindowParams = { ...this.windowParams(container), offset: (options.offset ?? 0) + skip, limit: limit + skip };
      if (options.aroundId !== undefined) params.aroundId = options.aroundId;
      if (this.revision !== undefined) params.revision = this.revision;
      const result = await this.request(params);
      this.noteRevision(result.revision);
      if (container === this.top) this.leafId = result.leafId ?? null;
      aroundIndex = this.apply(container, params.offset ?? 0, result);
    });
    return aroundIndex;
  }

  /**
   * Take the server's reply for a window of `container` (asked from `offset`, the skipped rows
   * included) into it; the index (in the container) of the row on the path to `aroundId`, if any.
   */
  private apply(container: Container, offset: number, result: Pick<TreeView, 'nodes' | 'total' | 'offset' | 'aroundIndex'>): number | undefined {
    const skip = LazyTree.skipped(container);
    const nodes = Array.isArray(result.nodes) ? result.nodes : [];
    let first = typeof result.offset === 'number' ? result.offset : offset;
    let pageNodes = nodes;
    if (first < skip) {
      pageNodes = nodes.slice(skip - first);
      first = skip;
    }
    const start = first - skip;
    const total = Math.max(0, (typeof result.total === 'number' ? result.total : nodes.length) - skip);
    this.merge(container, start, pageNodes, total);
    return typeof result.aroundIndex === 'number' && result.aroundIndex >= skip ? result.aroundIndex - skip : undefined;
  }

  private merge(container: Container, start: number, nodes: TreeNode[], total: number): void {
    const make = (node: TreeNode, index: number): Row => ({
      kind: 'row',
      node,
      container,
      index,
      head: container.kind === 'branches' || (container.kind === 'top' && container.roots),
      key: `${container.key}${index}`,
    });
    if (container.kind === 'top') {
      // in a chain the row at index i has depth i; the roots of several trees all have depth 0
      container.roots = total > 1 && nodes.some((node, i) => node.depth !== start + i);
    }
    const rows = nodes.map((node, i) => make(node, start + i));
    const touches = container.loaded && container.total === total && start <= container.end && start + rows.length >= container.start;
    if (!touches) {
      container.rows = rows;
      container.start = start;
    } else {
      const before = container.rows.filter((row) => row.index < start);
      const after = container.rows.filter((row) => row.index >= start + rows.length);
      // a row loaded before keeps its object (the view's expansion and its own loaded children)
      const kept = new Map(container.rows.map((row) => [row.index, row]));
      const merged = rows.map((row) => {
        const old = kept.get(row.index);
        return old && sameId(old.node.id, row.node.id) ? Object.assign(old, { node: row.node }) : row;
      });
      container.rows = [...before, ...merged, ...after];
      container.start = Math.min(container.start, start);
    }
    container.total = total;
    container.loaded = true;
  }

  /** The next page after (or before) the loaded window. */
  async loadMore(container: Container, direction: 'before' | 'after'): Promise<void> {
    if (direction === 'after') {
      await this.load(container, { offset: container.end });
    } else {
      const offset = Math.max(0, container.start - this.pageSize);
      await this.load(container, { offset, limit: container.start - offset });
    }
  }

  /** The first page of a container, unless it is loaded. */
  async ensureLoaded(container: Container): Promise<void> {
    if (!container.loaded) await this.load(container, { offset: 0 });
  }

  /**
   * Load the containers down the path to `entryId` (around it at each level) and return its row, or
   * the deepest shown row on its path when the filter hides it. Undefined when no row is on it. With
   * a `levels` request every level comes in one reply (a session with thousands of branch points on
   * the path opened in thousands of requests otherwise); what it leaves out is asked level by level.
   */
  async locate(entryId: unknown): Promise<Row | undefined> {
    if (this.levels) {
      const params: TreeLevelsParams = { levels: true, aroundId: entryId, limit: this.levelSize };
      if (this.revision !== undefined) params.revision = this.revision;
      const reply = await this.levels(params);
      if (!isTreeLevels(reply)) throw new Error('The server answered pi/getTree levels without levels');
      this.leafId = reply.leafId ?? null;
      this.noteRevision(reply.revision);
      const step = await this.takeLevels(entryId, reply, this.top, []);
      if (step.done) return step.found;
      return this.descend(step.next, entryId, step.found);
    }
    return this.descend(this.top, entryId, undefined);
  }

  /**
   * Take in what changed since the levels the tree holds (pi appended to the session, or its leaf
   * moved): the levels down to `entryId` (the new leaf) asked with `since`. The lists the server
   * names stale go first (they are loaded anew when shown); the levels the server says are as the
   * tree holds them stay (with the lists opened under them); each level after them replaces what
   * the tree holds of its list, the rows it still has keeping the lists opened under them (see
   * keepHeld); the rows of an entry whose label changed, or that left the leaf's path or joined it
   * (a move of the leaf, with a turn below it or not), are changed wherever they are.
   * Returns the row on the path to `entryId` (as locate), or `reload` when the tree must be loaded
   * anew: the server said so (not an append below the leaf, a revision it no longer knows), the
   * tree holds no whole levels reply, or the reply does not fit what it holds. An error of the
   * request is thrown (the caller loads anew then too).
   */
  async follow(entryId: unknown): Promise<{ found: Row | undefined } | 'reload'> {
    const held = this.heldLevels;
    if (!this.levels || !held) return 'reload';
    const params: TreeLevelsParams = { levels: true, aroundId: entryId, limit: this.levelSize, since: held.revision };
    const reply = await this.levels(params);
    if (!isTreeLevels(reply) || typeof reply.revision !== 'string') return 'reload';
    const kept = reply.keptLevels;
    if (typeof kept !== 'number' || !Number.isInteger(kept) || kept < 0 || kept > held.rows.length) return 'reload';
    const keptRows = held.rows.slice(0, kept);
    const above = keptRows[keptRows.length - 1];
    this.dropLists(idKeys(reply.staleLists)); // (before the list the levels start in is found)
    const from = above === undefined ? this.top : this.childContainer(above);
    this.heldLevels = undefined; // (until the levels are all taken in again)
    this.leafId = reply.leafId ?? null;
    this.revision = reply.revision; // the windows asked from now on are of this tree
    this.relabel(Array.isArray(reply.relabelled) ? reply.relabelled : []);
    this.markPath(idKeys(reply.leftLeafPath), idKeys(reply.joinedLeafPath));
    if (reply.levels.length === 0) {
      // every level as held: the path's row is the one before (a new leaf the filter hides)
      this.heldLevels = { revision: reply.revision, rows: keptRows };
      return { found: above };
    }
    if (!from) return 'reload';
    const step = await this.takeLevels(entryId, reply, from, keptRows, true);
    if (step.done) return { found: step.found };
    return { found: await this.descend(step.next, entryId, step.found) };
  }

  /** The label of the rows of each entry named (`relabelled` of a `levels` reply with `since`). */
  private relabel(changed: RelabelledRow[]): void {
    if (changed.length === 0) return;
    for (const row of this.loadedRows()) {
      const found = changed.find((c) => sameId(c.id, row.node.id));
      if (!found) continue;
      const node = { ...row.node };
      delete node.label;
      delete node.labelTimestamp;
      if (found.label !== undefined) node.label = found.label;
      if (found.labelTimestamp !== undefined) node.labelTimestamp = found.labelTimestamp;
      row.node = node;
    }
  }

  /** Drop the list under each row of an entry named (`staleLists`: its rows changed otherwise). */
  private dropLists(stale: Set<string>): void {
    if (stale.size === 0) return;
    for (const row of this.loadedRows()) if (stale.has(idKey(row.node.id))) row.children = undefined;
  }

  /** The rows of the entries that left the leaf's path (neither on it nor the leaf now) or joined it. */
  private markPath(left: Set<string>, joined: Set<string>): void {
    if (left.size === 0 && joined.size === 0) return;
    for (const row of this.loadedRows()) {
      const key = idKey(row.node.id);
      if (left.has(key)) row.node = { ...row.node, onLeafPath: false, isLeaf: false };
      else if (joined.has(key)) row.node = { ...row.node, onLeafPath: true };
    }
  }

  /**
   * Each level of a `levels` reply into its container, from `from` (the container of the first of
   * them) down the path, after the levels whose path rows are `above`; where it stopped. `anew`:
   * each container's rows are replaced by its level's (what was held of its list goes, but the
   * rows the level still has: see keepHeld).
   */
  private async takeLevels(
    entryId: unknown,
    reply: TreeLevels,
    from: Container,
    above: Row[],
    anew = false,
  ): Promise<{ done: true; found: Row | undefined } | { done: false; found: Row | undefined; next: Container | undefined }> {
    let container: Container | undefined = from;
    let found: Row | undefined = above[above.length - 1];
    const rows = [...above];
    const whole = (result: { done: true; found: Row | undefined }) => {
      if (typeof reply.revision === 'string' && reply.complete) this.heldLevels = { revision: reply.revision, rows };
      return result;
    };
    for (const level of Array.isArray(reply.levels) ? reply.levels : []) {
      const into: Container | undefined = container;
      if (!into || !LazyTree.isWindowOf(into, level)) return { done: false, found, next: into }; // ask level by level
      let index: number | undefined;
      await into.exclusive(async () => {
        const held = anew ? into.rows : [];
        if (anew) into.clear();
        index = this.apply(into, level.offset, level);
        LazyTree.keepHeld(into, held);
      });
      const row: Row | undefined = index === undefined ? undefined : into.rows.find((r) => r.index === index);
      if (!row) return whole({ done: true, found });
      found = row;
      rows.push(row);
      if (sameId(row.node.id, entryId)) return whole({ done: true, found });
      container = this.childContainer(row);
    }
    if (!container) return whole({ done: true, found });
    if (reply.complete) return whole({ done: true, found });
    return { done: false, found, next: container };
  }

  /**
   * After a level sent again replaced what `container` held (`held`: its rows before): each row of
   * the same entry keeps its object, and the list opened under it (a branch the user expanded,
   * whose rows the server did not change) while the row still has that list, wherever it is in the
   * list now (a branch to an older entry puts the branch on the path first). A row that moved takes
   * the key of its place (the view's item: expanded while its list is loaded). Rows the level no
   * longer has go: the server tells nothing of them. Where ids repeat (a damaged file) a row keeps
   * its object only at the same place.
   */
  private static keepHeld(container: Container, held: Row[]): void {
    if (held.length === 0) return;
    const byId = new Map<string, Row>();
    const repeated = new Set<string>();
    for (const row of held) {
      const key = idKey(row.node.id);
      if (byId.has(key)) repeated.add(key);
      byId.set(key, row);
    }
    container.rows = container.rows.map((row) => {
      const key = idKey(row.node.id);
      const old = byId.get(key);
      if (!old || old.head !== row.head || (repeated.has(key) && old.index !== row.index)) return row;
      if (old.children && !LazyTree.sameList(old.node, row.node)) old.children = undefined;
      old.node = row.node;
      if (old.index !== row.index) LazyTree.moved(old, row.index, row.key);
      return old;
    });
  }

  /** A row kept at another place in its list: its index and key, and the keys below it, are the place's. */
  private static moved(row: Row, index: number, key: string): void {
    row.index = index;
    row.key = key;
    const stack = row.children ? [row.children] : [];
    while (stack.length > 0) {
      const container = stack.pop() as Container;
      for (const below of container.rows) {
        below.key = `${container.key}${below.index}`;
        if (below.children) stack.push(below.children);
      }
    }
  }

  /** Do two rows of one entry hang the same list under them (see childContainer)? */
  private static sameList(before: TreeNode, now: TreeNode): boolean {
    if (Boolean(before.isBranchPoint) !== Boolean(now.isBranchPoint)) return false;
    const first = (node: TreeNode) => (Array.isArray(node.childIds) ? node.childIds[0] : undefined);
    return Boolean(now.isBranchPoint) || sameId(first(before), first(now));
  }

  /** Is `level` the server's window of `container`? (The same layout on both sides.) */
  private static isWindowOf(container: Container, level: TreeLevel): boolean {
    return level.kind === container.kind && (container.kind === 'top' || sameId(level.rootId, container.rootId));
  }

  /** Load the containers from `container` down the path to `entryId`, a request per level. */
  private async descend(container: Container | undefined, entryId: unknown, found: Row | undefined): Promise<Row | undefined> {
    for (let level = 0; container && level < 10_000; level++) {
      const index = await this.load(container, { aroundId: entryId, limit: this.levelSize });
      const row: Row | undefined = index === undefined ? undefined : container.rows.find((r) => r.index === index);
      if (!row) break;
      found = row;
      if (sameId(row.node.id, entryId)) break;
      container = this.childContainer(row);
    }
    return found;
  }

  /** Every loaded row (for tests and for finding a row by entry id). */
  loadedRows(): Row[] {
    const out: Row[] = [];
    const stack: Container[] = [this.top];
    while (stack.length > 0) {
      const container = stack.pop() as Container;
      for (const row of container.rows) {
        out.push(row);
        if (row.children?.loaded) stack.push(row.children);
      }
    }
    return out;
  }
}
