// The session viewer: a read-only custom editor that shows a session as a conversation, the path from
// the root to the leaf (or to an entry picked in the tree) with a branch switcher at each branch point.
// It reads through the server from the file on disk (pi/getPath pages, pi/getStats), so sessions of
// any size open, and loads pages as the webview scrolls. The HTML is made here (render.ts) and
// shown by media/viewer.js under a strict Content-Security-Policy.
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Methods, type LoneCarriageReturnLine, type PathPage, type SessionStats, type TreeView } from '../protocol';
import { entryLabel } from '../treeModel';
import { escapeHtml, renderItem, renderStats } from './render';

export const VIEW_TYPE = 'piSession.viewer';
/** Entries per page the webview asks for. */
export const VIEWER_PAGE = 100;

/** What the viewer needs from the extension. */
export interface ViewerHost {
  request<T>(method: string, params: object): Promise<T>;
  wireUri(uri: vscode.Uri): string;
  openAsText(uri: vscode.Uri): Promise<void>;
  showTree(uri: vscode.Uri, entryId?: unknown): Promise<void>;
  showContext(uri: vscode.Uri, entryId?: unknown): Promise<void>;
  /** Show pi's line `line` of the file in its text editor. */
  revealLine(uri: vscode.Uri, line: number): Promise<void>;
  /** The file's lone CRs (pi/getLineBreaks; none when the server cannot tell). */
  lineBreaks(uri: vscode.Uri): Promise<LoneCarriageReturnLine[]>;
  /** A viewer became the active editor: the tree follows it. */
  activated(uri: vscode.Uri): void;
  log(message: string): void;
}

/** Which path a viewer shows: to the leaf (following the session), or to / through an entry. */
export interface PathTarget {
  entryId?: unknown;
  descend: boolean;
}

type FromWebview =
  | { type: 'ready' }
  | { type: 'load'; offset: number; limit: number; purpose: string }
  | { type: 'switch'; target: string; index: number }
  | { type: 'branches'; index: number; parentId: string }
  | { type: 'reveal'; line: number }
  | { type: 'context'; id?: string }
  | { type: 'tree'; id?: string }
  | { type: 'openText' }
  | { type: 'toLeaf' }
  | { type: 'continue'; id: string }
  | { type: 'jump'; where: 'start' | 'end' };

function parseId(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class ViewerPanel implements vscode.Disposable {
  target: PathTarget = { descend: false };
  private readonly disposables: vscode.Disposable[] = [];
  private toolNames = new Map<string, string>();
  private ready = false;
  private pending: Array<() => void> = [];
  /** The totals' request on its way, and whether the file changed since it was sent. */
  private statsRequest: Promise<void> | undefined;
  private statsAgain = false;
  /** The file's lone CRs, for the lines the pages name: asked once, again after the file changed. */
  private breaks: Promise<readonly LoneCarriageReturnLine[]> | undefined;
  /** Messages posted to the webview, for tests. */
  readonly posted: unknown[] = [];

  constructor(
    readonly uri: vscode.Uri,
    readonly panel: vscode.WebviewPanel,
    private readonly host: ViewerHost,
    private readonly extensionUri: vscode.Uri,
    private readonly onDispose: (panel: ViewerPanel) => void,
  ) {
    const webview = panel.webview;
    webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')] };
    webview.html = this.html();
    this.disposables.push(
      webview.onDidReceiveMessage((message: FromWebview) => void this.receive(message)),
      panel.onDidChangeViewState(() => {
        if (panel.active) host.activated(uri);
      }),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  private html(): string {
    const webview = this.panel.webview;
    const nonce = crypto.randomBytes(16).toString('base64');
    const media = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', file));
    const csp = [
      "default-src 'none'",
      `img-src ${webview.cspSource} data:`,
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    const name = escapeHtml(path.basename(this.uri.fsPath));
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${media('viewer.css')}">
<title>${name}</title>
</head>
<body>
<div id="top">
  <div class="toolbar">
    <span class="file" title="${escapeHtml(this.uri.fsPath)}">${name}</span>
    <button data-action="openText" title="open the file in the text editor">Open as Text</button>
    <button data-action="tree" title="show the session tree">Tree</button>
    <button data-action="context" title="the LLM context at the leaf">Context</button>
    <button data-action="jump" data-where="start" title="the start of the conversation">Start</button>
    <button data-action="jump" data-where="end" title="the end of the conversation">End</button>
  </div>
  <div id="stats" class="stats">Reading the session…</div>
  <div id="path" class="path-note"></div>
</div>
<div id="entries" aria-live="polite"></div>
<div id="status" class="status"></div>
<script nonce="${nonce}" src="${media('viewer.js')}"></script>
</body>
</html>`;
  }

  post(message: object): void {
    this.posted.push(message);
    if (!this.ready) {
      this.pending.push(() => void this.panel.webview.postMessage(message));
      return;
    }
    void this.panel.webview.postMessage(message);
  }

  private params(extra: object): object {
    const params: Record<string, unknown> = { uri: this.host.wireUri(this.uri), ...extra };
    if (this.target.entryId !== undefined) params.entryId = this.target.entryId;
    if (this.target.descend) params.descend = true;
    return params;
  }

  /** A page of the current path, with each item's HTML. */
  async page(offset: number, limit: number): Promise<object> {
    const asked = this.host.request<PathPage>(Methods.getPath, this.params({ offset: Math.max(0, offset), limit }));
    this.breaks ??= this.host.lineBreaks(this.uri).catch(() => []);
    const [page, breaks] = await Promise.all([asked, this.breaks]);
    const items = page.items.map((item, i) => ({
      index: page.offset + i,
      id: JSON.stringify(item.entry?.id ?? null),
      parentId: JSON.stringify(item.entry?.parentId ?? null),
      html: renderItem(item, page.offset + i, this.toolNames, breaks),
      children: item.childIds.length,
    }));
    return { total: page.total, offset: page.offset, hasMore: page.hasMore, endId: JSON.stringify(page.endId), leafId: JSON.stringify(page.leafId), items };
  }

  private describeTarget(): string {
    if (this.target.entryId === undefined) return 'The path from the root to the leaf (it follows the session as pi appends).';
    const id = escapeHtml(JSON.stringify(this.target.entryId));
    return this.target.descend
      ? `The path through entry ${id}, down to a leaf. <button data-action="toLeaf">Back to the leaf</button>`
      : `The path from the root to entry ${id}. <button data-action="toLeaf">Back to the leaf</button>`;
  }

  /** Show the current path anew: the page at `offset`, or the last page (`end`), then focus an entry. */
  async show(where: { offset?: number; end?: boolean; focus?: number | 'last' } = {}): Promise<void> {
    try {
      let offset = where.offset ?? 0;
      if (where.end) {
        const probe = (await this.page(Number.MAX_SAFE_INTEGER, 1)) as { total: number };
        offset = Math.max(0, probe.total - VIEWER_PAGE);
      }
      const page = await this.page(offset, VIEWER_PAGE);
      this.post({ type: 'reset', page, focus: where.focus ?? (where.end ? 'last' : undefined), following: this.target.entryId === undefined, path: this.describeTarget() });
    } catch (error) {
      this.post({ type: 'error', message: String(error instanceof Error ? error.message : error) });
    }
  }

  /**
   * The totals (pi/getStats), one request at a time: the changes while one is on its way (pi appending
   * turn after turn; on a big session the totals take a while) share one more request after it.
   */
  showStats(): Promise<void> {
    if (this.statsRequest) {
      this.statsAgain = true;
      return this.statsRequest;
    }
    const request = this.requestStats().finally(() => {
      this.statsRequest = undefined;
      if (this.statsAgain) {
        this.statsAgain = false;
        void this.showStats();
      }
    });
    this.statsRequest = request;
    return request;
  }

  private async requestStats(): Promise<void> {
    try {
      const stats = await this.host.request<SessionStats>(Methods.getStats, { uri: this.host.wireUri(this.uri) });
      this.post({ type: 'stats', html: renderStats(stats) });
    } catch (error) {
      this.post({ type: 'stats', html: `Could not read the totals: ${escapeHtml(String(error instanceof Error ? error.message : error))}` });
    }
  }

  /** Show the path to an entry (picked in the tree). */
  async showEntry(entryId: unknown): Promise<void> {
    this.target = { entryId, descend: false };
    await this.show({ end: true, focus: 'last' });
  }

  /** The session file changed (pi appended): the totals and, when it follows the leaf, the path. */
  sessionChanged(): void {
    this.breaks = undefined;
    void this.showStats();
    this.post({ type: 'changed' });
  }

  async receive(message: FromWebview): Promise<void> {
    const uri = this.uri;
    try {
      switch (message.type) {
        case 'ready':
          this.ready = true;
          for (const send of this.pending.splice(0)) send();
          // the path first: requests on a session run in order, and the totals read every message
          await this.show(this.target.entryId === undefined ? {} : { end: true, focus: 'last' });
          await this.showStats();
          break;
        case 'load':
          this.post({ type: 'page', purpose: message.purpose, page: await this.page(message.offset, Math.min(message.limit, VIEWER_PAGE)) });
          break;
        case 'switch':
          // the new path shares everything above the switch: show it from a little above there
          this.target = { entryId: parseId(message.target), descend: true };
          await this.show({ offset: Math.max(0, message.index - 3), focus: message.index });
          break;
        case 'branches':
          await this.sendBranches(message.index, parseId(message.parentId));
          break;
        case 'continue':
          this.target = { entryId: parseId(message.id), descend: true };
          await this.show({ end: false, offset: 0 });
          break;
        case 'toLeaf':
          this.target = { descend: false };
          await this.show({ end: true, focus: 'last' });
          break;
        case 'jump':
          await this.show(message.where === 'end' ? { end: true, focus: 'last' } : { offset: 0 });
          break;
        case 'reveal':
          await this.host.revealLine(uri, message.line);
          break;
        case 'context':
          await this.host.showContext(uri, parseId(message.id));
          break;
        case 'tree':
          await this.host.showTree(uri, parseId(message.id));
          break;
        case 'openText':
          await this.host.openAsText(uri);
          break;
      }
    } catch (error) {
      this.host.log(`Session viewer: ${String(error instanceof Error ? error.message : error)}`);
      this.post({ type: 'error', message: String(error instanceof Error ? error.message : error) });
    }
  }

  /** The branches at a branch point: its children with their previews (pi/getTree, one level). */
  private async sendBranches(index: number, parentId: unknown): Promise<void> {
    const params: Record<string, unknown> = { uri: this.host.wireUri(this.uri), filter: 'none', limit: 500 };
    if (parentId === null || parentId === undefined) params.depth = 0;
    else Object.assign(params, { rootId: parentId, depth: 1 });
    const result = await this.host.request<TreeView>(Methods.getTree, params);
    const nodes = parentId === null || parentId === undefined ? result.nodes : result.nodes.slice(1);
    const items = nodes.map((node) => ({
      id: JSON.stringify(node.id ?? null),
      html: `${escapeHtml(entryLabel(node))}${node.onLeafPath ? ' <span class="badge">leaf path</span>' : ''}`,
    }));
    this.post({ type: 'branches', index, items });
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.onDispose(this);
  }
}

export class SessionViewerProvider implements vscode.CustomReadonlyEditorProvider {
  readonly panels = new Set<ViewerPanel>();
  private lastActive: ViewerPanel | undefined;
  /** Entries to show in the next viewer opened on a file (the tree opens it on an entry). */
  private readonly initialEntries = new Map<string, unknown>();

  constructor(
    private readonly host: ViewerHost,
    private readonly extensionUri: vscode.Uri,
  ) {}

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  resolveCustomEditor(document: vscode.CustomDocument, webviewPanel: vscode.WebviewPanel): void {
    const viewer = new ViewerPanel(document.uri, webviewPanel, this.host, this.extensionUri, (p) => {
      this.panels.delete(p);
      if (this.lastActive === p) this.lastActive = undefined;
    });
    const initial = this.initialEntries.get(document.uri.toString());
    if (initial !== undefined) {
      this.initialEntries.delete(document.uri.toString());
      viewer.target = { entryId: initial, descend: false };
    }
    this.panels.add(viewer);
    this.lastActive = viewer;
    webviewPanel.onDidChangeViewState(() => {
      if (webviewPanel.active) this.lastActive = viewer;
    });
    this.host.activated(document.uri);
  }

  /** The viewers showing a session. */
  panelsFor(uri: vscode.Uri | string): ViewerPanel[] {
    const key = uri.toString();
    return [...this.panels].filter((p) => p.uri.toString() === key);
  }

  /** The viewer the user looked at last, if it is still open. */
  get active(): ViewerPanel | undefined {
    return this.lastActive && this.panels.has(this.lastActive) ? this.lastActive : undefined;
  }

  /** Open a viewer on the file, showing the path to `entryId` when given (or the leaf). */
  async open(uri: vscode.Uri, entryId?: unknown, viewColumn?: vscode.ViewColumn): Promise<void> {
    const existing = this.panelsFor(uri)[0];
    if (existing) {
      existing.panel.reveal(existing.panel.viewColumn);
      if (entryId !== undefined) await existing.showEntry(entryId);
      return;
    }
    if (entryId !== undefined) this.initialEntries.set(uri.toString(), entryId);
    await vscode.commands.executeCommand('vscode.openWith', uri, VIEW_TYPE, viewColumn ?? vscode.ViewColumn.Active);
  }

  sessionChanged(isSession: (uri: string) => boolean, wireUri: (uri: vscode.Uri) => string): void {
    for (const panel of this.panels) if (isSession(wireUri(panel.uri))) panel.sessionChanged();
  }
}
