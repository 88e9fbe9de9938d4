// The "Session Tree" view: the active session in the layout of pi's /tree, loaded lazily (a level on
// expand, a page on "load more"; see lazyTree.ts), with an icon per role and entry type, labels, branch
// points, and the leaf selected on load.
import * as vscode from 'vscode';
import {
  LazyTree,
  changedRevision,
  hasChildContainer,
  isTreeChanged,
  type Container,
  type LevelsRequest,
  type Row,
  type TreeItemData,
  type TreeLevelsParams,
  type TreeWindowParams,
  type WindowRequest,
} from './lazyTree';
import { lineName } from './lineBreaks';
import type { LoneCarriageReturnLine, TreeLevels, TreeNode, TreeView } from './protocol';
import { FILTER_MODES, type FilterMode } from './settings';
import { entryLabel, firstSkippedLine, iconFor, idText, skippedNotice, type SkippedLines } from './treeModel';

/** What the view reads from the server. */
export interface TreeSource {
  window(uri: vscode.Uri, filter: FilterMode, params: TreeWindowParams): Promise<TreeView>;
  /** pi/getTree `levels`: every level down to an entry in one reply (else one request per level). */
  levels?(uri: vscode.Uri, filter: FilterMode, params: TreeLevelsParams): Promise<TreeLevels>;
  /** pi/getInfo: the lines pi skips and how many entries the session has. */
  info(uri: vscode.Uri): Promise<(SkippedLines & { entryCount?: number }) | undefined>;
  /** pi/getLineBreaks: the file's lone CRs, where VS Code's lines part from pi's (absent: none). */
  lineBreaks?(uri: vscode.Uri): Promise<LoneCarriageReturnLine[]>;
}

/**
 * Loads begun anew, one after another, when the session changes while one loads (its windows would
 * be of two trees); past that the error is shown, and the session's next change loads it again.
 */
export const RELOADS_ON_CHANGE = 5;

/**
 * How long a window refused because the session changed waits for the pi/didChange the change is
 * told by, when the refusal came first (then the tree follows, and the window is asked again at the
 * new revision); none by then: the tree is loaded anew.
 */
export const CATCH_UP_WAIT_MS = 1_000;

/** Sessions with at most this many entries open with every branch expanded (as pi's /tree shows them). */
export const EXPAND_ALL_UP_TO = 2_000;

export class SessionTreeProvider implements vscode.TreeDataProvider<TreeItemData> {
  private readonly changed = new vscode.EventEmitter<TreeItemData | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  /** Bumped when the document or the filter changes: a load begun before is not shown. */
  private generation = 0;
  /** The load running (one at a time), and the one load asked for while it runs. */
  private loading: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /**
   * What the next load takes in: the leaf after entries were appended (the tree follows the change:
   * see LazyTree.follow), or undefined for a load anew (any other change, or one not told).
   */
  private nextLeaf: { id: unknown } | undefined;
  private expandAll = false;
  tree: LazyTree | undefined;
  /** The row with the leaf marker: the leaf, or its deepest shown ancestor when the filter hides it. */
  marker: Row | undefined;
  uri: vscode.Uri | undefined;
  filter: FilterMode;
  /** Set after each load: whether it took in what changed (`since`) rather than loading anew. */
  followed = false;
  /** Set after each load: the error text, or undefined. Shown as the view's message. */
  error: string | undefined;
  /** Set after each load: what the view says of lines pi skips in the file, or undefined. */
  skipped: string | undefined;
  onDidLoad: (() => void) | undefined;
  /** The changes of the top rows told to VS Code, and how many of them it had when it last asked
   * for them (see rowsShown). */
  private topChanges = 0;
  private topChangesFetched = 0;
  private topFetchedWaiters: (() => void)[] = [];
  /** See CATCH_UP_WAIT_MS (a test sets a shorter wait). */
  catchUpWaitMs = CATCH_UP_WAIT_MS;
  /** The refused windows waiting for the next refresh or reload (see caughtUpTo). */
  private refreshWaiters: (() => void)[] = [];
  /** The file's lone CRs, for the lines the view names (see lineBreaks). */
  private breaks: { uri: string; lines: Promise<readonly LoneCarriageReturnLine[]> } | undefined;

  constructor(
    private readonly source: TreeSource,
    initialFilter: FilterMode,
    readonly pageSize?: number,
  ) {
    this.filter = FILTER_MODES.includes(initialFilter) ? initialFilter : 'default';
  }

  get empty(): boolean {
    return !this.tree || (this.tree.top.loaded && this.tree.top.total === 0);
  }

  async setDocument(uri: vscode.Uri | undefined): Promise<void> {
    if (uri?.toString() === this.uri?.toString()) return;
    this.uri = uri;
    await this.reload();
  }

  async setFilter(filter: FilterMode): Promise<void> {
    this.filter = filter;
    await this.reload();
  }

  /**
   * Load the tree anew: the top level around the leaf, and each level down to it. One load runs at a
   * time: every refresh asked for while it runs (pi appending turn after turn, each a pi/didChange)
   * shares one more load after it. A session that changes faster than it loads is then still shown,
   * each load a little behind the file, where loads that each dropped the one before showed nothing
   * and kept the server computing trees no one would see.
   *
   * `newLeaf`: the change was entries appended (pi/didChange `appended`) or a move of the leaf
   * (Branch Here), and this is the leaf after it: the tree takes in what changed (the levels that
   * changed, asked with `since`) instead of loading anew, unless another change without it comes
   * before the load, or the server answers that it must be loaded anew, or the request fails.
   */
  refresh(newLeaf?: { id: unknown }): Promise<void> {
    this.breaks = undefined;
    const started = this.queueRefresh(newLeaf);
    this.wakeRefreshWaiters();
    return started;
  }

  private queueRefresh(newLeaf: { id: unknown } | undefined): Promise<void> {
    // a load queued and not started yet takes this change in too: it follows only if both can be
    this.nextLeaf = newLeaf && (!this.queued || this.nextLeaf) ? newLeaf : undefined;
    if (!this.loading) return this.startLoad();
    if (!this.queued) {
      const queued: Promise<void> = this.loading.then(() => {
        if (this.queued !== queued) return this.loading; // a reload started meanwhile: that is the one
        this.queued = undefined;
        return this.startLoad();
      });
      this.queued = queued;
    }
    return this.queued;
  }

  /**
   * Load now, without waiting for the load running (which is not shown): another document or filter,
   * or the user's Refresh.
   */
  reload(): Promise<void> {
    this.breaks = undefined;
    this.generation++;
    this.queued = undefined;
    this.nextLeaf = undefined;
    const started = this.startLoad();
    this.wakeRefreshWaiters();
    return started;
  }

  /**
   * The lone CRs of the session file, asked when a line is first named (a notice, a row's tooltip)
   * and kept until the file changes (a refresh) or the view loads anew: one request per file state,
   * none for a view that names no line.
   */
  private lineBreaks(uri: vscode.Uri): Promise<readonly LoneCarriageReturnLine[]> {
    const key = uri.toString();
    if (this.breaks?.uri !== key) {
      const asked = this.source.lineBreaks?.(uri).catch(() => []);
      this.breaks = { uri: key, lines: asked ?? Promise.resolve([]) };
    }
    return this.breaks.lines;
  }

  private wakeRefreshWaiters(): void {
    for (const wake of this.refreshWaiters.splice(0)) wake();
  }

  /** Resolves at the next refresh or reload (its load running or queued then), or after `ms`. */
  private nextRefresh(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.refreshWaiters = this.refreshWaiters.filter((waiter) => waiter !== wake);
        resolve();
      }, ms);
      this.refreshWaiters.push(wake);
    });
  }

  private startLoad(): Promise<void> {
    const load = this.load();
    this.loading = load;
    // (runs before a queued load's start: both wait on this load, and this one was added first)
    void load.then(() => {
      if (this.loading === load) this.loading = undefined;
    });
    return load;
  }

  /** One load, shown when it ends unless the document or the filter changed meanwhile. Never rejects. */
  private async load(): Promise<void> {
    const leaf = this.nextLeaf;
    this.nextLeaf = undefined;
    if (leaf && (await this.follow(leaf.id))) return;
    const generation = this.generation;
    const uri = this.uri;
    const filter = this.filter;
    let tree: LazyTree | undefined;
    let marker: Row | undefined;
    let error: string | undefined;
    let skipped: string | undefined;
    let expandAll = false;
    if (uri) {
      const request: WindowRequest = (params) => this.source.window(uri, filter, params);
      const source = this.source;
      const levels: LevelsRequest | undefined = source.levels ? (params) => source.levels!(uri, filter, params) : undefined;
      for (let reloads = 0; ; reloads++) {
        tree = new LazyTree(request, this.pageSize, levels);
        marker = undefined;
        error = undefined;
        try {
          const [info] = await Promise.all([this.source.info(uri).catch(() => undefined), tree.load(tree.top)]);
          skipped = skippedNotice(info, firstSkippedLine(info) === undefined ? [] : await this.lineBreaks(uri));
          expandAll = typeof info?.entryCount === 'number' && info.entryCount <= EXPAND_ALL_UP_TO;
          if (tree.leafId !== null && tree.leafId !== undefined) marker = await tree.locate(tree.leafId);
        } catch (e) {
          error = e instanceof Error ? e.message : String(e);
          if (isTreeChanged(e) && reloads < RELOADS_ON_CHANGE && generation === this.generation) continue;
        }
        break;
      }
    }
    if (generation !== this.generation) return;
    this.tree = tree;
    this.marker = marker;
    this.followed = false;
    this.error = error;
    this.skipped = skipped;
    this.expandAll = expandAll;
    this.showChanges(undefined);
    this.onDidLoad?.();
  }

  /**
   * Take in what changed since the tree shown was loaded (entries appended, the leaf moved: `leafId`
   * the leaf now); false when it must be loaded anew instead (the server said so, or the request
   * failed).
   */
  private async follow(leafId: unknown): Promise<boolean> {
    const tree = this.tree;
    const generation = this.generation;
    if (!tree || this.error !== undefined) return false;
    let followed: Awaited<ReturnType<LazyTree['follow']>>;
    try {
      followed = await tree.follow(leafId);
    } catch {
      return false; // (a load anew tells what is wrong, if anything still is)
    }
    if (followed === 'reload') return false;
    if (generation !== this.generation || tree !== this.tree) return true; // another load shows its own
    this.marker = followed.found;
    this.followed = true;
    this.showChanges(undefined);
    this.onDidLoad?.();
    return true;
  }

  /** The row of an entry (or its deepest shown ancestor), its levels loaded. */
  async locate(entryId: unknown): Promise<Row | undefined> {
    const tree = this.tree;
    if (!tree) return undefined;
    const located = await this.askCatchingUp(tree, () => tree.locate(entryId));
    if (!located || tree !== this.tree) return undefined; // loaded anew meanwhile: the row is of the old tree
    this.showChanges(undefined);
    return located.answer;
  }

  /** A "load more" item was clicked. */
  async loadMore(container: Container, direction: 'before' | 'after'): Promise<void> {
    const tree = this.tree;
    if (!tree) return;
    if (!(await this.askCatchingUp(tree, () => tree.loadMore(container, direction)))) return;
    this.showChanges(container.owner);
  }

  /**
   * Ask `tree` for windows (`ask`: a page, the levels down to an entry), pinned to the revision its
   * rows were cut from. Refused because the session changed (TreeChanged, naming its revision now):
   * pi appended, and the tree takes that in (follow) when pi/didChange tells it, which may be before
   * the refusal comes back, while it does, or after it (then the refusal waits for it, up to
   * catchUpWaitMs). Once the tree has followed to the revision the refusal names (the loads running
   * or queued then ended first), `ask` runs again, at that revision. Else
   * (the follow answered that the tree must be loaded anew, failed, or none came) the tree is
   * loaded anew, as it is when the second ask is refused too: a session that keeps changing is not
   * chased. `answer`: what `ask` answered; undefined when it did not (the tree is loaded anew).
   */
  private async askCatchingUp<T>(tree: LazyTree, ask: () => Promise<T>): Promise<{ answer: T } | undefined> {
    for (let asked = 0; ; asked++) {
      try {
        return { answer: await ask() };
      } catch (e) {
        if (!isTreeChanged(e)) throw e;
        if (asked === 0 && (await this.caughtUpTo(tree, changedRevision(e)))) continue;
        if (tree === this.tree) void this.refresh(); // (another tree shown meanwhile: loaded anew already)
        return undefined;
      }
    }
  }

  /**
   * Is `tree` shown, at `revision`, once the loads running or queued now have ended (if it is not yet)?
   * None running or queued: the change was not told yet, and the next refresh (its pi/didChange) is
   * waited for, up to catchUpWaitMs.
   */
  private async caughtUpTo(tree: LazyTree, revision: string | undefined): Promise<boolean> {
    if (revision === undefined) return false;
    const untold = tree === this.tree && tree.revision !== revision && !this.loading && !this.queued;
    if (untold) await this.nextRefresh(this.catchUpWaitMs);
    if (tree.revision !== revision) await (this.queued ?? this.loading);
    return tree === this.tree && tree.revision === revision;
  }

  /** `element` changed (undefined: the whole tree): VS Code asks for its rows again. */
  private showChanges(element: TreeItemData | undefined): void {
    if (!element) this.topChanges++;
    this.changed.fire(element);
  }

  /**
   * Resolves once VS Code has the top rows of the tree as it is now. A hidden view takes a change in
   * only when it is shown again, asking for the rows after it became visible: a reveal before that
   * names rows it does not have yet (it fails: "Data tree node not found").
   */
  rowsShown(): Promise<void> {
    if (this.topChangesFetched === this.topChanges) return Promise.resolve();
    return new Promise((resolve) => this.topFetchedWaiters.push(resolve));
  }

  /** VS Code was given the top rows as they were after `changes` (the waiters run after it has
   * them: the extension host sends them once each row's item is made). */
  private topRowsGiven(changes: number): void {
    this.topChangesFetched = changes;
    if (changes !== this.topChanges) return; // changed again meanwhile: VS Code asks once more
    const waiters = this.topFetchedWaiters.splice(0);
    if (waiters.length > 0) setTimeout(() => waiters.forEach((resolve) => resolve()), 0);
  }

  async getChildren(element?: TreeItemData): Promise<TreeItemData[]> {
    const changes = this.topChanges;
    const children = await this.childrenOf(this.tree, element);
    if (!element) this.topRowsGiven(changes);
    return children;
  }

  private async childrenOf(tree: LazyTree | undefined, element: TreeItemData | undefined): Promise<TreeItemData[]> {
    if (!tree || element?.kind === 'more') return [];
    const container = element ? tree.childContainer(element) : tree.top;
    if (!container) return [];
    try {
      if (!(await this.askCatchingUp(tree, () => tree.ensureLoaded(container)))) return []; // (loaded anew, this level with it)
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      this.onDidLoad?.();
      return [];
    }
    return container.items();
  }

  getParent(element: TreeItemData): TreeItemData | undefined {
    return element.container.owner;
  }

  getTreeItem(element: TreeItemData): vscode.TreeItem {
    if (element.kind === 'more') {
      const what = element.direction === 'before' ? 'earlier' : 'more';
      const count = (n: number) => n.toLocaleString('en-US');
      const item = new vscode.TreeItem(`Load ${count(Math.min(element.count, this.tree?.pageSize ?? element.count))} ${what} (of ${count(element.count)})…`);
      item.id = `${this.filter}:${element.key}`;
      item.iconPath = new vscode.ThemeIcon('ellipsis');
      item.command = { command: 'piSession.tree.loadMore', title: 'Load more', arguments: [element] };
      item.contextValue = 'piMore';
      return item;
    }
    const node = element.node;
    let state = vscode.TreeItemCollapsibleState.None;
    if (hasChildContainer(element)) {
      const open = this.expandAll || node.onLeafPath || element.children?.loaded === true;
      state = open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
    }
    const item = new vscode.TreeItem(entryLabel(node), state);
    item.id = `${this.filter}:${element.key}:${idText(node.id)}`;
    const marks: string[] = [];
    if (this.marker === element) marks.push(node.isLeaf ? '◀ leaf' : '◀ leaf (hidden below)');
    if (node.isBranchPoint) marks.push(`${Array.isArray(node.childIds) ? node.childIds.length : 0} branches`);
    item.description = marks.join(' · ');
    const color = node.isLeaf ? new vscode.ThemeColor('charts.orange') : node.onLeafPath ? undefined : new vscode.ThemeColor('disabledForeground');
    item.iconPath = new vscode.ThemeIcon(iconFor(node), color);
    item.contextValue = node.isLeaf ? 'piEntry.leaf' : 'piEntry';
    if (this.uri) {
      const target = { uri: this.uri.toString(), entryId: node.id, line: node.line };
      item.command = { command: 'piSession.openEntry', title: 'Open', arguments: [target] };
    }
    return item;
  }

  /** A row's tooltip, made when the mouse is on the row: it names the row's line as VS Code does. */
  async resolveTreeItem(item: vscode.TreeItem, element: TreeItemData): Promise<vscode.TreeItem> {
    if (element.kind === 'row' && this.uri) item.tooltip = rowTooltip(element.node, await this.lineBreaks(this.uri));
    return item;
  }
}

function rowTooltip(node: TreeNode, breaks: readonly LoneCarriageReturnLine[]): vscode.MarkdownString {
  const tooltip = new vscode.MarkdownString();
  tooltip.appendMarkdown(`**${node.role ?? node.type}** \`${idText(node.id).replace(/`/g, "'")}\`  \n`);
  tooltip.appendText(`${typeof node.line === 'number' ? `${lineName(node.line, breaks)} · ` : ''}${String(node.timestamp ?? '')}`);
  if (node.label) tooltip.appendText(` · label: ${node.label}`);
  if (node.isLeaf) tooltip.appendText(' · current leaf');
  return tooltip;
}
