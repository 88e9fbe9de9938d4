// The choices of the extension's settings that name the server's values: the tree filters
// (`piSession.tree.filter`) and the pi releases (`piSession.piVersion`), as package.json lists them.
import type { GetTreeParams, OpenParams } from './protocol';

/** pi's /tree filter modes (the server also knows "none", getTree() itself: used to find the entry on a line). */
export const FILTER_MODES = ['default', 'no-tools', 'user-only', 'labeled-only', 'all'] as const satisfies readonly NonNullable<
  GetTreeParams['filter']
>[];
export type FilterMode = (typeof FILTER_MODES)[number];

/** What each of pi's /tree filter modes shows (for the filter picker). */
export const FILTER_DESCRIPTIONS: Record<FilterMode, string> = {
  default: 'conversation entries, without settings and bookkeeping entries',
  'no-tools': 'the default view without tool results',
  'user-only': 'only user messages',
  'labeled-only': 'only labeled entries',
  all: 'every entry',
};

/** The pi releases the server follows (`initializationOptions.piVersion`), the default first. */
export const PI_VERSIONS = ['1.6.0', '0.86.1'] as const satisfies readonly NonNullable<OpenParams['pi']>[];
