// The server's state beside the language name in the status bar (VS Code's language status, shown
// for Pi Session documents): a server that failed or stopped is seen there, not only in a
// notification the user may have closed.
import * as vscode from 'vscode';
import { LANGUAGE_ID } from './detect';

export class ServerStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem('piSession.server', { language: LANGUAGE_ID });

  constructor() {
    this.item.name = 'Pi Session server';
    this.stopped();
  }

  starting(): void {
    this.show('pi-session: starting', 'the language server is starting', vscode.LanguageStatusSeverity.Information, true);
  }

  /** `detail`: what runs it and the pi release it follows. */
  running(detail: string): void {
    this.show('pi-session', detail, vscode.LanguageStatusSeverity.Information);
    this.item.command = { title: 'Show Output', command: 'piSession.showOutput' };
  }

  /** The server is not running: `why`, and Restart Server at hand. */
  failed(why: string): void {
    this.show('pi-session: not running', why, vscode.LanguageStatusSeverity.Error);
    this.item.command = { title: 'Restart Server', command: 'piSession.restartServer' };
  }

  stopped(): void {
    this.show('pi-session: not started', 'the language server starts with the first session opened', vscode.LanguageStatusSeverity.Information);
  }

  private show(text: string, detail: string, severity: vscode.LanguageStatusSeverity, busy = false): void {
    this.item.text = text;
    this.item.detail = detail;
    this.item.severity = severity;
    this.item.busy = busy;
    this.item.command = undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
