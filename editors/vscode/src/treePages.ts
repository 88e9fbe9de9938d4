// pi/getTree in pages. One reply holds at most 50,000 nodes: a bigger tree asked for in one piece is
// refused (-32011 TooLarge), so the client always asks for the flat form page by page and joins the
// pages (they concatenate to the whole preorder list). No vscode import: unit-tested directly.
import type { GetTreeResult, TreeNode } from './protocol';

/** Nodes asked for per pi/getTree request: the most one reply may hold (the server's MAX_TREE_NODES). */
export const TREE_PAGE_SIZE = 50_000;

/** How often to start over when the session changed between two pages (then the pages are joined as they are). */
const MAX_RESTARTS = 3;

/** Sends one pi/getTree request with these paging params added to the caller's own. */
export type TreePageRequest = (page: { offset: number; limit: number }) => Promise<GetTreeResult | null | undefined>;

/**
 * The whole flat tree, fetched page by page (`offset`/`limit`, following `nextOffset` while `hasMore`).
 * A server that answers without paging fields (one page) is fine too. If the session changed between
 * two pages (another `total` or `leafId`), it starts over, up to MAX_RESTARTS times.
 */
export async function fetchWholeTree(request: TreePageRequest, pageSize = TREE_PAGE_SIZE): Promise<GetTreeResult> {
  const limit = Math.max(1, Math.floor(pageSize));
  for (let attempt = 0; ; attempt++) {
    const first = (await request({ offset: 0, limit })) ?? { leafId: null, nodes: [] };
    let nodes: TreeNode[] = Array.isArray(first.nodes) ? first.nodes : [];
    let page = first;
    let offset = 0;
    let changed = false;
    while (page.hasMore === true && typeof page.nextOffset === 'number' && page.nextOffset > offset && (page.nodes?.length ?? 0) > 0) {
      offset = page.nextOffset;
      page = (await request({ offset, limit })) ?? { leafId: null, nodes: [] };
      if (attempt < MAX_RESTARTS && (page.total !== first.total || page.leafId !== first.leafId)) {
        changed = true;
        break;
      }
      if (Array.isArray(page.nodes)) nodes = nodes.concat(page.nodes); // not push(...): a page may hold 50,000 nodes
    }
    if (!changed) return { leafId: first.leafId ?? null, nodes, total: typeof first.total === 'number' ? first.total : nodes.length };
  }
}
