// Give pi session files the `pi-session` language even where VS Code's built-in `jsonl` language
// wins the association (a `.jsonl` file outside ~/.pi/agent/sessions): the `firstLine` rule of
// package.json only sees line 1 and only applies when no file-name rule matched. A session whose
// header is missing or not first (the damage the header repairs mend) is known by its first lines.
import * as vscode from 'vscode';

export const LANGUAGE_ID = 'pi-session';
const CANDIDATE_LANGUAGES = new Set(['jsonl', 'json', 'plaintext']);
/** How many lines of a file the detection reads. */
export const DETECTION_LINES = 20;

/** The entry types pi writes (pi 0.86 and 1.6). */
const ENTRY_TYPES = new Set([
  'message',
  'model_change',
  'thinking_level_change',
  'compaction',
  'branch_summary',
  'custom',
  'custom_message',
  'label',
  'session_info',
  'usage',
  'context_edit',
]);

function parseObject(line: string): Record<string, unknown> | undefined {
  const text = line.replace(/^\uFEFF/, '').trim(); // a BOM is the server's to report, not a reason to miss the file
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A pi session header: a JSON object with type "session" and a string id (the "valid header" of
 * docs/FORMAT.md §1.1).
 */
export function isSessionHeaderLine(line: string): boolean {
  const header = parseObject(line);
  return header !== undefined && header.type === 'session' && typeof header.id === 'string';
}

/** A line pi writes for an entry: a known type, a string id, a parentId member and a timestamp. */
export function isEntryLine(line: string): boolean {
  const entry = parseObject(line);
  return (
    entry !== undefined &&
    typeof entry.type === 'string' &&
    ENTRY_TYPES.has(entry.type) &&
    typeof entry.id === 'string' &&
    'parentId' in entry &&
    typeof entry.timestamp === 'string'
  );
}

/**
 * Whether the first lines of a file are a pi session's: a header on any of them (it may have moved
 * down), or, without one, pi entries making up at least half of the lines that are JSON objects
 * (broken lines do not count either way).
 */
export function looksLikeSession(lines: readonly string[]): boolean {
  let entries = 0;
  let objects = 0;
  for (const line of lines.slice(0, DETECTION_LINES)) {
    if (!line.trim()) continue;
    if (isSessionHeaderLine(line)) return true;
    if (parseObject(line) === undefined) continue;
    objects++;
    if (isEntryLine(line)) entries++;
  }
  return entries > 0 && entries * 2 >= objects;
}

function isCandidate(document: vscode.TextDocument): boolean {
  if (!CANDIDATE_LANGUAGES.has(document.languageId)) return false;
  return /\.jsonl$/i.test(document.uri.path) && document.lineCount > 0;
}

function firstLines(document: vscode.TextDocument): string[] {
  const lines: string[] = [];
  for (let i = 0; i < Math.min(document.lineCount, DETECTION_LINES); i++) lines.push(document.lineAt(i).text);
  return lines;
}

export function registerLanguageDetection(context: vscode.ExtensionContext): void {
  // A language change fires close (old language) then open (new language) synchronously; when the
  // user switches a session file back to jsonl we must not switch it again.
  let justClosed: { uri: string; languageId: string } | undefined;

  const consider = async (document: vscode.TextDocument) => {
    if (!vscode.workspace.getConfiguration('piSession').get<boolean>('detectByFirstLine', true)) return;
    if (!isCandidate(document)) return;
    const key = document.uri.toString();
    if (justClosed?.uri === key && justClosed.languageId === LANGUAGE_ID) return;
    if (!looksLikeSession(firstLines(document))) return;
    await vscode.languages.setTextDocumentLanguage(document, LANGUAGE_ID);
  };

  context.subscriptions.push(
    vscode.workspace.onDidCloseTextDocument((document) => {
      justClosed = { uri: document.uri.toString(), languageId: document.languageId };
      setTimeout(() => (justClosed = undefined), 0);
    }),
    vscode.workspace.onDidOpenTextDocument((document) => void consider(document)),
  );
  for (const document of vscode.workspace.textDocuments) void consider(document);
}
