// The language client as this extension wants it to speak to the user: vscode-languageclient's own
// notifications and log levels, adjusted where the extension says it better or the client says it wrong.
import { LanguageClient } from 'vscode-languageclient/node';

/** What vscode-languageclient logs when the server process ends with this exit code. */
const NORMAL_EXIT = /^Server process exited with code 0\.?$/;

export class PiLanguageClient extends LanguageClient {
  /** start() runs: a failure is told once, by the extension (with what to do), not by the client too. */
  private inStart = false;

  override async start(): Promise<void> {
    this.inStart = true;
    try {
      await super.start();
    } finally {
      this.inStart = false;
    }
  }

  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    // a stop asked for (Restart Server, the window closing) ends the server with code 0: not an error
    if (NORMAL_EXIT.test(message)) {
      super.info(message, data, false);
      return;
    }
    // (the client's "couldn't create connection to server" comes with the rejection of start())
    super.error(message, data, this.inStart ? false : showNotification);
  }
}
