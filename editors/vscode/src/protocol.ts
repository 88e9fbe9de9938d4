// Shapes of the pi/* methods and notifications of the pi-session language server that this
// client uses (protocol/README.md). Only what the client reads is typed.

// The server also knows "none" (getTree() itself, nothing hidden): used to find the entry on a line.
export const FILTER_MODES = ['default', 'no-tools', 'user-only', 'labeled-only', 'all'] as const;

/** The pi releases the server follows (`initializationOptions.piVersion`), the default first. */
export const PI_VERSIONS = ['1.6.0', '0.86.1'] as const;
export type FilterMode = (typeof FILTER_MODES)[number];

/** What each of pi's /tree filter modes shows (for the filter picker). */
export const FILTER_DESCRIPTIONS: Record<FilterMode, string> = {
  default: 'conversation entries, without settings and bookkeeping entries',
  'no-tools': 'the default view without tool results',
  'user-only': 'only user messages',
  'labeled-only': 'only labeled entries',
  all: 'every entry',
};

export interface TreeNode {
  id: unknown; // entry ids are strings in practice, but a damaged file may hold anything
  parentId?: unknown;
  visibleParentId?: unknown; // nearest ancestor shown under the filter
  childIds?: unknown[];
  type: string;
  role?: string;
  label?: string;
  labelTimestamp?: string;
  preview: string;
  timestamp?: unknown;
  line?: number; // 0-based line in the file
  depth: number; // depth in the visible (filtered) tree; rows come in preorder
  isLeaf: boolean;
  onLeafPath: boolean;
  isBranchPoint: boolean;
}

export interface GetTreeResult {
  leafId: string | null;
  nodes: TreeNode[];
  // only in a paged reply (`offset`/`limit` sent, flat form); the pages concatenate to the whole tree
  total?: number;
  hasMore?: boolean;
  nextOffset?: number;
  // only with `aroundId`: where the page starts, and where the row on the path to that entry is
  offset?: number;
  aroundIndex?: number | null;
}

/** pi/getTree params of one window of the tree (flat form, paged). */
export interface TreeWindowParams {
  rootId?: unknown;
  depth?: number;
  chain?: boolean;
  aroundId?: unknown;
  offset?: number;
  limit: number;
}

/** pi/getTree `levels`: every list of the /tree layout from the top down to `aroundId`, in one reply. */
export interface TreeLevelsParams {
  levels: true;
  aroundId: unknown;
  /** Rows per level (fewer when the levels are many). */
  limit: number;
}

/** One list of the layout: the reply of its window (`chain`, or `rootId` with `chain` or `depth: 1`). */
export interface TreeLevel {
  kind: 'top' | 'chain' | 'branches';
  rootId?: unknown;
  chain?: true;
  depth?: number;
  nodes: TreeNode[];
  total: number;
  hasMore: boolean;
  nextOffset?: number;
  offset: number;
  aroundIndex: number | null;
}

export interface TreeLevelsResult {
  leafId: string | null;
  levels: TreeLevel[];
  /** false: the levels stop short of the entry (too many for one reply); ask on level by level. */
  complete: boolean;
}

/** pi/getPath: one entry of the path, with what a branch switcher needs. */
export interface PathItem {
  entry: Record<string, unknown>;
  childIds: unknown[];
  siblingIds?: unknown[];
  label?: unknown;
  labelTimestamp?: unknown;
  line?: number;
}

export interface PathPage {
  leafId: unknown;
  endId: unknown;
  total: number;
  offset: number;
  hasMore: boolean;
  nextOffset?: number;
  items: PathItem[];
}

/** pi/getStats: totals of the whole session. */
export interface SessionStats {
  entryCount: number;
  types: Record<string, number>;
  roles: Record<string, number>;
  branchPoints: number;
  leaves: number;
  tokens: Record<string, number>;
  cost: number;
  models: Record<string, { turns: number; totalTokens: number; cost: number }>;
  firstTimestamp?: string;
  lastTimestamp?: string;
}

/** A line pi skips (pi/getInfo's `skipped`): 0-based line and column, the kind and what is wrong. */
export interface SkippedLine {
  line: number;
  column?: number;
  kind?: string;
  message: string;
}

/** The part of pi/getInfo the tree view shows: the lines pi skips, so their entries are missing. */
export interface SkippedLines {
  skippedLines?: number;
  skipped?: SkippedLine[];
}

/** pi/getEntryAtLine: the entry on a line of the file (its envelope, no body), or null. */
export interface LineEntry {
  id: unknown;
  parentId?: unknown;
  type?: string;
  role?: string;
  label?: string;
  labelTimestamp?: string;
  timestamp?: unknown;
  line: number;
  isLeaf: boolean;
}

export interface SessionContextResult {
  messages: Array<Record<string, unknown>>;
  thinkingLevel?: string;
  model?: { provider?: string; modelId?: string } | null;
}

/** pi/buildSessionContext params: `format: 'markdown'` answers a SessionContextMarkdown. */
export interface ContextParams {
  uri: string;
  leafId?: string;
  format?: 'json' | 'markdown';
}

/** The context as a Markdown document the server rendered, to show as it is. */
export interface SessionContextMarkdown {
  markdown: string;
}

export interface DidChangeParams {
  session?: string;
  uri?: string;
  /** rewriting: another program is writing the file again; the session stays as it was until it is whole. */
  kind?: 'appended' | 'reloaded' | 'rewriting' | 'deleted' | string;
  newEntryIds?: string[];
  leafId?: string | null;
}

export interface ForeignWriterParams {
  session?: string;
  uri?: string;
  path?: string;
  message?: string;
}

export interface LargeFileParams {
  uri?: string;
  size?: number;
  message?: string;
}

export const Methods = {
  getTree: 'pi/getTree',
  getPath: 'pi/getPath',
  getStats: 'pi/getStats',
  buildSessionContext: 'pi/buildSessionContext',
  branch: 'pi/branch',
  append: 'pi/append',
  getEntry: 'pi/getEntry',
  getEntryAtLine: 'pi/getEntryAtLine',
  getInfo: 'pi/getInfo',
  didChange: 'pi/didChange',
  foreignWriter: 'pi/foreignWriter',
  largeFile: 'pi/largeFile',
} as const;
