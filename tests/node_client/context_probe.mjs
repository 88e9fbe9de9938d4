// What pi's own buildSessionContext() gives for session files, at the leaf and at every entry (the
// reference for `pi-session context FILE --json [--leaf ID]`). Usage:
//   node context_probe.mjs ORACLE_DIR VERSION FILE... > result.json
// ORACLE_DIR holds node_modules/@earendil-works/pi-coding-agent (0.86.1) and node_modules/pi-1.6.0
// (1.6.0); VERSION is 0.86.1 or 1.6.0. Prints {"<file name>": {"leaf": TEXT, "at": {"<id>": TEXT}}}
// where TEXT is JSON.stringify(context, null, 2). The files are only read (branch() moves the leaf
// in memory).
import path from "node:path";
import { pathToFileURL } from "node:url";

const [oracleDir, version, ...files] = process.argv.slice(2);
const packageDir = { "0.86.1": "@earendil-works/pi-coding-agent", "1.6.0": "pi-1.6.0" }[version];
if (!packageDir) throw new Error(`unknown pi version ${version}`);
const module = path.resolve(oracleDir, "node_modules", packageDir, "dist/core/session-manager.js");
const { SessionManager } = await import(pathToFileURL(module).href);

const show = (context) => JSON.stringify(context, null, 2);
const out = {};
for (const file of files) {
  const sm = SessionManager.open(file);
  const result = { leaf: show(sm.buildSessionContext()), at: {} };
  for (const entry of sm.getEntries()) {
    sm.branch(entry.id);
    result.at[entry.id] = show(sm.buildSessionContext());
  }
  out[path.basename(file)] = result;
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
