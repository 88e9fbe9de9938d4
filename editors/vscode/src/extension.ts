// Pi Session for VS Code: a thin client of the pi-session language server. The server does all the
// work (diagnostics, hover, tree, context, the viewer's pages); this file launches it and wires its
// answers into VS Code.
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  TransportKind,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { applyReports, nothingCheckedReason, runCheck } from './checkAll';
import { CONTEXT_SCHEME, ContextDocuments, contextDocumentUri } from './contextDocument';
import { LANGUAGE_ID, registerLanguageDetection } from './detect';
import { editorLineOf, lineBreaksOf, piLineOf } from './lineBreaks';
import { LoneCrGuard } from './loneCrGuard';
import { EXTENSION_HOST_LIMIT_MB, opensInViewer } from './largeFiles';
import type { Row, TreeItemData } from './lazyTree';
import {
  Methods,
  type Context,
  type ContextMarkdown,
  type DidChangeParams,
  type ForeignWriterParams,
  type LargeFileParams,
  type LineEntry,
  type LoneCarriageReturnLine,
  type TreeLevels,
  type TreeNode,
  type TreeView,
} from './protocol';
import { PiLanguageClient } from './languageClient';
import { pythonExtensionInterpreter } from './pythonExtension';
import * as serverCommand from './serverCommand';
import { pickSession } from './sessionPicker';
import { counted } from './words';
import { FILTER_DESCRIPTIONS, FILTER_MODES, PI_VERSIONS, type FilterMode } from './settings';
import { idText, type SkippedLines } from './treeModel';
import { ServerStatus } from './serverStatus';
import { SessionTreeProvider } from './treeView';
import { SessionViewerProvider, VIEW_TYPE } from './viewer/sessionViewer';

/** What activate() returns: used by tests and by other extensions. */
export interface PiSessionApi {
  client(): LanguageClient | undefined;
  tree: SessionTreeProvider;
  viewer: SessionViewerProvider;
  restart(): Promise<void>;
  ready: Promise<void>;
}

/** What the entry commands read of an entry: a tree row or the entry on the cursor line. */
interface EntryTarget {
  uri: vscode.Uri;
  node?: Pick<TreeNode, 'id' | 'label'>;
}

/** A tree row's click: the entry, in the text editor or the viewer. */
interface OpenEntryArgs {
  uri: string;
  entryId: unknown;
  line?: number;
}

/** How long the tree waits after the cursor moved before it follows it. */
const FOLLOW_CURSOR_MS = 150;

/** The server is started again after it stopped on its own, up to this many times in CRASH_WINDOW_MS. */
const MAX_CRASH_RESTARTS = 4;
const CRASH_WINDOW_MS = 3 * 60 * 1000;

/** The collection of the diagnostics the server pushes: those of files VS Code has no document for. */
const PUSHED_DIAGNOSTICS = 'pi-session-files';

class Extension {
  readonly output = vscode.window.createOutputChannel('Pi Session');
  readonly checkDiagnostics = vscode.languages.createDiagnosticCollection('pi-session-check');
  readonly status = new ServerStatus();
  readonly tree: SessionTreeProvider;
  readonly treeView: vscode.TreeView<TreeItemData>;
  readonly viewer: SessionViewerProvider;
  private client: LanguageClient | undefined;
  private clientSubscriptions: vscode.Disposable[] = [];
  private cli: serverCommand.CliCommand | undefined;
  private starting: Promise<void> | undefined;
  private followTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the server stopped on its own lately (see serverStopped). */
  private crashes: number[] = [];
  /** The appends the server told (pi/didChange appended): see labelEntry. */
  private appendsTold = 0;
  /** The moves of a leaf the server told (pi/didChange leafMoved): see branchHere. */
  private leafMovesTold = 0;
  /** Files the user asked to see as text: a big one is then not sent to the viewer again. */
  readonly textWanted = new Set<string>();
  readonly contextDocuments = new ContextDocuments((params) =>
    this.request<Context | ContextMarkdown>(Methods.buildSessionContext, params),
  );
  readonly loneCrGuard = new LoneCrGuard({ lineBreaks: (uri) => this.knownLineBreaks(uri), log: (message) => this.log(message) });

  constructor(context: vscode.ExtensionContext) {
    const filter = vscode.workspace.getConfiguration('piSession').get<FilterMode>('tree.filter', 'default');
    this.tree = new SessionTreeProvider(
      {
        window: (uri, mode, params) =>
          this.request<TreeView>(Methods.getTree, { uri: this.wireUri(uri), filter: mode, form: 'flat', activeBranchFirst: true, ...params }),
        levels: (uri, mode, params) =>
          this.request<TreeLevels>(Methods.getTree, { uri: this.wireUri(uri), filter: mode, form: 'flat', activeBranchFirst: true, ...params }),
        info: (uri) => this.request<SkippedLines & { entryCount?: number }>(Methods.getInfo, { uri: this.wireUri(uri) }),
        lineBreaks: (uri) => this.lineBreaks(uri),
      },
      filter,
    );
    this.treeView = vscode.window.createTreeView('piSession.tree', { treeDataProvider: this.tree, showCollapseAll: true });
    this.tree.onDidLoad = () => {
      const uri = this.tree.uri;
      const how = this.tree.followed ? 'followed (the levels that changed)' : 'loaded';
      if (uri) this.log(`Tree: ${path.basename(uri.fsPath)} (${this.tree.filter}) ${this.tree.error ? `failed: ${this.tree.error}` : `${how}, leaf ${this.tree.marker ? idText(this.tree.marker.node.id) : 'none'}`}`);
      this.describeTree();
      void this.selectInTree(this.tree.marker);
    };
    this.viewer = new SessionViewerProvider(
      {
        request: (method, params) => this.request(method, params),
        wireUri: (uri) => this.wireUri(uri),
        openAsText: (uri) => this.openAsText(uri),
        showTree: (uri, entryId) => this.showInTree(uri, entryId),
        showContext: (uri, entryId) => this.openContext(uri, entryId === undefined || entryId === null ? undefined : idText(entryId)),
        revealLine: (uri, line) => this.revealLine(uri, line),
        lineBreaks: (uri) => this.lineBreaks(uri),
        activated: (uri) => void this.followSession(uri),
        log: (message) => this.log(message),
      },
      context.extensionUri,
    );
    context.subscriptions.push(
      this.output,
      this.checkDiagnostics,
      this.status,
      this.treeView,
      this.contextDocuments,
      this.treeView.onDidChangeVisibility(async (event) => {
        if (!event.visible) return;
        await this.tree.rowsShown(); // (the tree may have changed while hidden)
        void this.selectInTree(this.tree.marker);
      }),
    );
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
    void vscode.commands.executeCommand('setContext', 'piSession.active', true);
    const resolution = await this.resolveCli();
    if (!resolution.ok) {
      this.log(resolution.message);
      this.status.failed(withoutPrefix(resolution.message));
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
    // VS Code pulls the diagnostics of open documents (the collection named by the server's
    // identifier, "pi-session"); the server pushes only those of files VS Code did not open (too big
    // for it), into a collection of their own: one name for both made VS Code warn, and a push left
    // from before a file was opened would list its problems twice. Its code lens titles carry codicons.
    const piVersion = piVersionSetting();
    let running = false; // whether this client got as far as running (see errorHandler)
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: LANGUAGE_ID },
        { scheme: 'untitled', language: LANGUAGE_ID },
      ],
      outputChannel: this.output,
      diagnosticCollectionName: PUSHED_DIAGNOSTICS,
      middleware: {
        // an open document's problems are the pulled ones: a push for it would list them twice
        handleDiagnostics: (uri, diagnostics, next) => next(uri, isOpenDocument(uri) ? [] : diagnostics),
      },
      initializationOptions: { piVersion },
      errorHandler: this.errorHandler(() => running),
      // (without it the client shows the server's answer to initialize in a notification of its own;
      // start() then fails, which startServer reports with that answer and what to do)
      initializationFailedHandler: () => false,
    };
    this.log(`Following pi ${piVersion} (setting piSession.piVersion).`);
    const client: LanguageClient = new PiLanguageClient('piSession', 'Pi Session', serverOptions, clientOptions);
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
    this.status.starting();
    try {
      await client.start();
      running = true;
      this.log('Server started.');
      this.status.running(`following pi ${piVersion}; ${serverCommand.describe({ ...cli, args: serve.args })} (from ${cli.source})`);
    } catch (error) {
      const message =
        `Pi Session: the language server did not start (${errorText(error)}). ` +
        `Command: ${serverCommand.describe(cli)} serve (from ${cli.source}).`;
      this.log(message);
      this.status.failed(withoutPrefix(message));
      void this.showStartError(message);
    }
  }

  /**
   * The client's own restart after the server stopped on its own reuses its features, and
   * vscode-languageclient 9 leaves them deaf: no session opened after it had its diagnostics pulled,
   * and the tree kept the old server's rows. A new client is started instead, as Restart Server does.
   * A server that ends while it starts is not started again: its start failed, which startServer
   * reports (starting it again would fail alike, each time with its own error).
   */
  private errorHandler(running: () => boolean): ErrorHandler {
    return {
      // a message that could not be read or written: carry on for a few, as the client's default does
      error: (error, _message, count) => {
        if (count !== undefined && count <= 3) return { action: ErrorAction.Continue };
        this.status.failed(`the connection to the server failed: ${errorText(error)}`);
        return { action: ErrorAction.Shutdown };
      },
      closed: () => {
        if (!running()) return { action: CloseAction.DoNotRestart, handled: true, message: 'The server ended while it was starting.' };
        const restarting = this.serverStopped();
        return {
          action: CloseAction.DoNotRestart,
          handled: true,
          message: restarting ? 'The server stopped unexpectedly: starting a new one.' : 'The server stopped unexpectedly again: it is left stopped.',
        };
      },
    };
  }

  /** The server stopped on its own: start a new client unless it keeps stopping. Whether it restarts. */
  private serverStopped(): boolean {
    const now = Date.now();
    this.crashes = [...this.crashes.filter((time) => now - time < CRASH_WINDOW_MS), now];
    if (this.crashes.length > MAX_CRASH_RESTARTS) {
      const message =
        `Pi Session: the language server stopped unexpectedly ${this.crashes.length} times in ${CRASH_WINDOW_MS / 60_000} minutes ` +
        'and is not started again. Its output ("Pi Session") says why; run "Pi Session: Restart Server" once it is fixed.';
      this.log(message);
      this.status.failed(withoutPrefix(message));
      void vscode.window.showErrorMessage(message, 'Restart Server', 'Show Output').then((choice) => {
        if (choice === 'Restart Server') void vscode.commands.executeCommand('piSession.restartServer');
        else if (choice === 'Show Output') this.output.show(true);
      });
      return false;
    }
    this.status.starting();
    // after the client has taken itself down (it does once this handler has answered)
    setTimeout(() => void this.restart(true).catch((error: unknown) => this.log(`Restarting the server failed: ${errorText(error)}`)), 0);
    return true;
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

  /** Restart Server, and the start after a crash (`crashed`: the crashes counted so far are kept). */
  async restart(crashed = false): Promise<void> {
    if (!crashed) this.crashes = [];
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

  /** `token` cancelled: the request is cancelled on the server too ($/cancelRequest). */
  async request<T>(method: string, params: object, token?: vscode.CancellationToken): Promise<T> {
    await this.serverReady();
    const client = this.client;
    if (!client || !client.isRunning()) {
      throw new Error('the pi-session language server is not running (see the "Pi Session" output)');
    }
    // (a token given as undefined would be sent as a second parameter: [params, null])
    return token ? client.sendRequest<T>(method, params, token) : client.sendRequest<T>(method, params);
  }

  // ---- tree ----------------------------------------------------------------------------------

  sessionDocumentUri(): vscode.Uri | undefined {
    const editor = vscode.window.activeTextEditor;
    return editor && editor.document.languageId === LANGUAGE_ID ? editor.document.uri : undefined;
  }

  async followActiveEditor(): Promise<void> {
    const uri = this.sessionDocumentUri();
    if (uri) await this.followSession(uri);
    // An editor that is not a session (e.g. a context document beside it) keeps the tree as it is.
  }

  /** The tree shows this session (its text editor or its viewer became active). */
  async followSession(uri: vscode.Uri): Promise<void> {
    // the tree takes the document before anything is awaited: a tab closed meanwhile must find it
    // there to clear it (closing all editors activates each one in turn)
    const loaded = this.tree.setDocument(uri);
    void vscode.commands.executeCommand('setContext', 'piSession.active', true);
    await loaded;
  }

  async refreshTree(): Promise<void> {
    if (!this.tree.uri) await this.followActiveEditor();
    else await this.tree.reload();
  }

  private describeTree(): void {
    const uri = this.tree.uri;
    this.treeView.description = uri ? `${path.basename(uri.fsPath)} · ${this.tree.filter}` : '';
    const empty = uri && this.tree.empty ? `No entries match the filter "${this.tree.filter}".` : undefined;
    if (this.tree.error) this.treeView.message = `Could not load the session tree: ${this.tree.error}`;
    else this.treeView.message = [this.tree.skipped, empty].filter(Boolean).join(' ') || undefined;
  }

  /** Select a row (the leaf on load, the entry under the cursor) without taking the focus. */
  private async selectInTree(row: Row | undefined): Promise<void> {
    if (!row || !this.treeView.visible) return; // reveal() would open the view
    try {
      await this.treeView.reveal(row, { select: true, focus: false, expand: true });
    } catch (error) {
      this.log(`Tree: could not reveal ${idText(row.node.id)}: ${errorText(error)}`);
    }
  }

  /** The cursor moved in a session editor: select its entry in the tree. */
  followCursor(editor: vscode.TextEditor): void {
    if (editor.document.languageId !== LANGUAGE_ID || editor.document.uri.toString() !== this.tree.uri?.toString()) return;
    if (this.followTimer) clearTimeout(this.followTimer);
    const line = editor.selection.active.line;
    this.followTimer = setTimeout(() => {
      void (async () => {
        if (!this.treeView.visible) return;
        const found = await this.entryAtEditorLine(editor.document.uri, line).catch(() => null);
        if (!found) return;
        const row = await this.tree.locate(found.id);
        await this.selectInTree(row);
      })();
    }, FOLLOW_CURSOR_MS);
  }

  /** No editor shows the tree's session any more: clear the tree. */
  clearClosedSession(): void {
    const uri = this.tree.uri?.toString();
    if (!uri) return;
    const open = vscode.window.tabGroups.all.some((group) =>
      group.tabs.some((tab) => {
        const input = tab.input;
        return (input instanceof vscode.TabInputText || input instanceof vscode.TabInputCustom) && input.uri.toString() === uri;
      }),
    );
    if (!open) void this.tree.setDocument(undefined);
  }

  private onDidChange(params: DidChangeParams): void {
    const changed = params.uri;
    if (params.kind === 'rewriting') {
      // another program is writing the file again: the server keeps the session as it was and
      // reports the finished file (reloaded) next; re-reading now would only show the old state
      this.log(`${changed ?? 'a session file'} is being rewritten by another program: waiting for it`);
      vscode.window.setStatusBarMessage('Pi Session: the session file is being rewritten; waiting for it…', 3000);
      return;
    }
    if (params.kind === 'unreadable') {
      // the file held still without a session header (other text, a byte order mark): the server
      // keeps the session as it was; a reload follows if a header comes back
      const name = changed ? path.basename(vscode.Uri.parse(changed).fsPath) : 'The session file';
      this.log(`${changed ?? 'a session file'} has no session header any more: showing the session as it was`);
      void vscode.window.showWarningMessage(
        `Pi Session: ${name} is not a session file now (it has no session header; pi cannot read it either). ` +
          'The session is shown as it was until the header is back.',
      );
      return;
    }
    if (params.kind === 'leafMoved') this.leafMovesTold++;
    if (params.kind === 'appended') this.appendsTold++;
    if (!changed) {
      void this.tree.refresh();
      return;
    }
    if (this.tree.uri && sameUri(this.wireUri(this.tree.uri), changed)) {
      // entries appended (pi writing a turn) or the leaf moved (Branch Here, another view's pi/branch):
      // the tree takes in what changed, else (no leaf now, any other change) it loads anew
      const moved = params.kind === 'appended' || params.kind === 'leafMoved';
      const leaf = params.leafId;
      void this.tree.refresh(moved && leaf !== undefined && leaf !== null ? { id: leaf } : undefined);
    }
    // (an append leaves the lines before it as they were, lone CRs included)
    if (params.kind !== 'appended' && params.kind !== 'leafMoved') this.loneCrGuard.filesChanged((uri) => sameUri(this.wireUri(uri), changed));
    this.contextDocuments.sessionChanged((uri) => sameUri(uri, changed));
    this.viewer.sessionChanged((uri) => sameUri(uri, changed), (uri) => this.wireUri(uri));
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

  /** The viewer's "tree" button: the tree shows the session with the entry selected. */
  async showInTree(uri: vscode.Uri, entryId?: unknown): Promise<void> {
    await this.followSession(uri);
    await vscode.commands.executeCommand('piSession.tree.focus');
    const row = entryId === undefined || entryId === null ? this.tree.marker : await this.tree.locate(entryId);
    await this.selectInTree(row);
  }

  // ---- entry commands -------------------------------------------------------------------------

  /** The entry a command acts on: a tree row, {uri, entryId}, or the line under the cursor. */
  async target(arg: unknown, required: boolean): Promise<EntryTarget | undefined> {
    if (isRow(arg) && this.tree.uri) return { uri: this.tree.uri, node: arg.node };
    if (isRecord(arg) && typeof arg.uri === 'string') {
      const uri = vscode.Uri.parse(arg.uri);
      if (!('entryId' in arg) || arg.entryId === undefined) return { uri };
      const result = await this.request<TreeView>(Methods.getTree, { uri: this.wireUri(uri), rootId: arg.entryId, depth: 0, previews: false }).catch(
        (error: unknown) => {
          if (required) throw error;
          return undefined;
        },
      );
      const node = result?.nodes[0];
      return { uri, node };
    }
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== LANGUAGE_ID) {
      if (this.tree.uri && !required) return { uri: this.tree.uri };
      throw new Error('open a pi session file first');
    }
    const uri = editor.document.uri;
    const found = await this.entryAtEditorLine(uri, editor.selection.active.line);
    const node = found ?? undefined;
    if (!node && required) {
      // a line without an entry may be a damaged one pi skips, not only the header or a blank line
      const line = editor.selection.active.line + 1;
      throw new Error(`line ${line} holds no entry pi reads (the header, a blank line, or a line pi skips): put the cursor on an entry`);
    }
    return { uri, node };
  }

  /** The entry on a line of a session's text editor (pi/getEntryAtLine takes pi's line). */
  private async entryAtEditorLine(uri: vscode.Uri, line: number): Promise<LineEntry | null> {
    const piLine = piLineOf(line, await this.lineBreaks(uri));
    return this.request<LineEntry | null>(Methods.getEntryAtLine, { uri: this.wireUri(uri), line: piLine });
  }

  /** The lines of a session file holding lone CRs, where VS Code's lines part from pi's (none when
   * the server cannot tell: a server without pi/getLineBreaks numbers lines as before). */
  async lineBreaks(uri: vscode.Uri): Promise<LoneCarriageReturnLine[]> {
    return this.knownLineBreaks(uri).catch(() => []);
  }

  /** The lines of a session file holding lone CRs; throws when the server cannot tell. */
  async knownLineBreaks(uri: vscode.Uri): Promise<LoneCarriageReturnLine[]> {
    return lineBreaksOf(await this.request<unknown>(Methods.getLineBreaks, { uri: this.wireUri(uri) }));
  }

  async showContext(arg: unknown, atLeaf: boolean): Promise<void> {
    const target = await this.target(arg, false);
    if (!target) return;
    await this.openContext(target.uri, atLeaf || !target.node ? undefined : idText(target.node.id));
  }

  async openContext(uri: vscode.Uri, leafId: string | undefined): Promise<void> {
    const format = vscode.workspace.getConfiguration('piSession').get<string>('context.format', 'markdown');
    const docUri = contextDocumentUri(uri, { uri: this.wireUri(uri), leafId, format: format === 'json' ? 'json' : 'markdown' });
    const document = await vscode.workspace.openTextDocument(docUri);
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  async branchHere(arg: unknown): Promise<void> {
    const target = await this.target(arg, true);
    if (!target?.node) return;
    const entryId = idText(target.node.id);
    const wire = this.wireUri(target.uri);
    const told = this.leafMovesTold;
    const result = await this.request<{ leafId?: string }>(Methods.branch, { uri: wire, entryId: target.node.id });
    vscode.window.setStatusBarMessage(`Pi Session: leaf is now ${result?.leafId ?? entryId}`, 5000);
    this.refreshCodeLenses(target.uri);
    // the server told the move before its answer (pi/didChange leafMoved): the tree follows it already
    if (this.leafMovesTold !== told) return;
    // (a server that does not tell it) the tree of that session takes in the move of its leaf (the
    // rows whose marks changed), else loads anew
    const shown = this.tree.uri !== undefined && sameUri(this.wireUri(this.tree.uri), wire);
    const leaf = result?.leafId;
    await this.tree.refresh(shown && leaf !== undefined && leaf !== null ? { id: leaf } : undefined);
  }

  /** Ask the editor for the session's code lenses again (the leaf lens moves with Branch Here). */
  refreshCodeLenses(uri: vscode.Uri): void {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const feature = this.client?.getFeature('textDocument/codeLens');
    if (!document || !feature) return;
    feature.getProvider(document)?.onDidChangeCodeLensEmitter.fire();
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
        value: typeof target.node.label === 'string' ? target.node.label : '',
      }));
    if (label === undefined) return; // cancelled
    const params: Record<string, unknown> = { uri: this.wireUri(target.uri), kind: 'label', targetId: target.node.id };
    if (label.trim()) params.label = label.trim(); // no label key = clear, as pi's /tree does
    const told = this.appendsTold;
    await this.request(Methods.append, params);
    // the server told the append before its answer (pi/didChange appended): the tree and the viewers
    // of the session take it in already; else (a server that does not tell it) the tree loads anew
    if (this.appendsTold !== told) return;
    await this.tree.refresh();
  }

  /** A tree row was clicked: its line in the session's text editor, or its path in the viewer. */
  async openEntry(args: OpenEntryArgs): Promise<void> {
    const uri = vscode.Uri.parse(args.uri);
    const key = uri.toString();
    const textVisible = vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === key);
    const viewers = this.viewer.panelsFor(uri);
    if (!textVisible && (viewers.length > 0 || (await this.isBig(uri)))) {
      await this.viewer.open(uri, args.entryId);
      return;
    }
    if (typeof args.line === 'number') await this.revealLine(uri, args.line);
  }

  private async isBig(uri: vscode.Uri): Promise<boolean> {
    if (uri.scheme !== 'file' || this.textWanted.has(uri.toString())) return false;
    return opensInViewer(uri.fsPath, this.viewerThreshold());
  }

  viewerThreshold(): number {
    const value = vscode.workspace.getConfiguration('piSession').get<number>('viewer.openFilesLargerThanMB', EXTENSION_HOST_LIMIT_MB);
    return typeof value === 'number' && value > 0 ? value : EXTENSION_HOST_LIMIT_MB;
  }

  /** Show pi's line `line` of a session file (a tree row's, the viewer's) in its text editor. */
  async revealLine(uri: vscode.Uri, line: number): Promise<void> {
    const position = new vscode.Position(editorLineOf(line, await this.lineBreaks(uri)), 0);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
      const editor = await vscode.window.showTextDocument(open, { preserveFocus: false, preview: true });
      editor.selection = new vscode.Selection(position, position);
      editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      return;
    }
    // a file too big for extensions has no TextDocument here, but the workbench opens it
    this.textWanted.add(uri.toString());
    await vscode.commands.executeCommand('vscode.open', uri, { selection: new vscode.Range(position, position), preview: true });
  }

  async openAsText(uri: vscode.Uri): Promise<void> {
    this.textWanted.add(uri.toString());
    await vscode.commands.executeCommand('vscode.openWith', uri, 'default');
  }

  /** A text tab opened on a session file too big for extensions: the viewer takes its place. */
  async redirectBigFiles(tabs: readonly vscode.Tab[]): Promise<void> {
    for (const tab of tabs) {
      const input = tab.input;
      if (!(input instanceof vscode.TabInputText) || input.uri.scheme !== 'file') continue;
      if (!(await this.isBig(input.uri))) continue;
      this.log(`${input.uri.fsPath} is larger than ${this.viewerThreshold()} MB: opening it in the session viewer`);
      await this.viewer.open(input.uri, undefined, tab.group.viewColumn);
      // the text tabs on the file, as they are now (the event's objects may be stale by then)
      const key = input.uri.toString();
      const textTabs = vscode.window.tabGroups.all
        .flatMap((group) => group.tabs)
        .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key);
      if (textTabs.length > 0) await Promise.resolve(vscode.window.tabGroups.close(textTabs)).catch((error: unknown) => this.log(`Could not close ${key}: ${errorText(error)}`));
    }
  }

  // ---- open a session --------------------------------------------------------------------------

  /** Open Session...: pick one of pi's sessions of the workspace folder (or of all), open it. */
  async openSession(): Promise<void> {
    const picked = await pickSession(
      { request: (method, params, token) => this.request(method, params, token), log: (message) => this.log(message) },
      sessionsFolder(),
    );
    if (!picked) return;
    if (picked.asText) await this.openAsText(picked.uri);
    else await this.viewer.open(picked.uri);
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
    const { reports, stderr } = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Pi Session: checking all sessions…' },
      () => runCheck(check.command, check.args, (text) => this.output.append(text)),
    );
    if (reports.length === 0) {
      // "checked 0 session files" alone leaves the user guessing where it looked
      this.checkDiagnostics.clear();
      const reason = nothingCheckedReason(stderr);
      const message = `Pi Session: no session file to check.${reason ? ` ${reason}.` : ''}`;
      this.log(message);
      void vscode.window.showWarningMessage(message);
      return 0;
    }
    const open = vscode.workspace.textDocuments.filter((d) => d.languageId === LANGUAGE_ID).map((d) => d.uri.toString());
    const problems = applyReports(this.checkDiagnostics, reports, new Set(open));
    const message = `Pi Session: checked ${counted(reports.length, 'session file')}, ${counted(problems, 'problem')}.`;
    this.log(message);
    if (problems > 0) void vscode.commands.executeCommand('workbench.actions.view.problems');
    void vscode.window.showInformationMessage(message);
    return problems;
  }

  /** A session document opened: its problems are now pulled, so the ones checked or pushed before
   * (when VS Code had no document for the file) are dropped. */
  forgetEarlierProblems(document: vscode.TextDocument): void {
    if (document.languageId !== LANGUAGE_ID) return;
    this.checkDiagnostics.delete(document.uri);
    this.client?.diagnostics?.delete(document.uri);
  }
}

// ---- helpers ----------------------------------------------------------------------------------

/** The pi release the server follows: setting piSession.piVersion (initializationOptions.piVersion). */
function piVersionSetting(): string {
  const value = vscode.workspace.getConfiguration('piSession').get<string>('piVersion', PI_VERSIONS[0]);
  return typeof value === 'string' && (PI_VERSIONS as readonly string[]).includes(value) ? value : PI_VERSIONS[0];
}

/** VS Code has a session document for this file (and so pulls its diagnostics). */
function isOpenDocument(uri: vscode.Uri): boolean {
  const key = uri.toString();
  return vscode.workspace.textDocuments.some((d) => d.languageId === LANGUAGE_ID && d.uri.toString() === key);
}

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

function isRow(v: unknown): v is Row {
  return isRecord(v) && v.kind === 'row' && isRecord(v.node);
}

/** A message of ours without its "Pi Session: " (the status item names it already). */
function withoutPrefix(message: string): string {
  return message.replace(/^Pi Session: /, '');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The file a command from the explorer, an editor title or the palette is about. */
function resourceOf(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  if (tab instanceof vscode.TabInputText || tab instanceof vscode.TabInputCustom) return tab.uri;
  return vscode.window.activeTextEditor?.document.uri;
}

/** The folder whose sessions Open Session lists: the active file's workspace folder, else the first
 * one; none (all sessions) without a local folder. */
function sessionsFolder(): string | undefined {
  const active = resourceOf(undefined);
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) || vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
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
    vscode.window.registerCustomEditorProvider(VIEW_TYPE, ext.viewer, {
      webviewOptions: { retainContextWhenHidden: true },
      supportsMultipleEditorsPerDocument: true,
    }),
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
    vscode.commands.registerCommand('piSession.openSession', guarded(() => ext.openSession())),
    vscode.commands.registerCommand('piSession.tree.refresh', guarded(() => ext.refreshTree())),
    vscode.commands.registerCommand('piSession.tree.filter', guarded(() => ext.pickFilter())),
    vscode.commands.registerCommand(
      'piSession.tree.loadMore',
      guarded((item: TreeItemData) => (item?.kind === 'more' ? ext.tree.loadMore(item.container, item.direction) : Promise.resolve())),
    ),
    vscode.commands.registerCommand('piSession.openEntry', guarded((args: OpenEntryArgs) => ext.openEntry(args))),
    vscode.commands.registerCommand(
      'piSession.openViewer',
      guarded(async (arg?: unknown) => {
        if (isRow(arg) && ext.tree.uri) return ext.viewer.open(ext.tree.uri, arg.node.id);
        const uri = resourceOf(arg);
        if (!uri) throw new Error('open or select a pi session file first');
        return ext.viewer.open(uri);
      }),
    ),
    vscode.commands.registerCommand('piSession.openAsText', guarded(async (arg?: unknown) => {
      const uri = resourceOf(arg);
      if (uri) await ext.openAsText(uri);
    })),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      void ext.followActiveEditor();
      void ext.loneCrGuard.editorShown(editor);
    }),
    vscode.window.onDidChangeTextEditorSelection((event) => ext.followCursor(event.textEditor)),
    vscode.window.tabGroups.onDidChangeTabs((event) => {
      if (event.opened.length > 0) void ext.redirectBigFiles(event.opened);
      if (event.closed.length > 0) ext.clearClosedSession();
    }),
    vscode.workspace.onDidOpenTextDocument((document) => {
      ext.forgetEarlierProblems(document);
      // a language change (e.g. jsonl -> pi-session by first-line detection) reopens the document
      // without changing the active editor: the tree must follow it too
      if (document.languageId !== LANGUAGE_ID) return;
      const active = vscode.window.activeTextEditor;
      const shown = active?.document === document;
      if (!ext.started) void ext.start();
      else if (shown) void ext.followActiveEditor();
      ext.loneCrGuard.opened(document); // (shown or not: Save All saves one in the background too)
      if (shown) void ext.loneCrGuard.editorShown(active);
    }),
    vscode.workspace.onDidCloseTextDocument((document) => {
      ext.contextDocuments.closed(document);
      ext.loneCrGuard.closed(document);
    }),
    vscode.workspace.onDidChangeTextDocument((event) => ext.loneCrGuard.changed(event)),
    vscode.workspace.onWillSaveTextDocument((event) => ext.loneCrGuard.willSave(event)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // the pi release is an initialization option: the server starts again with the new one
      if ((event.affectsConfiguration('piSession.server') || event.affectsConfiguration('piSession.piVersion')) && ext.started) void ext.restart();
      if (event.affectsConfiguration('piSession.tree.filter')) {
        void ext.tree.setFilter(vscode.workspace.getConfiguration('piSession').get<FilterMode>('tree.filter', 'default'));
      }
    }),
  );

  // Big session files already open as text when the window starts go to the viewer too.
  void ext.redirectBigFiles(vscode.window.tabGroups.all.flatMap((group) => group.tabs));
  // The server starts with the first pi session document (or viewer): opening an ordinary .jsonl
  // (which also activates the extension, for first-line detection) must not start it or complain
  // that it is missing.
  const hasSession = vscode.workspace.textDocuments.some((d) => d.languageId === LANGUAGE_ID);
  const ready = hasSession ? ext.start() : Promise.resolve();
  for (const document of vscode.workspace.textDocuments) ext.loneCrGuard.opened(document);
  void ext.loneCrGuard.editorShown(vscode.window.activeTextEditor);
  return { client: () => ext.currentClient(), tree: ext.tree, viewer: ext.viewer, restart: () => ext.restart(), ready };
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}
