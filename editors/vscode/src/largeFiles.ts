// Session files VS Code does not hand to extensions (over 50 MB: no document, no language server,
// no commands) open in the session viewer instead: a text tab that opens on such a file is replaced
// by the viewer. "Open as Text" from the viewer is remembered, so the file then stays text.
import * as fs from 'node:fs';
import { looksLikeSession } from './detect';

/** VS Code does not sync text documents over this size to extensions. */
export const EXTENSION_HOST_LIMIT_MB = 50;
const HEAD_BYTES = 256 * 1024;

export function isSessionPath(fsPath: string): boolean {
  return /[\\/]\.pi[\\/]agent[\\/]sessions[\\/].*\.jsonl$/i.test(fsPath);
}

/** The first lines of a file (what fits in its first 256 KB; a longer first line is cut). */
export async function headLines(fsPath: string): Promise<string[]> {
  const handle = await fs.promises.open(fsPath, 'r');
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    const lines = buffer.subarray(0, bytesRead).toString('utf8').split('\n');
    if (bytesRead === HEAD_BYTES) lines.pop(); // the last one may be cut
    return lines;
  } finally {
    await handle.close();
  }
}

/** Whether a `.jsonl` file of this size should open in the viewer rather than as text. */
export async function opensInViewer(fsPath: string, limitMb: number): Promise<boolean> {
  if (!/\.jsonl$/i.test(fsPath)) return false;
  let size: number;
  try {
    size = (await fs.promises.stat(fsPath)).size;
  } catch {
    return false;
  }
  if (size <= limitMb * 1024 * 1024) return false;
  if (isSessionPath(fsPath)) return true;
  try {
    return looksLikeSession(await headLines(fsPath));
  } catch {
    return false;
  }
}
