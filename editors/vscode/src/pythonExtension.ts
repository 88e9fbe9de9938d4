// The active interpreter of the Python extension (ms-python.python), when it is installed.
import * as vscode from 'vscode';

// (the extension's API is not typed here: `any` below)
export async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) return undefined;
  const api = (extension.isActive ? extension.exports : await extension.activate()) as Record<string, any> | undefined;
  const resource = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
  // the newer `environments` API first
  const environments = api?.environments;
  if (environments?.getActiveEnvironmentPath) {
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = active ? await environments.resolveEnvironment?.(active) : undefined;
    const executable: string | undefined = resolved?.executable?.uri?.fsPath ?? active?.path;
    if (executable) return executable;
  }
  // then the older `settings.getExecutionDetails`
  const details = api?.settings?.getExecutionDetails?.(resource);
  const command: string[] | undefined = details?.execCommand;
  return command && command.length > 0 ? command[0] : undefined;
}
