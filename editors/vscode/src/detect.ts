// Give pi session files the `pi-session` language even where VS Code's built-in `jsonl` language
// wins the association (a `.jsonl` file outside ~/.pi/agent/sessions whose first line is a header:
// the `firstLine` rule of package.json only applies when no file-name rule matched).
import * as vscode from 'vscode';

export const LANGUAGE_ID = 'pi-session';
const CANDIDATE_LANGUAGES = new Set(['jsonl', 'json', 'plaintext']);

/** A pi session header: a JSON object with type "session" and a string id (the spec's "valid header"). */
export function isSessionHeaderLine(line: string): boolean {
  if (!line.trimStart().startsWith('{')) return false;
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const header = value as Record<string, unknown>;
    return header.type === 'session' && typeof header.id === 'string';
  } catch {
    return false;
  }
}

function isCandidate(document: vscode.TextDocument): boolean {
  if (!CANDIDATE_LANGUAGES.has(document.languageId)) return false;
  return /\.jsonl$/i.test(document.uri.path) && document.lineCount > 0;
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
    if (!isSessionHeaderLine(document.lineAt(0).text)) return;
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
