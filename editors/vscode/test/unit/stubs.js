// A hand-written stand-in for the `vscode` module and for `vscode-languageclient/node`, enough to
// run activate() and the commands under node:test. Every call the extension makes is recorded.
'use strict';
const Module = require('node:module');
const path = require('node:path');

class Disposable {
  constructor(fn) { this.fn = fn; }
  dispose() { if (this.fn) this.fn(); this.fn = undefined; }
  static from(...items) { return new Disposable(() => items.forEach((i) => i.dispose())); }
}

class EventEmitter {
  constructor() { this.listeners = new Set(); this.event = (listener) => { this.listeners.add(listener); return new Disposable(() => this.listeners.delete(listener)); }; }
  fire(value) { for (const l of [...this.listeners]) l(value); }
  dispose() { this.listeners.clear(); }
}

class CancellationTokenSource {
  constructor() {
    this.emitter = new EventEmitter();
    this.token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  }
  cancel() {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose() {}
}

class Uri {
  constructor(scheme, authority, p, query, fragment) { Object.assign(this, { scheme, authority: authority || '', path: p || '', query: query || '', fragment: fragment || '' }); }
  get fsPath() { return this.path; }
  static file(p) { return new Uri('file', '', p, '', ''); }
  static joinPath(base, ...parts) { return base.with({ path: path.posix.join(base.path, ...parts) }); }
  static from(c) { return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment); }
  static parse(text) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(text);
    if (!m) throw new Error(`bad uri ${text}`);
    return new Uri(m[1], m[2], decodeURIComponent(m[3]), m[4] ? decodeURIComponent(m[4]) : '', m[5] || '');
  }
  with(change) { return new Uri(change.scheme ?? this.scheme, change.authority ?? this.authority, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment); }
  toString() {
    const auth = this.scheme === 'file' || this.authority ? `//${this.authority}` : '';
    return `${this.scheme}:${auth}${encodeURI(this.path)}${this.query ? `?${encodeURIComponent(this.query)}` : ''}`;
  }
  toJSON() { return this.toString(); }
}

class Position { constructor(line, character) { this.line = line; this.character = character; } }
class Range {
  constructor(a, b, c, d) {
    if (typeof a === 'number') { this.start = new Position(a, b); this.end = new Position(c, d); } else { this.start = a; this.end = b; }
  }
}
class Selection extends Range { constructor(anchor, active) { super(anchor, active); this.anchor = anchor; this.active = active; } }
class Diagnostic { constructor(range, message, severity) { Object.assign(this, { range, message, severity }); } }
class TreeItem { constructor(label, collapsibleState) { this.label = label; this.collapsibleState = collapsibleState; } }
class ThemeIcon { constructor(id, color) { this.id = id; this.color = color; } }
class ThemeColor { constructor(id) { this.id = id; } }
class TabInputText { constructor(uri) { this.uri = uri; } }
class TabInputCustom { constructor(uri, viewType) { this.uri = uri; this.viewType = viewType; } }
/** A QuickPick as createQuickPick gives it; a test reads its items and accepts one, as a user would. */
class FakeQuickPick {
  constructor() {
    this.items = []; this.activeItems = []; this.selectedItems = []; this.busy = false; this.shown = false; this.disposed = false;
    this.title = undefined; this.placeholder = undefined; this.value = '';
    this.emitters = { accept: new EventEmitter(), hide: new EventEmitter(), button: new EventEmitter(), value: new EventEmitter() };
    this.onDidAccept = this.emitters.accept.event;
    this.onDidChangeValue = this.emitters.value.event;
    this.onDidHide = this.emitters.hide.event;
    this.onDidTriggerItemButton = this.emitters.button.event;
  }
  show() { this.shown = true; }
  hide() { if (!this.shown) return; this.shown = false; this.emitters.hide.fire(); }
  dispose() { this.disposed = true; }
  /** The user types (or pastes) `value` in the input: VS Code makes the first item shown active. */
  type(value) {
    this.value = value;
    this.activeItems = this.shownItems().slice(0, 1);
    this.emitters.value.fire(value);
  }
  /**
   * The items VS Code shows for the input's value: those always shown, and those whose label (or
   * description, detail when matched on) holds the value (VS Code's filter matches a contiguous
   * part, ignoring case; its camel-case and wildcard matches are left out).
   */
  shownItems() {
    const query = this.value.trim().toLowerCase();
    const holds = (text) => typeof text === 'string' && text.toLowerCase().includes(query);
    return this.items.filter((i) => !query || i.alwaysShow || holds(i.label)
      || (this.matchOnDescription && holds(i.description)) || (this.matchOnDetail && holds(i.detail)));
  }
  /** Enter on the item whose label is given (the active item when none is). */
  accept(label) {
    const item = label === undefined ? this.activeItems[0] : this.items.find((i) => i.label === label);
    if (!item) throw new Error(`no item ${label} in ${this.items.map((i) => i.label).join(', ')}`);
    this.selectedItems = [item];
    this.emitters.accept.fire();
  }
  pressButton(label, index = 0) {
    const item = this.items.find((i) => i.label === label);
    this.emitters.button.fire({ item, button: item.buttons[index] });
  }
}

class MarkdownString {
  constructor(value = '') { this.value = value; }
  appendMarkdown(v) { this.value += v; return this; }
  appendText(v) { this.value += v; return this; }
}

function makeDocument(uri, text, languageId) {
  const lines = text.split('\n');
  return {
    uri, languageId, version: 1, isDirty: false,
    get lineCount() { return lines.length; },
    lineAt(i) { return { text: lines[i].replace(/\r$/, '') }; },
    getText() { return text; },
  };
}

function createState() {
  return {
    commands: new Map(),
    executed: [],
    messages: { error: [], warning: [], info: [] },
    config: {},
    quickPickAnswer: undefined,
    quickPicks: [],
    infoAnswer: undefined,
    warningAnswer: undefined,
    workspaceFolders: undefined,
    inputBoxAnswer: undefined,
    languageChanges: [],
    treeViews: [],
    statusItems: new Map(),
    contentProviders: new Map(),
    shownDocuments: [],
    diagnostics: new Map(),
    hostWarnings: [],
    clientLog: [],
    documents: [],
    activeTextEditor: undefined,
    extensions: {},
    emitters: {
      open: new EventEmitter(), close: new EventEmitter(), active: new EventEmitter(), config: new EventEmitter(),
      selection: new EventEmitter(), tabs: new EventEmitter(), willSave: new EventEmitter(), change: new EventEmitter(),
    },
    tabGroups: [],
    closedTabs: [],
    customEditors: new Map(),
    visibleTextEditors: [],
    treeVisible: true,
    clients: [],
    responder: () => null,
    output: [],
  };
}

function createVscode(state) {
  const vscode = {
    Disposable, EventEmitter, CancellationTokenSource, Uri, Position, Range, Selection, Diagnostic, TreeItem, ThemeIcon, ThemeColor, MarkdownString,
    TabInputText, TabInputCustom,
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    LanguageStatusSeverity: { Information: 0, Warning: 1, Error: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    TreeItemCheckboxState: { Unchecked: 0, Checked: 1 },
    TextEditorRevealType: { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 },
    window: {
      createOutputChannel: (name) => ({ name, appendLine: (l) => state.output.push(l), append: (t) => state.output.push(t), show() {}, dispose() {} }),
      // As VS Code's: a hidden view takes in a change of its rows only once it is shown again, asking
      // for them after it became visible; a reveal before then does not find them.
      createTreeView: (id, options) => {
        const visibility = new EventEmitter();
        let stale = false;
        options.treeDataProvider.onDidChangeTreeData?.(() => { if (!state.treeVisible) stale = true; });
        const view = {
          id, options, message: undefined, description: undefined, revealed: [], dispose() {},
          get visible() { return state.treeVisible; },
          onDidChangeVisibility: visibility.event,
          reveal: async (element, opts) => {
            if (stale) throw new Error(`TreeError [${id}] Data tree node not found: [object Object]`);
            view.revealed.push({ element, opts });
          },
          /** The user shows the view (hidden: `show(false)`). */
          show: (visible = true) => {
            state.treeVisible = visible;
            visibility.fire({ visible });
            if (visible && stale) {
              setTimeout(() => void Promise.resolve(options.treeDataProvider.getChildren(undefined)).then(() => { stale = false; }), 1);
            }
          },
        };
        state.treeViews.push(view);
        return view;
      },
      registerCustomEditorProvider: (viewType, provider, options) => { state.customEditors.set(viewType, { provider, options }); return new Disposable(); },
      onDidChangeTextEditorSelection: state.emitters.selection.event,
      get visibleTextEditors() { return state.visibleTextEditors; },
      tabGroups: {
        get all() { return state.tabGroups; },
        get activeTabGroup() { return state.tabGroups[0] ?? { tabs: [], activeTab: undefined }; },
        onDidChangeTabs: state.emitters.tabs.event,
        close: async (tab) => { state.closedTabs.push(tab); return true; },
      },
      showErrorMessage: async (m) => { state.messages.error.push(m); },
      showWarningMessage: async (m, ...actions) => { state.messages.warning.push(m); return actions.includes(state.warningAnswer) ? state.warningAnswer : undefined; },
      showInformationMessage: async (m, ...actions) => { state.messages.info.push(m); return actions.includes(state.infoAnswer) ? state.infoAnswer : undefined; },
      createQuickPick: () => { const pick = new FakeQuickPick(); state.quickPicks.push(pick); return pick; },
      showQuickPick: async (items) => items.find((i) => i.label === state.quickPickAnswer),
      showInputBox: async () => state.inputBoxAnswer,
      showTextDocument: async (document, options) => {
        const editor = { document, selection: new Selection(new Position(0, 0), new Position(0, 0)), revealRange() {} };
        state.shownDocuments.push({ document, options, editor });
        return editor;
      },
      setStatusBarMessage: () => new Disposable(),
      withProgress: (_options, task) => task({ report() {} }),
      get activeTextEditor() { return state.activeTextEditor; },
      onDidChangeActiveTextEditor: state.emitters.active.event,
    },
    workspace: {
      getConfiguration: (section) => ({
        get: (key, fallback) => { const v = state.config[`${section}.${key}`]; return v === undefined ? fallback : v; },
      }),
      onDidOpenTextDocument: state.emitters.open.event,
      onDidCloseTextDocument: state.emitters.close.event,
      onDidChangeTextDocument: state.emitters.change.event,
      onWillSaveTextDocument: state.emitters.willSave.event,
      onDidChangeConfiguration: state.emitters.config.event,
      get textDocuments() { return state.documents; },
      get workspaceFolders() { return state.workspaceFolders; },
      getWorkspaceFolder: (uri) => (state.workspaceFolders ?? []).find((f) => uri.path.startsWith(`${f.uri.path}/`)),
      registerTextDocumentContentProvider: (scheme, provider) => { state.contentProviders.set(scheme, provider); return new Disposable(); },
      openTextDocument: async (uri) => {
        const provider = state.contentProviders.get(uri.scheme);
        if (provider) return makeDocument(uri, await provider.provideTextDocumentContent(uri), 'markdown');
        const found = state.documents.find((d) => d.uri.toString() === uri.toString());
        if (!found) throw new Error(`no document ${uri}`);
        return found;
      },
    },
    languages: {
      createLanguageStatusItem: (id, selector) => {
        const item = { id, selector, dispose() {} };
        state.statusItems.set(id, item);
        return item;
      },
      // as VS Code: a second collection of a name still in use gets a warning in the extension host log
      createDiagnosticCollection: (name) => {
        if (state.diagnostics.has(name)) state.hostWarnings.push(`DiagnosticCollection with name '${name}' does already exist.`);
        const entries = new Map();
        state.diagnostics.set(name, entries);
        return {
          name,
          set: (uri, d) => entries.set(uri.toString(), d),
          delete: (uri) => entries.delete(uri.toString()),
          clear: () => entries.clear(),
          dispose: () => { if (state.diagnostics.get(name) === entries) state.diagnostics.delete(name); },
        };
      },
      setTextDocumentLanguage: async (document, languageId) => {
        state.languageChanges.push({ uri: document.uri.toString(), languageId });
        const old = document.languageId;
        state.emitters.close.fire({ ...document, languageId: old });
        document.languageId = languageId;
        state.emitters.open.fire(document);
        return document;
      },
    },
    commands: {
      registerCommand: (id, fn) => { if (state.commands.has(id)) throw new Error(`duplicate command ${id}`); state.commands.set(id, fn); return new Disposable(() => state.commands.delete(id)); },
      executeCommand: async (id, ...args) => { state.executed.push([id, ...args]); const fn = state.commands.get(id); return fn ? fn(...args) : undefined; },
    },
    extensions: { getExtension: (id) => state.extensions[id] },
  };
  return vscode;
}

/** The server's identifier of its pulled diagnostics (DiagnosticOptions.identifier): the pull
 * feature's collection is named by it. */
const SERVER_DIAGNOSTIC_IDENTIFIER = 'pi-session';

function createLanguageClientModule(state, vscode) {
  // As vscode-languageclient 9 does: a start failure is logged and notified ('force'), a failed
  // initialize shown unless an initializationFailedHandler takes it, the exit of
  // a stopped server logged as an error; the push and pull features each own a diagnostic collection.
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, running: false, handlers: new Map(), requests: [] });
      this.code2ProtocolConverter = { asUri: (uri) => uri.toString() };
      state.clients.push(this);
    }
    async start() {
      if (state.startError) {
        this.error(`${this.name} client: couldn't create connection to server.`, state.startError, 'force');
        throw state.startError;
      }
      if (state.initializeError) {
        const error = state.initializeError;
        if (this.clientOptions.initializationFailedHandler) this.clientOptions.initializationFailedHandler(error);
        else {
          state.messages.error.push(error.message);
          this.error('Server initialization failed.', error);
        }
        this.error(`${this.name} client: couldn't create connection to server.`, error, 'force');
        throw error;
      }
      this._diagnostics = vscode.languages.createDiagnosticCollection(this.clientOptions.diagnosticCollectionName);
      this.pulledDiagnostics = vscode.languages.createDiagnosticCollection(SERVER_DIAGNOSTIC_IDENTIFIER);
      this.running = true;
    }
    async stop() {
      this.running = false;
      this._diagnostics?.dispose();
      this.pulledDiagnostics?.dispose();
      this.error('Server process exited with code 0.', undefined, false);
    }
    get diagnostics() { return this._diagnostics; }
    /** The server sent textDocument/publishDiagnostics. */
    publishDiagnostics(uri, diagnostics) {
      const next = (u, d) => this._diagnostics.set(u, d);
      const middleware = this.clientOptions.middleware?.handleDiagnostics;
      if (middleware) middleware(uri, diagnostics, next);
      else next(uri, diagnostics);
    }
    error(message, _data, showNotification = true) {
      state.clientLog.push(`[Error] ${message}`);
      if (showNotification) state.messages.error.push(message); // (revealOutputChannelOn: Error, the default)
    }
    info(message, _data, showNotification = true) {
      state.clientLog.push(`[Info] ${message}`);
      if (showNotification === 'force') state.messages.info.push(message);
    }
    isRunning() { return this.running; }
    onNotification(method, handler) { this.handlers.set(method, handler); return new Disposable(() => this.handlers.delete(method)); }
    notify(method, params) { const h = this.handlers.get(method); if (h) h(params); }
    // (a cancelled token is what vscode-languageclient sends as $/cancelRequest; an argument given
    // as undefined in its place is sent as a second parameter: params become [params, null])
    async sendRequest(method, params, ...rest) {
      if (rest.length > 0 && !(rest.length === 1 && rest[0] && typeof rest[0].isCancellationRequested === 'boolean')) {
        throw new Error(`sendRequest(${method}): the server would get [params, ${rest.map(String).join(', ')}], not params`);
      }
      this.requests.push({ method, params, token: rest[0] });
      return state.responder(method, params);
    }
    getFeature(method) {
      if (method !== 'textDocument/codeLens') return undefined;
      return { getProvider: () => ({ onDidChangeCodeLensEmitter: { fire: () => { state.codeLensRefreshes = (state.codeLensRefreshes ?? 0) + 1; } } }) };
    }
  }
  return {
    LanguageClient,
    TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 },
    CloseAction: { DoNotRestart: 1, Restart: 2 },
    ErrorAction: { Continue: 1, Shutdown: 2 },
  };
}

/** Load a fresh copy of the compiled extension with fresh stubs; returns {ext, state, vscode}. */
function loadExtension() {
  const state = createState();
  const vscode = createVscode(state);
  const lc = createLanguageClientModule(state, vscode);
  const out = path.join(__dirname, '..', '..', 'out', 'src');
  for (const key of Object.keys(require.cache)) if (key.startsWith(out)) delete require.cache[key];
  const originalLoad = Module._load;
  Module._load = function (request, parent, isMain) {
    if (request === 'vscode') return vscode;
    if (request === 'vscode-languageclient/node') return lc;
    return originalLoad.call(this, request, parent, isMain);
  };
  try {
    const ext = require(path.join(out, 'extension.js'));
    return { ext, state, vscode, makeDocument, restore: () => { Module._load = originalLoad; } };
  } catch (e) {
    Module._load = originalLoad;
    throw e;
  }
}

function fakeContext() {
  const root = path.join(__dirname, '..', '..');
  return { subscriptions: [], extensionPath: root, extensionUri: Uri.file(root) };
}

/** A webview panel as resolveCustomEditor gets it: records posted messages, lets a test send some. */
function fakePanel() {
  const received = new EventEmitter();
  const viewState = new EventEmitter();
  const disposed = new EventEmitter();
  const panel = {
    active: true,
    viewColumn: 1,
    posted: [],
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (uri) => uri.with({ scheme: 'vscode-webview-resource' }),
      postMessage: async (message) => { panel.posted.push(message); return true; },
      onDidReceiveMessage: received.event,
    },
    onDidChangeViewState: viewState.event,
    onDidDispose: disposed.event,
    reveal() {},
    send: (message) => received.fire(message),
    dispose: () => disposed.fire(),
  };
  return panel;
}

module.exports = { loadExtension, fakeContext, fakePanel, makeDocument, Uri };
