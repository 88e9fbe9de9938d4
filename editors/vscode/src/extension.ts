// Pi Session for VS Code: a thin client of the pi-session language server. The server does all the
// work (diagnostics, hover, tree, context); this file launches it and wires its answers into VS Code.
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  LanguageClient,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { applyReports, runCheck } from './checkAll';
import { CONTEXT_SCHEME, ContextDocuments, contextDocumentUri } from './contextDocument';
import { LANGUAGE_ID, registerLanguageDetection } from './detect';
import {
  FILTER_DESCRIPTIONS,
  FILTER_MODES,
  Methods,
  type DidChangeParams,
  type FilterMode,
  type ForeignWriterParams,
  type GetTreeResult,
  type LargeFileParams,
  type LineEntry,
  type SessionContextResult,
  type SkippedLines,
  type TreeNode,
} from './protocol';
import { pythonExtensionInterpreter } from './pythonExtension';
import * as serverCommand from './serverCommand';
import { idText, nodeAtLine, type DisplayNode } from './treeModel';
import { fetchWholeTree } from './treePages';
import { SessionTreeProvider } from './treeView';

/** What activate() returns: used by tests and by other extensions. */
export interface PiSessionApi {
  client(): LanguageClient | undefined;
  tree: SessionTreeProvider;
  restart(): Promise<void>;
  ready: Promise<void>;
}

/** What the entry commands read of an entry: a tree row or the entry on the cursor line. */
interface EntryTarget {
  uri: vscode.Uri;
  node?: Pick<TreeNode, 'id' | 'label'>;
}

const METHOD_NOT_FOUND = -32601;

class Extension {
  readonly output = vscode.window.createOutputChannel('Pi Session');
  readonly checkDiagnostics = vscode.languages.createDiagnosticCollection('pi-session-check');
  readonly tree: SessionTreeProvider;
  readonly treeView: vscode.TreeView<DisplayNode>;
  private client: LanguageClient | undefined;
  private clientSubscriptions: vscode.Disposable[] = [];
  private cli: serverCommand.CliCommand | undefined;
  private starting: Promise<void> | undefined;
  readonly contextDocuments = new ContextDocuments((params) =>
    this.request<SessionContextResult>(Methods.buildSessionContext, params),
  );

  constructor(context: vscode.ExtensionContext) {
    const filter = vscode.workspace.getConfiguration('piSession').get<FilterMode>('tree.filter', 'default');
    this.tree = new SessionTreeProvider(async (uri, mode) => {
      const [tree, info] = await Promise.all([
        fetchWholeTree((page) =>
          this.request<GetTreeResult>(Methods.getTree, { uri: this.wireUri(uri), filter: mode, form: 'flat', activeBranchFirst: true, ...page }),
        ),
        // the lines pi skips; a server without them (or failing here) leaves the notice out
        this.request<SkippedLines>(Methods.getInfo, { uri: this.wireUri(uri) }).catch(() => undefined),
      ]);
      return { ...tree, skippedLines: info?.skippedLines, skipped: info?.skipped };
    }, filter);
    this.treeView = vscode.window.createTreeView('piSession.tree', { treeDataProvider: this.tree, showCollapseAll: true });
    this.tree.onDidLoad = () => this.describeTree();
    context.subscriptions.push(this.output, this.checkDiagnostics, this.treeView, this.contextDocuments);
  }

  // ---- server lifecycle -----------------------------------------------------------------------

  /** Start the server, then load the tree (requests wait for `starting`, so it must not include the load). */
  async start(): Promise<void> {
    this.starting = this.startServer();
    await this.starting;
    await this.refreshTree();
  }

  /** Whether the server was started (it starts with the first session document, not for any .jsonl). */
  get started(): boolean {
    return this.starting !== undefined;
  }

  private async serverReady(): Promise<void> {
    if (!this.starting) this.starting = this.startServer();
    await this.starting;
  }

  private async startServer(): Promise<void> {
    this.cli = undefined; // a restart after changed settings resolves again
    const resolution = await this.resolveCli();
    if (!resolution.ok) {
      this.log(resolution.message);
      void this.showStartError(resolution.message);
      return;
    }
    const cli = resolution.cli;
    this.cli = cli;
    const serve = serverCommand.withSubcommand(cli, 'serve');
    this.log(`Starting the server (${cli.source}): ${serverCommand.describe({ ...cli, args: serve.args })}`);
    const serverOptions: ServerOptions = {
      command: serve.command,
      args: serve.args,
      transport: TransportKind.stdio,
      options: { env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: LANGUAGE_ID },
        { scheme: 'untitled', language: LANGUAGE_ID },
      ],
      outputChannel: this.output,
      diagnosticCollectionName: 'pi-session',
      middleware: {
        // The server both pushes diagnostics and answers pulls; the client pulls for open documents,
        // so a push for an open document would list every problem twice.
        handleDiagnostics: (uri, diagnostics, next) => {
          const pulls = Boolean(client.initializeResult?.capabilities.diagnosticProvider);
          if (pulls && vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) return;
          next(uri, diagnostics);
        },
      },
    };
    const client: LanguageClient = new LanguageClient('piSession', 'Pi Session', serverOptions, clientOptions);
    this.client = client;
    this.clientSubscriptions.push(
      client.onNotification(Methods.didChange, (params: DidChangeParams) => this.onDidChange(params)),
      client.onNotification(Methods.foreignWriter, (params: ForeignWriterParams) => {
        void vscode.window.showWarningMessage(`Pi Session: ${params.message ?? `another program wrote ${params.path ?? params.uri}`}`);
      }),
      client.onNotification(Methods.largeFile, (params: LargeFileParams) => {
        void vscode.window.showInformationMessage(`Pi Session: ${params.message ?? `${params.uri} is large; features work from the file on disk.`}`);
      }),
    );
    try {
      await client.start();
      this.log('Server started.');
    } catch (error) {
      const message =
        `Pi Session: the language server did not start (${errorText(error)}). ` +
        `Command: ${serverCommand.describe(cli)} serve (from ${cli.source}).`;
      this.log(message);
      void this.showStartError(message);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const subscription of this.clientSubscriptions.splice(0)) subscription.dispose();
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log(`Stopping the server: ${errorText(error)}`);
      }
    }
  }

  async restart(): Promise<void> {
    this.log('Restarting the server.');
    await this.starting?.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  currentClient(): LanguageClient | undefined {
    return this.client;
  }

  private resolveCli(): Promise<serverCommand.Resolution> {
    const config = vscode.workspace.getConfiguration('piSession');
    return serverCommand
      .resolveCli({
        commandSetting: config.get<string[]>('server.command', []) ?? [],
        pythonPathSetting: config.get<string>('server.pythonPath', '') ?? '',
        pythonExtensionInterpreter,
        canImport: serverCommand.canImport,
        findOnPath: (name) => serverCommand.findOnPath(name),
      })
      .then((resolution) => {
        for (const note of resolution.notes) this.log(note);
        return resolution;
      });
  }

  private async showStartError(message: string): Promise<void> {
    const actions = ['Open Settings', 'Show Output'];
    if (vscode.extensions.getExtension('ms-python.python')) actions.push('Select Python Interpreter');
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'piSession.server');
    else if (choice === 'Show Output') this.output.show(true);
    else if (choice === 'Select Python Interpreter') await vscode.commands.executeCommand('python.setInterpreter');
  }

  log(message: string): void {
    this.output.appendLine(`[${new Date().toISOString()}] ${message}`);
  }

  // ---- requests -------------------------------------------------------------------------------

  wireUri(uri: vscode.Uri): string {
    return this.client ? this.client.code2ProtocolConverter.asUri(uri) : uri.toString();
  }

  async request<T>(method: string, params: object): Promise<T> {
    await this.serverReady();
    const client = this.client;
    if (!client || !client.isRunning()) {
      throw new Error('the pi-session language server is not running (see the "Pi Session" output)');
    }
    return client.sendRequest<T>(method, params);
  }

  // ---- tree ----------------------------------------------------------------------------------

  sessionDocumentUri(): vscode.Uri | undefined {
    const editor = vscode.window.activeTextEditor;
    return editor && editor.document.languageId === LANGUAGE_ID ? editor.document.uri : undefined;
  }

  async followActiveEditor(): Promise<void> {
    const uri = this.sessionDocumentUri();
    if (uri) {
      await vscode.commands.executeCommand('setContext', 'piSession.treeEnabled', true);
      await this.tree.setDocument(uri);
    }
    // An editor that is not a session (e.g. a context document beside it) keeps the tree as it is.
  }

  async refreshTree(): Promise<void> {
    if (!this.tree.uri) await this.followActiveEditor();
    else await this.tree.refresh();
  }

  private describeTree(): void {
    const uri = this.tree.uri;
    this.treeView.description = uri ? `${path.basename(uri.fsPath)} · ${this.tree.filter}` : '';
    const empty = uri && this.tree.nodes.length === 0 ? `No entries match the filter "${this.tree.filter}".` : undefined;
    if (this.tree.error) this.treeView.message = `Could not load the session tree: ${this.tree.error}`;
    else this.treeView.message = [this.tree.skipped, empty].filter(Boolean).join(' ') || undefined;
  }

  private onDidChange(params: DidChangeParams): void {
    const changed = params.uri;
    if (!changed) {
      void this.tree.refresh();
    } else {
      if (this.tree.uri && sameUri(this.wireUri(this.tree.uri), changed)) void this.tree.refresh();
      this.contextDocuments.sessionChanged((uri) => sameUri(uri, changed));
    }
  }

  async pickFilter(): Promise<void> {
    const items = FILTER_MODES.map((mode) => ({
      label: mode,
      description: mode === this.tree.filter ? '(current)' : '',
      detail: FILTER_DESCRIPTIONS[mode],
    }));
    const picked = await vscode.window.showQuickPick(items, { title: 'Session tree filter', placeHolder: this.tree.filter });
    if (picked) await this.tree.setFilter(picked.label);
  }

  // ---- entry commands -------------------------------------------------------------------------

  /** The entry a command acts on: a tree row, {uri, entryId}, or the line under the cursor. */
  async target(arg: unknown, required: boolean): Promise<EntryTarget | undefined> {
    if (isDisplayNode(arg) && this.tree.uri) return { uri: this.tree.uri, node: arg.node };
    if (isRecord(arg) && typeof arg.uri === 'string') {
      const uri = vscode.Uri.parse(arg.uri);
      if (typeof arg.entryId !== 'string') return { uri };
      const result = await this.allEntries(uri);
      const node = result.nodes.find((n) => n.id === arg.entryId);
      if (!node && required) throw new Error(`no entry with id ${arg.entryId}`);
      return { uri, node };
    }
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== LANGUAGE_ID) {
      if (this.tree.uri && !required) return { uri: this.tree.uri };
      throw new Error('open a pi session file first');
    }
    const uri = editor.document.uri;
    const node = await this.entryAtLine(uri, editor.selection.active.line);
    if (!node && required) throw new Error('put the cursor on an entry line (not the header or a blank line)');
    return { uri, node };
  }

  /** The entry on a line, without the tree (a server older than pi/getEntryAtLine: from the tree). */
  private async entryAtLine(uri: vscode.Uri, line: number): Promise<Pick<TreeNode, 'id' | 'label'> | undefined> {
    try {
      const found = await this.request<LineEntry | null>(Methods.getEntryAtLine, { uri: this.wireUri(uri), line });
      return found ?? undefined;
    } catch (error) {
      if ((error as { code?: unknown }).code !== METHOD_NOT_FOUND) throw error;
      return nodeAtLine((await this.allEntries(uri)).nodes, line);
    }
  }

  /** Every entry with its line (filter "none", the server's default: nothing hidden), no previews. */
  private allEntries(uri: vscode.Uri): Promise<GetTreeResult> {
    return fetchWholeTree((page) => this.request<GetTreeResult>(Methods.getTree, { uri: this.wireUri(uri), previews: false, ...page }));
  }

  async showContext(arg: unknown, atLeaf: boolean): Promise<void> {
    const target = await this.target(arg, false);
    if (!target) return;
    const leafId = atLeaf || !target.node ? undefined : idText(target.node.id);
    const format = vscode.workspace.getConfiguration('piSession').get<string>('context.format', 'markdown');
    const docUri = contextDocumentUri(target.uri, { uri: this.wireUri(target.uri), leafId, format: format === 'json' ? 'json' : 'markdown' });
    const document = await vscode.workspace.openTextDocument(docUri);
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  async branchHere(arg: unknown): Promise<void> {
    const target = await this.target(arg, true);
    if (!target?.node) return;
    const entryId = idText(target.node.id);
    const result = await this.request<{ leafId?: string }>(Methods.branch, { uri: this.wireUri(target.uri), entryId });
    vscode.window.setStatusBarMessage(`Pi Session: leaf is now ${result?.leafId ?? entryId}`, 5000);
    await this.tree.refresh();
  }

  async labelEntry(arg: unknown, presetLabel?: string): Promise<void> {
    const target = await this.target(arg, true);
    if (!target?.node) return;
    const entryId = idText(target.node.id);
    const label =
      presetLabel ??
      (await vscode.window.showInputBox({
        title: `Label entry ${entryId}`,
        prompt: 'An empty label clears the current one.',
        value: target.node.label ?? '',
      }));
    if (label === undefined) return; // cancelled
    const params: Record<string, unknown> = { uri: this.wireUri(target.uri), kind: 'label', targetId: entryId };
    if (label.trim()) params.label = label.trim(); // no label key = clear, as pi's /tree does
    await this.request(Methods.append, params);
    await this.tree.refresh();
  }

  async revealEntry(uriText: string, line: number): Promise<void> {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uriText));
    const editor = await vscode.window.showTextDocument(document, { preserveFocus: false, preview: true });
    const position = new vscode.Position(line, 0);
    editor.selection = new vscode.Selection(position, position);
    editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  // ---- check all sessions ---------------------------------------------------------------------

  async checkAllSessions(): Promise<number> {
    await this.starting;
    const resolution = this.cli ? ({ ok: true, cli: this.cli, notes: [] } as const) : await this.resolveCli();
    if (!resolution.ok) {
      void this.showStartError(resolution.message);
      return 0;
    }
    const check = serverCommand.withSubcommand(resolution.cli, 'check', '--json');
    this.log(`Running ${serverCommand.describe({ ...resolution.cli, args: check.args })}`);
    const reports = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Pi Session: checking all sessions…' },
      () => runCheck(check.command, check.args, (text) => this.output.append(text)),
    );
    const open = vscode.workspace.textDocuments.filter((d) => d.languageId === LANGUAGE_ID).map((d) => d.uri.toString());
    const problems = applyReports(this.checkDiagnostics, reports, new Set(open));
    const message = `Pi Session: checked ${reports.length} session file(s), ${problems} problem(s).`;
    this.log(message);
    if (problems > 0) void vscode.commands.executeCommand('workbench.actions.view.problems');
    void vscode.window.showInformationMessage(message);
    return problems;
  }

  forgetCheckResults(document: vscode.TextDocument): void {
    if (document.languageId === LANGUAGE_ID) this.checkDiagnostics.delete(document.uri);
  }

}

// ---- helpers ----------------------------------------------------------------------------------

function sameUri(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return vscode.Uri.parse(a).toString() === vscode.Uri.parse(b).toString();
  } catch {
    return false;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isDisplayNode(v: unknown): v is DisplayNode {
  return isRecord(v) && isRecord(v.node) && Array.isArray(v.children);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---- activation -------------------------------------------------------------------------------

let extension: Extension | undefined;

export function activate(context: vscode.ExtensionContext): PiSessionApi {
  const ext = new Extension(context);
  extension = ext;
  registerLanguageDetection(context);

  const guarded =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: A) => {
      try {
        return await fn(...args);
      } catch (error) {
        ext.log(`Command failed: ${errorText(error)}`);
        void vscode.window.showErrorMessage(`Pi Session: ${errorText(error)}`);
        return undefined;
      }
    };

  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(CONTEXT_SCHEME, ext.contextDocuments),
    vscode.commands.registerCommand('piSession.restartServer', guarded(() => ext.restart())),
    vscode.commands.registerCommand('piSession.showOutput', () => ext.output.show(true)),
    vscode.commands.registerCommand('piSession.showContext', guarded((arg?: unknown) => ext.showContext(arg, false))),
    vscode.commands.registerCommand('piSession.showLeafContext', guarded((arg?: unknown) => ext.showContext(arg, true))),
    vscode.commands.registerCommand('piSession.branchHere', guarded((arg?: unknown) => ext.branchHere(arg))),
    // from a tree row's menu the second argument is the selection (an array), not a label
    vscode.commands.registerCommand(
      'piSession.labelEntry',
      guarded((arg?: unknown, label?: unknown) => ext.labelEntry(arg, typeof label === 'string' ? label : undefined)),
    ),
    vscode.commands.registerCommand('piSession.checkAllSessions', guarded(() => ext.checkAllSessions())),
    vscode.commands.registerCommand('piSession.tree.refresh', guarded(() => ext.refreshTree())),
    vscode.commands.registerCommand('piSession.tree.filter', guarded(() => ext.pickFilter())),
    vscode.commands.registerCommand('piSession.revealEntry', guarded((uri: string, line: number) => ext.revealEntry(uri, line))),
    vscode.window.onDidChangeActiveTextEditor(() => void ext.followActiveEditor()),
    vscode.workspace.onDidOpenTextDocument((document) => {
      ext.forgetCheckResults(document);
      // a language change (e.g. jsonl -> pi-session by first-line detection) reopens the document
      // without changing the active editor: the tree must follow it too
      if (document.languageId !== LANGUAGE_ID) return;
      if (!ext.started) void ext.start();
      else if (vscode.window.activeTextEditor?.document === document) void ext.followActiveEditor();
    }),
    vscode.workspace.onDidCloseTextDocument((document) => ext.contextDocuments.closed(document)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('piSession.server') && ext.started) void ext.restart();
      if (event.affectsConfiguration('piSession.tree.filter')) {
        void ext.tree.setFilter(vscode.workspace.getConfiguration('piSession').get<FilterMode>('tree.filter', 'default'));
      }
    }),
  );

  // The server starts with the first pi session document: opening an ordinary .jsonl (which also
  // activates the extension, for first-line detection) must not start it or complain that it is missing.
  const hasSession = vscode.workspace.textDocuments.some((d) => d.languageId === LANGUAGE_ID);
  const ready = hasSession ? ext.start() : Promise.resolve();
  return { client: () => ext.currentClient(), tree: ext.tree, restart: () => ext.restart(), ready };
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}
