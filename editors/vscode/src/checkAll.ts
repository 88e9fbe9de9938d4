// "Check All Sessions": run `<cli> check --json` and put its report into a diagnostic collection.
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { parseCheckOutput, type FileReport } from './checkReport';

/** What the check command reported: a report per file, and what it said on stderr (the folder it
 * looked in when it found no session file). */
export interface CheckResult {
  reports: FileReport[];
  stderr: string;
}

/** Run the check command; exit status 1 ("problems found") still carries the report on stdout. */
export function runCheck(command: string, args: string[], log: (text: string) => void): Promise<CheckResult> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { maxBuffer: 256 * 1024 * 1024, timeout: 600_000 }, (error, stdout, stderr) => {
      if (stderr) log(String(stderr));
      if (error && !stdout) reject(new Error(error.message));
      else resolve({ reports: parseCheckOutput(String(stdout)), stderr: String(stderr) });
    });
  });
}

/** The CLI's own words on why it checked nothing (its last stderr line, without its `pi-session check:` prefix). */
export function nothingCheckedReason(stderr: string): string | undefined {
  const last = stderr.trim().split('\n').pop()?.trim();
  return last ? last.replace(/^pi-session check:\s*/, '') : undefined;
}

/**
 * Replace the collection's content with the reports. Documents in `skip` (open session files) are
 * left out: the language server reports those live. Returns the number of problems set.
 */
export function applyReports(collection: vscode.DiagnosticCollection, reports: FileReport[], skip: Set<string>): number {
  collection.clear();
  let problems = 0;
  for (const report of reports) {
    const uri = report.uri ? vscode.Uri.parse(report.uri) : vscode.Uri.file(report.path as string);
    if (skip.has(uri.toString())) continue;
    const diagnostics = report.diagnostics.map((d) => {
      const range = new vscode.Range(d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character);
      // LSP severities are 1-4, VS Code's enum 0-3
      const diagnostic = new vscode.Diagnostic(range, d.message, (d.severity - 1) as vscode.DiagnosticSeverity);
      diagnostic.source = d.source ?? 'pi-session check';
      if (d.code !== undefined) diagnostic.code = d.code;
      return diagnostic;
    });
    problems += diagnostics.length;
    if (diagnostics.length) collection.set(uri, diagnostics);
  }
  return problems;
}
