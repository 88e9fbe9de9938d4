// "Open Session...": a QuickPick of pi's sessions of the workspace folder (pi/list) or of every
// folder (pi/listAll), newest first, as pi's /resume offers them. The sessions come with their
// first message cut short, never their whole text: a listing of long sessions stays small.
import * as os from 'node:os';
import * as vscode from 'vscode';
import { Methods, type ListedSession, type SessionsPage } from './protocol';
import { counted } from './words';

/** The first message is cut to this many characters: a title, not the message. */
export const MAX_TEXT_CHARS = 200;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Older than this, a session shows its local date instead of how long ago it changed. */
const RELATIVE_FOR = 7 * DAY;

export interface SessionItem extends vscode.QuickPickItem {
  session?: ListedSession;
  /** the item that switches to every folder's sessions */
  all?: true;
}

/** What the user picked: a session file, in the viewer or as text. */
export interface PickedSession {
  uri: vscode.Uri;
  asText: boolean;
}

export interface PickerHost {
  /** When `token` is cancelled the server is told to stop ($/cancelRequest). */
  request<T>(method: string, params: object, token: vscode.CancellationToken): Promise<T>;
  log(message: string): void;
}

const OPEN_AS_TEXT: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('go-to-file'), tooltip: 'Open as Text' };

export const ALL_SESSIONS_LABEL = 'All sessions...';

/**
 * QuickPick labels read `$(name)` as an icon: a session's own text must show as written.
 * A backslash before it is how VS Code escapes one.
 */
export function escapeIcons(text: string): string {
  return text.replace(/\$\(/g, '\\$(');
}

/** The session's name, else its first message, on one line. */
export function sessionTitle(session: Pick<ListedSession, 'name' | 'firstMessage' | 'textTruncated'>): string {
  if (typeof session.name === 'string' && session.name.trim()) return oneLine(session.name);
  const first = typeof session.firstMessage === 'string' ? oneLine(session.firstMessage) : '';
  if (!first) return '(no messages)';
  return session.textTruncated ? `${first}…` : first;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** When the session last changed: how long ago within a week, else its local date and time. */
export function whenText(modified: string | null, now: number): string {
  const time = modified === null ? NaN : Date.parse(modified);
  if (!Number.isFinite(time)) return 'unknown time';
  const ago = now - time;
  if (ago < MINUTE) return 'just now'; // the future too: a clock ahead of this one
  if (ago < HOUR) return counted(Math.floor(ago / MINUTE), 'minute') + ' ago';
  if (ago < DAY) return counted(Math.floor(ago / HOUR), 'hour') + ' ago';
  if (ago < RELATIVE_FOR) return counted(Math.floor(ago / DAY), 'day') + ' ago';
  const date = new Date(time);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}`;
}

/**
 * A path under the home folder as `~/...` (what a narrow picker has room for; every session pi
 * keeps is under ~/.pi unless PI_CODING_AGENT_DIR says otherwise), any other path as it is.
 */
export function homeRelative(file: string, home: string): string {
  const base = home.replace(/[\\/]+$/, '');
  if (!base || !file.startsWith(base)) return file;
  const rest = file.slice(base.length);
  if (rest === '') return '~';
  return rest[0] === '/' || (rest[0] === '\\' && process.platform === 'win32') ? `~${rest}` : file;
}

/**
 * pi's name for a session file: the time it was made (UTC, its `:` and `.` written `-`), `_`, the
 * session's UUID, `.jsonl`.
 */
const PI_FILE_NAME = /^(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/i;

/**
 * A file name pi gave as its session's id (a UUID), then the time in it: the id whole (the picker
 * filters on what it shows: a pasted id finds its session), its end, which tells two sessions of
 * the same minute apart, within what a picker 400 pixels wide shows (the whole name, 67 characters,
 * was cut before it). Any other name as it is.
 */
export function shownFileName(name: string): string {
  const parts = PI_FILE_NAME.exec(name);
  return parts ? `${parts[2]} · ${parts[1]}` : name;
}

/** Where a file's name starts, after its folder (0 without one). */
function nameStart(file: string): number {
  return Math.max(file.lastIndexOf('/'), process.platform === 'win32' ? file.lastIndexOf('\\') : -1) + 1;
}

/**
 * A session file as its name ({@link shownFileName}), then the folder it is in (`~/...` under
 * `home`): a narrow picker cuts a line's end, so the folder goes after what tells sessions apart.
 */
export function fileThenFolder(file: string, home: string): string {
  const cut = nameStart(file) - 1;
  if (cut < 0) return shownFileName(file);
  return `${shownFileName(file.slice(cut + 1))} · ${homeRelative(file.slice(0, cut) || file.slice(0, 1), home)}`;
}

/**
 * The file a pasted name or path names (what `ls` prints, a path copied from a shell, quoted or
 * not), or undefined when `value` names no `.jsonl` file. The picker shows pi's file name
 * rearranged ({@link shownFileName}) and the folder after it, so VS Code's filter, which matches
 * what is shown, finds neither.
 */
export function pastedFileName(value: string): string | undefined {
  const unquoted = value.trim().replace(/^(['"])(.*)\1$/s, '$2');
  const name = unquoted.slice(nameStart(unquoted));
  return /\.jsonl$/i.test(name) && !/[\r\n]/.test(name) ? name : undefined;
}

/**
 * The items with the sessions whose file `value` names always shown, the others filtered as
 * usual. The name alone decides (pi's holds the session's UUID): a path pasted from a shell may
 * reach the same folder another way (a link, `~`). Answers `items` itself when nothing changes.
 */
export function showingPasted(items: readonly SessionItem[], value: string): readonly SessionItem[] {
  const name = pastedFileName(value)?.toLowerCase();
  const named = (item: SessionItem) => name !== undefined && item.session !== undefined && item.session.path.slice(nameStart(item.session.path)).toLowerCase() === name;
  if (items.every((item) => item.all || !!item.alwaysShow === named(item))) return items;
  return items.map((item) => (item.all ? item : { ...item, alwaysShow: named(item) }));
}

/**
 * One session's row: its title, then when it changed and its messages (and its folder in all
 * sessions), which a narrow picker cuts first; below, its file's name (its UUID first when pi gave it),
 * then the file's folder.
 */
export function sessionItem(session: ListedSession, now: number, withFolder: boolean, home: string = os.homedir()): SessionItem {
  const parts = [whenText(session.modified, now), counted(session.messageCount, 'message')];
  if (withFolder && session.cwd) parts.push(homeRelative(session.cwd, home));
  return {
    label: escapeIcons(sessionTitle(session)),
    description: escapeIcons(parts.join(' · ')),
    detail: escapeIcons(fileThenFolder(session.path, home)),
    buttons: [OPEN_AS_TEXT],
    session,
  };
}

/** The listing's sessions: a list, or a page when the request asked for one. */
function sessionsOf(reply: ListedSession[] | SessionsPage | null): ListedSession[] {
  if (Array.isArray(reply)) return reply;
  return reply && Array.isArray(reply.sessions) ? reply.sessions : [];
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : String(error);
}

/**
 * Show the sessions of `folder` (every folder's when undefined) and answer the one picked, or
 * undefined when the user closed the picker, there were none, or the server failed (each said in
 * a message; nothing is thrown).
 */
export async function pickSession(host: PickerHost, folder: string | undefined): Promise<PickedSession | undefined> {
  const quickPick = vscode.window.createQuickPick<SessionItem>();
  quickPick.matchOnDescription = true;
  quickPick.matchOnDetail = true;
  // a user switching to all sessions must not get the folder's answer arriving late
  let generation = 0;
  // the listing on its way: a picker closed or switched to all sessions stops it on the server, where
  // thousands of sessions take a while to read
  let pending: vscode.CancellationTokenSource | undefined;
  const settle = (cancel: boolean) => {
    if (cancel) pending?.cancel();
    pending?.dispose();
    pending = undefined;
  };
  let picked: PickedSession | undefined;
  let followUp: (() => Promise<PickedSession | undefined>) | undefined;

  const load = async (all: boolean): Promise<void> => {
    const mine = ++generation;
    settle(true);
    const listing = (pending = new vscode.CancellationTokenSource());
    quickPick.title = all ? 'Pi sessions of all folders' : `Pi sessions of ${homeRelative(folder ?? '', os.homedir())}`;
    quickPick.placeholder = 'Reading the sessions...';
    quickPick.items = [];
    quickPick.busy = true;
    const method = all ? Methods.listAll : Methods.list;
    // where pi's command line keeps sessions (its variable, the folder's sessionDir setting), as
    // pi --resume lists them
    const where = { cliSessionDir: true, ...(folder ? { environment: { cwd: folder } } : {}) };
    const params = all
      ? { ...where, text: 'first', maxTextChars: MAX_TEXT_CHARS }
      : { cwd: folder, ...where, text: 'first', maxTextChars: MAX_TEXT_CHARS };
    let sessions: ListedSession[];
    try {
      sessions = sessionsOf(await host.request<ListedSession[] | SessionsPage | null>(method, params, listing.token));
    } catch (error) {
      if (mine !== generation) return;
      settle(false);
      host.log(`${method} failed: ${errorText(error)}`);
      quickPick.hide();
      void vscode.window.showErrorMessage(`Pi Session: could not list the sessions: ${errorText(error)}`);
      return;
    }
    if (mine !== generation) return;
    settle(false);
    quickPick.busy = false;
    if (sessions.length === 0) {
      if (!all) followUp = () => offerAllSessions(host, folder ?? '');
      else void vscode.window.showInformationMessage('Pi Session: pi has no sessions yet (it keeps them under ~/.pi/agent/sessions, or PI_CODING_AGENT_DIR).');
      quickPick.hide();
      return;
    }
    const now = Date.now();
    const home = os.homedir();
    const items = sessions.map((session) => sessionItem(session, now, all, home));
    quickPick.items = all ? items : [{ label: ALL_SESSIONS_LABEL, description: 'the sessions of every folder', alwaysShow: true, all: true }, ...items];
    quickPick.activeItems = [items[0]]; // Enter opens the newest, as pi's /resume
    showPasted(); // a name pasted while the sessions were read
    quickPick.placeholder = 'Pick a session to open in the Session Viewer (the button opens it as text)';
  };

  /** A pasted file name or path shows its session, which Enter opens. */
  const showPasted = () => {
    const current = quickPick.items;
    const items = showingPasted(current, quickPick.value);
    if (items !== current) quickPick.items = items;
    const named = items.find((item) => item.alwaysShow && item.session);
    // VS Code makes the first item shown active at each change of the value: "All sessions...",
    // shown always too (a path pasted over the name of the same session changes no item)
    if (named) quickPick.activeItems = [named];
  };

  return new Promise((resolve) => {
    quickPick.onDidChangeValue(showPasted);
    quickPick.onDidAccept(() => {
      const item = quickPick.selectedItems[0] ?? quickPick.activeItems[0];
      if (!item) return;
      if (item.all) {
        void load(true);
        return;
      }
      if (item.session) picked = { uri: vscode.Uri.file(item.session.path), asText: false };
      quickPick.hide();
    });
    quickPick.onDidTriggerItemButton((event) => {
      if (!event.item.session) return;
      picked = { uri: vscode.Uri.file(event.item.session.path), asText: true };
      quickPick.hide();
    });
    quickPick.onDidHide(() => {
      generation++;
      settle(true);
      quickPick.dispose();
      resolve(followUp ? followUp() : picked);
    });
    quickPick.show();
    void load(folder === undefined);
  });
}

/** The folder has no sessions: say so, and offer every folder's. */
async function offerAllSessions(host: PickerHost, folder: string): Promise<PickedSession | undefined> {
  const choice = await vscode.window.showInformationMessage(`Pi Session: pi has no sessions of ${folder} yet.`, ALL_SESSIONS_LABEL);
  return choice === ALL_SESSIONS_LABEL ? pickSession(host, undefined) : undefined;
}
