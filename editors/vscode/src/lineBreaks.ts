// pi's lines against VS Code's. pi ends a line at "\n" only; VS Code (and the LSP) also at a lone
// "\r" (one not followed by "\n"), and loads such a file with that "\r" made a line break: its
// lines after one are numbered one more, and the document it holds cannot tell them apart. The
// pi/* methods take and give pi's lines; pi/getLineBreaks names the lines holding lone "\r", from
// which these convert. Pure: unit-tested. (A file pi wrote has none: both numberings agree.)

import type { LoneCarriageReturnLine } from './protocol';

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** The lines of a pi/getLineBreaks reply, in file order; none from a reply of another shape (an
 * older server answers the method with an error, which the caller reads as none too). */
export function lineBreaksOf(reply: unknown): LoneCarriageReturnLine[] {
  const list = isRecord(reply) && Array.isArray(reply.loneCarriageReturns) ? reply.loneCarriageReturns : [];
  const lines = list.filter((v): v is LoneCarriageReturnLine => isRecord(v) && isCount(v.line) && isCount(v.count) && v.count > 0);
  return lines.sort((a, b) => a.line - b.line);
}

/** VS Code's line where pi's line `piLine` starts. */
export function editorLineOf(piLine: number, breaks: readonly LoneCarriageReturnLine[]): number {
  let line = piLine;
  for (const b of breaks) {
    if (b.line >= piLine) break;
    line += b.count;
  }
  return line;
}

/** pi's line that VS Code's line `editorLine` is part of. */
export function piLineOf(editorLine: number, breaks: readonly LoneCarriageReturnLine[]): number {
  let extra = 0; // the editor's lines above, in pi lines before the one looked at
  for (const b of breaks) {
    const first = b.line + extra; // the editor's first line of pi's line b.line
    if (editorLine < first) break;
    if (editorLine <= first + b.count) return b.line;
    extra += b.count;
  }
  return editorLine - extra;
}

/**
 * How a text shown in VS Code names pi's line `piLine`: "line N" as VS Code numbers it (1-based,
 * the number its editor and the Problems panel show), `about` in parentheses, and pi's own number
 * beside it where the two differ: pi and `pi-session check` or `repair` name the file's lines so.
 */
export function lineName(piLine: number, breaks: readonly LoneCarriageReturnLine[], about?: string): string {
  const shown = editorLineOf(piLine, breaks);
  const notes = [about, shown === piLine ? undefined : `pi's line ${piLine + 1}`].filter((note) => note);
  return `line ${shown + 1}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`;
}

/**
 * pi's lines whose lone CRs a save splits into lines pi reads otherwise. VS Code holds each lone CR
 * as a line break and writes a line break in its place, so pi then reads each piece as a line of
 * its own. A piece of spaces and tabs only was white space around the JSON value and becomes a
 * blank line pi skips: a line with at most one piece holding more (a CR at its start or its end, or
 * at the end of the file) reads the same. `editorLine(n)` is the text of VS Code's line n, undefined
 * past the end.
 */
export function linesASaveSplits(
  breaks: readonly LoneCarriageReturnLine[],
  editorLine: (line: number) => string | undefined,
): LoneCarriageReturnLine[] {
  const split: LoneCarriageReturnLine[] = [];
  let extra = 0; // the editor's lines above, in pi lines before the one looked at
  for (const b of breaks) {
    const first = b.line + extra;
    let pieces = 0;
    for (let n = first; n <= first + b.count; n++) {
      const text = editorLine(n);
      if (text !== undefined && !/^[ \t]*$/.test(text)) pieces++;
    }
    if (pieces > 1) split.push(b);
    extra += b.count;
  }
  return split;
}
