// The "Pi Session Tree" view: pi/getTree (flat form) of the active session file, nested by pi's
// /tree indentation, with labels, branch points and the leaf marked.
import * as vscode from 'vscode';
import { FILTER_MODES, type FilterMode, type GetTreeResult, type SkippedLines, type TreeNode } from './protocol';
import { buildDisplayTree, entryLabel, idText, leafMarker, skippedNotice, type DisplayNode } from './treeModel';

/** The tree, and what pi/getInfo says of the lines pi skips (absent from an older server). */
export type FetchTree = (uri: vscode.Uri, filter: FilterMode) => Promise<GetTreeResult & SkippedLines>;

export class SessionTreeProvider implements vscode.TreeDataProvider<DisplayNode> {
  private readonly changed = new vscode.EventEmitter<DisplayNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  private roots: DisplayNode[] = [];
  private rows: DisplayNode[] = [];
  private generation = 0;
  private marker: { node: TreeNode; hidden: boolean } | undefined;
  uri: vscode.Uri | undefined;
  filter: FilterMode;
  leafId: string | null = null;
  /** Set after each load: the error text, or undefined. Shown as the view's message. */
  error: string | undefined;
  /** Set after each load: what the view says of lines pi skips in the file, or undefined. */
  skipped: string | undefined;
  onDidLoad: (() => void) | undefined;

  constructor(
    private readonly fetch: FetchTree,
    initialFilter: FilterMode,
  ) {
    this.filter = FILTER_MODES.includes(initialFilter) ? initialFilter : 'default';
  }

  get nodes(): TreeNode[] {
    return this.rows.map((row) => row.node);
  }

  async setDocument(uri: vscode.Uri | undefined): Promise<void> {
    if (uri?.toString() === this.uri?.toString()) return;
    this.uri = uri;
    await this.refresh();
  }

  async setFilter(filter: FilterMode): Promise<void> {
    this.filter = filter;
    await this.refresh();
  }

  async refresh(): Promise<void> {
    const generation = ++this.generation; // a slower, older answer must not overwrite a newer one
    const uri = this.uri;
    let roots: DisplayNode[] = [];
    let leafId: string | null = null;
    let error: string | undefined;
    let skipped: string | undefined;
    if (uri) {
      try {
        const result = await this.fetch(uri, this.filter);
        roots = buildDisplayTree(result?.nodes ?? []);
        leafId = result?.leafId ?? null;
        skipped = skippedNotice(result);
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
    }
    if (generation !== this.generation) return;
    this.roots = roots;
    this.rows = flatten(roots);
    this.leafId = leafId;
    this.marker = leafMarker(this.rows.map((row) => row.node), leafId);
    this.error = error;
    this.skipped = skipped;
    this.changed.fire(undefined);
    this.onDidLoad?.();
  }

  rowForEntry(entryId: string): DisplayNode | undefined {
    return this.rows.find((row) => row.node.id === entryId);
  }

  getChildren(element?: DisplayNode): DisplayNode[] {
    return element ? element.children : this.roots;
  }

  getParent(element: DisplayNode): DisplayNode | undefined {
    return element.parent;
  }

  getTreeItem(element: DisplayNode): vscode.TreeItem {
    const node = element.node;
    const item = new vscode.TreeItem(
      entryLabel(node),
      element.children.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `${node.line ?? 'x'}:${idText(node.id)}:${this.rows.indexOf(element)}`; // ids may repeat in a damaged file
    const marks: string[] = [];
    if (this.marker?.node === node) marks.push(this.marker.hidden ? '◀ leaf (hidden below)' : '◀ leaf');
    if (node.isBranchPoint) marks.push(`${element.row.children.length} branches`);
    item.description = marks.join(' · ');
    item.iconPath = new vscode.ThemeIcon(
      node.isLeaf ? 'target' : node.isBranchPoint ? 'git-branch' : node.onLeafPath ? 'circle-filled' : 'circle-outline',
    );
    const tooltip = new vscode.MarkdownString();
    tooltip.appendMarkdown(`**${node.role ?? node.type}** \`${idText(node.id)}\`  \n`);
    tooltip.appendText(`${node.line === undefined ? '' : `line ${node.line + 1} · `}${String(node.timestamp ?? '')}`);
    if (node.label) tooltip.appendText(` · label: ${node.label}`);
    if (node.isLeaf) tooltip.appendText(' · current leaf');
    item.tooltip = tooltip;
    item.contextValue = node.isLeaf ? 'piEntry.leaf' : 'piEntry';
    if (this.uri && typeof node.line === 'number') {
      item.command = { command: 'piSession.revealEntry', title: 'Reveal', arguments: [this.uri.toString(), node.line] };
    }
    return item;
  }
}

/** Preorder list of all rows (iterative: a long session may nest deeply). */
function flatten(rows: DisplayNode[]): DisplayNode[] {
  const out: DisplayNode[] = [];
  const stack = [...rows].reverse();
  while (stack.length > 0) {
    const row = stack.pop() as DisplayNode;
    out.push(row);
    for (let i = row.children.length - 1; i >= 0; i--) stack.push(row.children[i]);
  }
  return out;
}
