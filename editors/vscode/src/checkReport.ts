// Parse the output of `pi-session check --json` into per-file diagnostics. Pure: unit-tested.
// The CLI writes {"files": [{"path", "summary", "diagnostics": [{"line", "column", "endColumn",
// "severity": "error"|..., "code", "message", "range"}]}], "totals": {...}}: 1-based lines and
// columns as in its text output (pi's lines), and the LSP `range` the language server would give
// (0-based, UTF-16, a lone CR ending a line as it does in VS Code), which is the one used. Also
// accepted: diagnostics without a `range` (an older CLI), a top-level array of file reports, or
// one report per line (JSON Lines).

export interface PlainPosition {
  line: number;
  character: number;
}
export interface PlainDiagnostic {
  range: { start: PlainPosition; end: PlainPosition };
  severity: 1 | 2 | 3 | 4; // LSP DiagnosticSeverity
  message: string;
  code?: string | number;
  source?: string;
}
export interface FileReport {
  path?: string;
  uri?: string;
  diagnostics: PlainDiagnostic[];
}

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);

const SEVERITY_NAMES: Record<string, PlainDiagnostic['severity']> = {
  error: 1,
  warning: 2,
  warn: 2,
  information: 3,
  info: 3,
  hint: 4,
};

function severityOf(v: unknown): PlainDiagnostic['severity'] {
  if (typeof v === 'number' && v >= 1 && v <= 4) return v as PlainDiagnostic['severity'];
  if (typeof v === 'string' && SEVERITY_NAMES[v.toLowerCase()]) return SEVERITY_NAMES[v.toLowerCase()];
  return 2;
}

function positionOf(v: unknown): PlainPosition {
  return isRecord(v) ? { line: num(v.line, 0), character: num(v.character, 0) } : { line: 0, character: 0 };
}

function diagnosticOf(v: unknown): PlainDiagnostic | undefined {
  if (!isRecord(v) || typeof v.message !== 'string') return undefined;
  let range: PlainDiagnostic['range'];
  if (isRecord(v.range)) {
    range = { start: positionOf(v.range.start), end: positionOf(v.range.end) };
  } else {
    // the CLI's 1-based line and columns; no column = the whole line
    const line = Math.max(0, num(v.line, 1) - 1);
    const endLine = Math.max(line, num(v.endLine, line + 1) - 1);
    const start = typeof v.column === 'number' ? Math.max(0, v.column - 1) : 0;
    const end = typeof v.endColumn === 'number' ? Math.max(0, v.endColumn - 1) : typeof v.column === 'number' ? start : Number.MAX_SAFE_INTEGER;
    range = { start: { line, character: start }, end: { line: endLine, character: end } };
  }
  const diagnostic: PlainDiagnostic = { range, severity: severityOf(v.severity), message: v.message };
  if (typeof v.code === 'string' || typeof v.code === 'number') diagnostic.code = v.code;
  if (typeof v.source === 'string') diagnostic.source = v.source;
  return diagnostic;
}

function reportOf(v: unknown): FileReport | undefined {
  if (!isRecord(v)) return undefined;
  const path = typeof v.path === 'string' ? v.path : typeof v.file === 'string' ? v.file : undefined;
  const uri = typeof v.uri === 'string' ? v.uri : undefined;
  if (!path && !uri) return undefined;
  const list = Array.isArray(v.diagnostics) ? v.diagnostics : Array.isArray(v.problems) ? v.problems : [];
  const diagnostics = list.map(diagnosticOf).filter((d): d is PlainDiagnostic => d !== undefined);
  return { path, uri, diagnostics };
}

export function parseCheckOutput(stdout: string): FileReport[] {
  const text = stdout.trim();
  if (!text) return [];
  let values: unknown[];
  try {
    const whole: unknown = JSON.parse(text);
    if (Array.isArray(whole)) values = whole;
    else if (isRecord(whole)) {
      const list = whole.files ?? whole.results ?? whole.reports;
      values = Array.isArray(list) ? list : [whole];
    } else values = [];
  } catch {
    values = text
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => {
        try {
          return JSON.parse(line) as unknown;
        } catch {
          return undefined;
        }
      });
  }
  return values.map(reportOf).filter((r): r is FileReport => r !== undefined);
}
