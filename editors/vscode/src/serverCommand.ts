// Finding the pi-session command line: the settings, then the Python extension's interpreter, then
// `pi-session` on PATH. Pure apart from the probes passed in, so the order is unit-tested.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The pi-session CLI without a subcommand; `serve` or `check --json` is appended to run it. */
export interface CliCommand {
  command: string;
  args: string[];
  /** Where it came from, for the output channel and error messages. */
  source: string;
}

export interface ResolveInputs {
  commandSetting: readonly string[];
  pythonPathSetting: string;
  /** The Python extension's active interpreter, or undefined when that extension is absent. */
  pythonExtensionInterpreter: () => Promise<string | undefined>;
  /** Whether `python -c "import pi_session_server"` works; `detail` says why not, `cannotRun` that
   * `python` itself could not be started (no such file, not executable). */
  canImport: (python: string) => Promise<ImportProbe>;
  findOnPath: (name: string) => string | undefined;
}

export interface ImportProbe {
  ok: boolean;
  detail?: string;
  cannotRun?: boolean;
}

export type Resolution =
  | { ok: true; cli: CliCommand; notes: string[] }
  | { ok: false; message: string; notes: string[] };

export const MODULE = 'pi_session_server';
export const EXECUTABLE = 'pi-session';

/** How to install the server (it is not on a package index): from a clone, or the wheel built from one. */
export const INSTALL_COMMAND = 'pip install /path/to/pi-session-server';
const INSTALL_NOTE = '(the path of a clone of the repository; or `pip install -e .` inside the clone, or `pip install` the wheel built from it)';

export const NOT_FOUND_MESSAGE =
  `Pi Session: the pi-session language server was not found. Install it with \`${INSTALL_COMMAND}\` ${INSTALL_NOTE}, ` +
  'which puts `pi-session` on PATH; or set "piSession.server.pythonPath" to a Python that has it, ' +
  'or "piSession.server.command" to the full command.';

export function pythonCli(python: string, source: string): CliCommand {
  return { command: python, args: ['-m', MODULE], source };
}

export async function resolveCli(inputs: ResolveInputs): Promise<Resolution> {
  const notes: string[] = [];
  const command = inputs.commandSetting.filter((part) => part.length > 0);
  if (command.length > 0) {
    return {
      ok: true,
      cli: { command: command[0], args: command.slice(1), source: 'setting piSession.server.command' },
      notes,
    };
  }

  const configuredPython = inputs.pythonPathSetting.trim();
  if (configuredPython) {
    const probe = await inputs.canImport(configuredPython);
    if (probe.ok) return { ok: true, cli: pythonCli(configuredPython, 'setting piSession.server.pythonPath'), notes };
    // An explicit setting that does not work is an error, not a reason to silently use something else.
    const setting = `Pi Session: "piSession.server.pythonPath" is ${configuredPython}`;
    const message = probe.cannotRun
      ? `${setting}, which cannot be run (${probe.detail ?? 'no such program'}). Set it to a Python that has ` +
        'pi-session-server installed, or clear it to use `pi-session` on PATH.'
      : `${setting}, but it cannot run the server (${probe.detail ?? 'import failed'}). Fix: run ` +
        `\`${configuredPython} -m ${INSTALL_COMMAND}\` ${INSTALL_NOTE}, or change the setting.`;
    return { ok: false, message, notes };
  }

  let interpreter: string | undefined;
  try {
    interpreter = await inputs.pythonExtensionInterpreter();
  } catch (error) {
    notes.push(`Python extension: could not get the active interpreter (${String(error)})`);
  }
  if (interpreter) {
    const probe = await inputs.canImport(interpreter);
    if (probe.ok) return { ok: true, cli: pythonCli(interpreter, "the Python extension's interpreter"), notes };
    notes.push(`Python extension's interpreter ${interpreter} has no ${MODULE} (${probe.detail ?? 'import failed'})`);
  }

  const onPath = inputs.findOnPath(EXECUTABLE);
  if (onPath) return { ok: true, cli: { command: onPath, args: [], source: 'PATH' }, notes };
  notes.push(`\`${EXECUTABLE}\` is not on PATH`);
  return { ok: false, message: NOT_FOUND_MESSAGE, notes };
}

export function withSubcommand(cli: CliCommand, ...subcommand: string[]): { command: string; args: string[] } {
  return { command: cli.command, args: [...cli.args, ...subcommand] };
}

export function describe(cli: CliCommand): string {
  return [cli.command, ...cli.args].map((p) => (/\s/.test(p) ? JSON.stringify(p) : p)).join(' ');
}

// ---- the real probes ----------------------------------------------------------------------------

export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const suffixes = process.platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];
  for (const dir of dirs) {
    for (const suffix of suffixes) {
      const candidate = path.join(dir, name + suffix);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** What a failed start of a program means, in words. */
const SPAWN_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'not an executable file',
  ENOTDIR: 'a part of the path is not a folder',
};

export function canImport(python: string): Promise<ImportProbe> {
  return new Promise((resolve) => {
    execFile(python, ['-c', `import ${MODULE}`], { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve({ ok: true });
      // a string code is the spawn's own failure (the program is not there, or not executable); a
      // number is the exit status of a Python that ran
      const spawnCode = (error as NodeJS.ErrnoException).code;
      if (typeof spawnCode === 'string') return resolve({ ok: false, cannotRun: true, detail: SPAWN_ERRORS[spawnCode] ?? error.message });
      const lastLine = String(stderr).trim().split('\n').pop();
      resolve({ ok: false, detail: lastLine || error.message });
    });
  });
}
