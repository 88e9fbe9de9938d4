// Pure helpers over the flat form of pi/getTree: no vscode import, so they are unit-tested directly.
import type { SkippedLines, TreeNode } from './protocol';

/** A node of the visible tree, rebuilt from the flat preorder list. */
export interface TreeRow {
  node: TreeNode;
  children: TreeRow[];
}

/**
 * The visible tree from pi/getTree's flat form: rows come in preorder and `depth` is the depth in
 * the visible tree, so a row's parent is the nearest earlier row one level up. (Ids are not used:
 * a damaged file may repeat them.)
 */
export function buildVisibleTree(nodes: readonly TreeNode[]): TreeRow[] {
  const roots: TreeRow[] = [];
  const open: TreeRow[] = [];
  for (const node of nodes) {
    const row: TreeRow = { node, children: [] };
    while (open.length > 0 && open[open.length - 1].node.depth >= node.depth) open.pop();
    const parent = open[open.length - 1];
    if (parent) parent.children.push(row);
    else roots.push(row);
    open.push(row);
  }
  return roots;
}

/** A row of the session tree as the view shows it. */
export interface DisplayNode {
  node: TreeNode;
  children: DisplayNode[];
  parent?: DisplayNode;
  /** The first entry of a branch (or of one of several roots): its continuation nests under it. */
  head: boolean;
  row: TreeRow;
}

/**
 * The layout of pi's /tree and `pi-session tree`: a single-child chain stays one flat list (a long
 * conversation does not drift right one level per message); a branch point fans out into its
 * branches, and each branch's entries nest under the branch's first entry.
 */
export function buildDisplayTree(nodes: readonly TreeNode[]): DisplayNode[] {
  const make = (row: TreeRow, parent: DisplayNode | undefined, head: boolean): DisplayNode => ({
    node: row.node,
    children: [],
    parent,
    head,
    row,
  });
  const chain = (first: TreeRow, parent: DisplayNode | undefined): DisplayNode[] => {
    const items: DisplayNode[] = [];
    let current: TreeRow | undefined = first;
    while (current) {
      items.push(make(current, parent, false));
      current = current.children.length === 1 ? current.children[0] : undefined;
    }
    return items;
  };
  const roots = buildVisibleTree(nodes);
  const top = roots.length === 1 ? chain(roots[0], undefined) : roots.map((row) => make(row, undefined, true));
  const pending = [...top]; // iterative: a session can be a 200,000-entry chain
  while (pending.length > 0) {
    const item = pending.pop() as DisplayNode;
    const kids = item.row.children;
    if (kids.length >= 2) item.children = kids.map((row) => make(row, item, true));
    else if (kids.length === 1 && item.head) item.children = chain(kids[0], item);
    pending.push(...item.children);
  }
  return top;
}

/** One line of text: newlines and tabs become spaces, long text is cut with an ellipsis. */
export function oneLine(text: string, max = 120): string {
  const flat = text.replace(/[\r\n\t]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** "role: preview" for messages, the preview alone for other entry types (it names them). */
export function entryText(node: TreeNode): string {
  const preview = oneLine(typeof node.preview === 'string' ? node.preview : '');
  if (node.role) {
    const prefix = `${node.role}:`;
    if (preview.startsWith(prefix)) return preview;
    return preview ? `${prefix} ${preview}` : `${prefix} (no content)`;
  }
  return preview || `[${node.type}]`;
}

/** The label shown in the tree: "[label] role: preview". */
export function entryLabel(node: TreeNode): string {
  return node.label ? `[${node.label}] ${entryText(node)}` : entryText(node);
}

/** A JS-string view of an id for messages (ids of a damaged file may be any JSON value). */
export function idText(id: unknown): string {
  return typeof id === 'string' ? id : JSON.stringify(id) ?? 'undefined';
}

/** The node that starts at `line` (0-based), if any. */
export function nodeAtLine(nodes: readonly TreeNode[], line: number): TreeNode | undefined {
  return nodes.find((n) => n.line === line);
}

/**
 * Where to show the leaf marker: the leaf's row, or, when the filter hides the leaf (a label or a
 * model change is often the leaf), its nearest shown ancestor, the deepest row on the leaf's path.
 */
export function leafMarker(nodes: readonly TreeNode[], leafId: unknown): { node: TreeNode; hidden: boolean } | undefined {
  const leaf = nodes.find((n) => n.isLeaf);
  if (leaf) return { node: leaf, hidden: false };
  if (leafId === null || leafId === undefined) return undefined;
  let deepest: TreeNode | undefined;
  for (const node of nodes) if (node.onLeafPath && (!deepest || node.depth > deepest.depth)) deepest = node;
  return deepest ? { node: deepest, hidden: true } : undefined;
}

/**
 * The tree view's notice for a file with lines pi skips (pi reads a damaged file without a word, and
 * what those lines held is simply not in the tree), or undefined when none are skipped.
 */
export function skippedNotice(info: SkippedLines | undefined): string | undefined {
  const count = info?.skippedLines;
  if (typeof count !== 'number' || count <= 0) return undefined;
  const first = info?.skipped?.[0];
  const where = first && typeof first.line === 'number' ? `: line ${first.line + 1} (${oneLine(String(first.message), 100)})` : '';
  const more = count > 1 && where ? `, and ${count - 1} more` : '';
  const lines = count === 1 ? '1 line' : `${count} lines`;
  return `pi skips ${lines} of this file, so the tree lacks what ${count === 1 ? 'it holds' : 'they hold'}${where}${more}. The Problems panel lists ${count === 1 ? 'it' : 'them'} with the repairs.`;
}
