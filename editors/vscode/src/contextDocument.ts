// Read-only "context" documents: the pi/buildSessionContext result for a session (at its leaf or at
// an entry), served under the pi-session-context: scheme as Markdown (rendered by the server) or JSON.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Context, ContextMarkdown, SessionContextParams } from './protocol';

export const CONTEXT_SCHEME = 'pi-session-context';

export interface ContextQuery {
  uri: string; // the session, as the server knows it
  leafId?: string; // absent = the session's leaf (the document then follows the session)
  format: 'markdown' | 'json';
  name: string; // the session file's name, for the document's own name
}

export function contextDocumentUri(session: vscode.Uri, query: Omit<ContextQuery, 'name'>): vscode.Uri {
  const name = path.basename(session.path);
  const full: ContextQuery = { ...query, name };
  const file = `${name.replace(/\.jsonl$/i, '')} context at ${query.leafId ?? 'leaf'}.${query.format === 'json' ? 'json' : 'md'}`;
  return vscode.Uri.from({ scheme: CONTEXT_SCHEME, path: `/${file}`, query: JSON.stringify(full) });
}

export function parseContextQuery(uri: vscode.Uri): ContextQuery | undefined {
  try {
    const query = JSON.parse(uri.query) as ContextQuery;
    return typeof query.uri === 'string' ? query : undefined;
  } catch {
    return undefined;
  }
}

export type BuildContext = (params: SessionContextParams) => Promise<Context | ContextMarkdown>;

export class ContextDocuments implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly open = new Set<string>();

  constructor(private readonly build: BuildContext) {}

  async provideTextDocumentContent(docUri: vscode.Uri): Promise<string> {
    const query = parseContextQuery(docUri);
    if (!query) return 'Invalid context document address.';
    this.open.add(docUri.toString());
    try {
      const params: SessionContextParams = query.leafId ? { uri: query.uri, leafId: query.leafId } : { uri: query.uri };
      if (query.format === 'json') return `${JSON.stringify(await this.build(params), null, 2)}\n`;
      const result = (await this.build({ ...params, format: 'markdown' })) as ContextMarkdown;
      return result.markdown;
    } catch (error) {
      return `# Could not build the context\n\n${error instanceof Error ? error.message : String(error)}\n`;
    }
  }

  /** The session changed: documents at its leaf are rebuilt (those at a fixed entry stay). */
  sessionChanged(isSession: (uri: string) => boolean): void {
    for (const docUri of this.open) {
      const query = parseContextQuery(vscode.Uri.parse(docUri));
      if (query && !query.leafId && isSession(query.uri)) this.changed.fire(vscode.Uri.parse(docUri));
    }
  }

  closed(document: vscode.TextDocument): void {
    if (document.uri.scheme === CONTEXT_SCHEME) this.open.delete(document.uri.toString());
  }

  dispose(): void {
    this.changed.dispose();
  }
}
