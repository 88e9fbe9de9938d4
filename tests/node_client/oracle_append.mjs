// Appends to a session file with pi's own SessionManager (the reference, 0.86.1), as pi does while
// a sidecar holds the file. Usage: node oracle_append.mjs ORACLE_DIR FILE TEXT...
// Prints the new entry ids as a JSON array.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [oracleDir, file, ...texts] = process.argv.slice(2);
const dist = path.resolve(oracleDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const { SessionManager } = await import(pathToFileURL(path.join(dist, "core/session-manager.js")).href);
const sm = SessionManager.open(file);
const ids = texts.map((text) => sm.appendMessage({ role: "user", content: text, timestamp: Date.now() }));
process.stdout.write(JSON.stringify(ids));
