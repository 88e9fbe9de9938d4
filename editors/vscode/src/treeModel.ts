// Pure helpers over pi/getTree's nodes: labels, icons, notices. No vscode import: unit-tested directly.
import { lineName } from './lineBreaks';
import type { LoneCarriageReturnLine, SessionHandleInfo, TreeNode } from './protocol';

/** The part of pi/getInfo the tree view shows: the lines pi skips, so their entries are missing. */
export type SkippedLines = Partial<Pick<SessionHandleInfo, 'skippedLines' | 'skipped'>>;

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

/** The first line pi skips that pi/getInfo names, if any (pi's line). */
export function firstSkippedLine(info: SkippedLines | undefined): number | undefined {
  const line = info?.skipped?.[0]?.line;
  return typeof line === 'number' ? line : undefined;
}

/**
 * The tree view's notice for a file with lines pi skips (pi reads a damaged file without a word, and
 * what those lines held is simply not in the tree), or undefined when none are skipped. The line it
 * names is VS Code's (`breaks`: the file's lone CRs), as the Problems panel places it.
 */
export function skippedNotice(info: SkippedLines | undefined, breaks: readonly LoneCarriageReturnLine[] = []): string | undefined {
  const count = info?.skippedLines;
  if (typeof count !== 'number' || count <= 0) return undefined;
  const line = firstSkippedLine(info);
  const where = line === undefined ? '' : `: ${lineName(line, breaks, oneLine(String(info?.skipped?.[0]?.message), 100))}`;
  const more = count > 1 && where ? `, and ${count - 1} more` : '';
  const lines = count === 1 ? '1 line' : `${count} lines`;
  return `pi skips ${lines} of this file, so the tree lacks what ${count === 1 ? 'it holds' : 'they hold'}${where}${more}. The Problems panel lists ${count === 1 ? 'it' : 'them'} with the repairs.`;
}

/** Codicons by entry type (and by message role for messages): what a row is, at a glance. */
const TYPE_ICONS: Record<string, string> = {
  model_change: 'chip',
  thinking_level_change: 'lightbulb',
  compaction: 'fold',
  branch_summary: 'git-merge',
  custom: 'symbol-misc',
  custom_message: 'comment',
  label: 'tag',
  session_info: 'info',
  usage: 'dashboard',
  context_edit: 'diff',
};
const ROLE_ICONS: Record<string, string> = {
  user: 'account',
  assistant: 'hubot',
  toolResult: 'tools',
  bashExecution: 'terminal',
  custom: 'comment',
  hookMessage: 'comment',
  system: 'settings-gear',
  branchSummary: 'git-merge',
  compactionSummary: 'fold',
};

/** The codicon of a row: its role or entry type (an unknown one: a plain circle). */
export function iconFor(node: Pick<TreeNode, 'type' | 'role'>): string {
  if (node.type === 'message') return (typeof node.role === 'string' && ROLE_ICONS[node.role]) || 'comment-discussion';
  return (typeof node.type === 'string' && TYPE_ICONS[node.type]) || 'circle-outline';
}
