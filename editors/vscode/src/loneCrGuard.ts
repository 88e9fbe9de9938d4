// A session whose lone CRs a save would split. VS Code loads a file holding a lone CR (one not
// followed by "\n") with a line break in its place, and writes that line break when it saves it:
// pi, whose lines end at "\n" only, then reads the pieces of such an entry as damaged lines and
// loses the entry. Nothing in the editor can put the CR back, so the editor of such a session is
// made read-only for the window's session (the user may allow editing), and a save of it is warned
// about. The workbench's read-only commands act on the active editor: the editor is made read-only
// when it is shown. Every session document is checked when it opens, shown or not: an extension may
// edit one in the background, and Save All saves it too (that save is warned about).
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LANGUAGE_ID } from './detect';
import { lineName, linesASaveSplits } from './lineBreaks';
import type { LoneCarriageReturnLine } from './protocol';
import { counted } from './words';

/** The setting that turns the protection off. */
export const PROTECT_SETTING = 'protectLoneCarriageReturns';
const READONLY_IN_SESSION = 'workbench.action.files.setActiveEditorReadonlyInSession';
const WRITEABLE_IN_SESSION = 'workbench.action.files.setActiveEditorWriteableInSession';
const RESET_READONLY_IN_SESSION = 'workbench.action.files.resetActiveEditorReadonlyInSession';
export const ALLOW_EDITING = 'Allow Editing';
/** How many of the lines a message names; the others are counted. */
const LINES_NAMED = 3;
/** How long a save waits for what it would split, when not known yet (VS Code waits 1.5 s for all
 * of a save's participants, and stops calling one that keeps overrunning). */
const SAVE_WAITS_MS = 1000;

export interface LoneCrGuardHost {
  /** The lone CRs of the file on disk (pi/getLineBreaks); throws when the server cannot tell. */
  lineBreaks(uri: vscode.Uri): Promise<LoneCarriageReturnLine[]>;
  log(message: string): void;
}

/** What a save of a session would split: pi's lines, and all of the file's lone CRs (to name lines). */
interface Split {
  lines: LoneCarriageReturnLine[];
  breaks: LoneCarriageReturnLine[];
}

export class LoneCrGuard {
  /** What a save of each open session would split (by URI), from its file as it was when the
   * document was read: asked when it opens, and again when it is read from disk again. */
  private readonly found = new Map<string, Promise<Split>>();
  /** Sessions whose notice was shown since they opened (the user answers it once). */
  private readonly told = new Set<string>();
  /** Sessions this guard made read-only: VS Code keeps that for the window's session, past a close. */
  private readonly madeReadonly = new Set<string>();
  /** Sessions whose save was warned about since they opened. */
  private readonly warnedOfSave = new Set<string>();

  constructor(private readonly host: LoneCrGuardHost) {}

  /** An editor became active: a session a save would split is made read-only, with a notice why. */
  async editorShown(editor: vscode.TextEditor | undefined): Promise<void> {
    const document = editor?.document;
    if (!document || !guarded(document)) return;
    const key = document.uri.toString();
    if (!protectionOn()) {
      // (the setting was turned off since this guard made it read-only)
      if (this.madeReadonly.delete(key)) await vscode.commands.executeCommand(RESET_READONLY_IN_SESSION);
      return;
    }
    if (this.told.has(key)) return;
    const split = await this.splitBySave(document);
    if (!split || this.told.has(key) || vscode.window.activeTextEditor?.document.uri.toString() !== key) return;
    if (split.lines.length === 0) {
      // the lone CRs are gone from the file since this guard made it read-only (repaired elsewhere)
      if (this.madeReadonly.delete(key)) await vscode.commands.executeCommand(RESET_READONLY_IN_SESSION);
      return;
    }
    this.told.add(key);
    this.madeReadonly.add(key);
    await vscode.commands.executeCommand(READONLY_IN_SESSION);
    this.host.log(`${document.uri.fsPath}: read-only, a save would split ${linesNamed(split)}`);
    void this.tell(document, split);
  }

  /** A session document opened, shown or not: what a save of it would split is asked now, from
   * the file as it is before any save of it. */
  opened(document: vscode.TextDocument): void {
    if (guarded(document) && protectionOn()) void this.splitBySave(document);
  }

  /** A session document's text changed. Read from disk again (not dirty, and no undo or redo: VS
   * Code took in another program's write), it is asked about again, and its editor, when active,
   * looked at again; what was asked before was of the file before that write. An edit in the
   * editor leaves the file as it was. */
  changed(event: vscode.TextDocumentChangeEvent): void {
    const document = event.document;
    if (event.contentChanges.length === 0 || document.isDirty || event.reason !== undefined || !guarded(document)) return;
    this.found.delete(document.uri.toString());
    this.opened(document);
    const active = vscode.window.activeTextEditor;
    if (active?.document === document) void this.editorShown(active);
  }

  /** A session is about to be saved: if the save splits lines pi reads, the user is told once (the
   * save cannot be stopped, nor the carriage returns written back). Not asked about yet, the save
   * waits a while for the answer: once written, the file holds no lone CR to find. */
  willSave(event: vscode.TextDocumentWillSaveEvent): void {
    const document = event.document;
    if (!guarded(document) || !protectionOn() || this.warnedOfSave.has(document.uri.toString())) return;
    event.waitUntil(settledWithin(this.splitBySave(document), SAVE_WAITS_MS).then((split) => split && this.warnOfSave(document, split)));
  }

  private warnOfSave(document: vscode.TextDocument, split: Split): void {
    const key = document.uri.toString();
    if (split.lines.length === 0 || this.warnedOfSave.has(key)) return;
    this.warnedOfSave.add(key);
    const message =
      `Pi Session: saving ${path.basename(document.uri.fsPath)} writes a line break where ${counted(split.lines.length, 'line')} ` +
      `held a carriage return inside the line (${linesNamed(split)}). pi will read each such entry as damaged lines and lose it; ` +
      'VS Code cannot write the carriage returns back.';
    this.host.log(message);
    void vscode.window.showWarningMessage(message);
  }

  /** Files on disk changed otherwise than by an append (another program wrote them): their lone CRs
   * are asked again when their editors are shown next, or before they are saved. */
  filesChanged(changed: (uri: vscode.Uri) => boolean): void {
    for (const key of [...this.found.keys()]) if (changed(vscode.Uri.parse(key))) this.found.delete(key);
  }

  closed(document: vscode.TextDocument): void {
    const key = document.uri.toString();
    this.found.delete(key);
    this.told.delete(key);
    this.warnedOfSave.delete(key);
  }

  /** What a save of the session would split; undefined when the server cannot tell (asked again later). */
  private async splitBySave(document: vscode.TextDocument): Promise<Split | undefined> {
    const key = document.uri.toString();
    let found = this.found.get(key);
    if (!found) {
      found = this.host.lineBreaks(document.uri).then((breaks) => ({
        breaks,
        lines: linesASaveSplits(breaks, (n) => (n < document.lineCount ? document.lineAt(n).text : undefined)),
      }));
      this.found.set(key, found);
    }
    try {
      return await found;
    } catch (error) {
      if (this.found.get(key) === found) this.found.delete(key);
      this.host.log(`${document.uri.fsPath}: could not ask for its lone carriage returns: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  private async tell(document: vscode.TextDocument, split: Split): Promise<void> {
    const lines = counted(split.lines.length, 'line');
    const choice = await vscode.window.showWarningMessage(
      `Pi Session: ${path.basename(document.uri.fsPath)} is read-only: ${lines} ${split.lines.length === 1 ? 'holds' : 'hold'} ` +
        `a carriage return inside the line (${linesNamed(split)}). VS Code would write it as a line break on save, and pi would ` +
        `lose ${split.lines.length === 1 ? 'that entry' : 'those entries'}. ${ALLOW_EDITING} makes it writable anyway.`,
      ALLOW_EDITING,
    );
    if (choice !== ALLOW_EDITING || document.isClosed) return;
    await vscode.window.showTextDocument(document, { preview: false });
    await vscode.commands.executeCommand(WRITEABLE_IN_SESSION);
    this.madeReadonly.delete(document.uri.toString());
    this.host.log(`${document.uri.fsPath}: made writable (Allow Editing)`);
  }
}

function guarded(document: vscode.TextDocument): boolean {
  return document.languageId === LANGUAGE_ID && document.uri.scheme === 'file';
}

function protectionOn(): boolean {
  return vscode.workspace.getConfiguration('piSession').get<boolean>(PROTECT_SETTING, true) !== false;
}

/** What `promise` gives if it settles within `ms`, else undefined then; undefined too if it fails. */
function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  return Promise.race([promise.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}

/** The lines a save splits, as VS Code names them: the first few, the others counted. */
function linesNamed(split: Split): string {
  const named = split.lines.slice(0, LINES_NAMED).map((b) => lineName(b.line, split.breaks));
  const more = split.lines.length - named.length;
  return more > 0 ? `${named.join(', ')} and ${more.toLocaleString('en-US')} more` : named.join(', ');
}
