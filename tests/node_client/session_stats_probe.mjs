// What pi's own AgentSession.getSessionStats() counts for session files (the reference for
// pi_session_server/server/session_stats.py's tokens and cost). Usage:
//   node session_stats_probe.mjs ORACLE_DIR PACKAGE FILE... > result.json
// PACKAGE: the package under ORACLE_DIR/node_modules (@earendil-works/pi-coding-agent: 0.86.1;
// pi-1.6.0: 1.6.0). Prints {"<file>": {"tokens": {...}, "cost": ...}, ...}. The method is called on
// the session manager alone: the rest of an AgentSession (a model, an agent) is not what it counts.
// pi's open may write a file (it migrates an old one): give it copies. A file pi's count throws on (a message without usage) gives {"error": "..."}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [oracleDir, pkg, ...files] = process.argv.slice(2);
const dist = path.resolve(oracleDir, "node_modules", pkg, "dist");
const load = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const { SessionManager } = await load("core/session-manager.js");
const { AgentSession } = await load("core/agent-session.js");

const out = {};
for (const file of files) {
  const sessionManager = SessionManager.open(file);
  const self = { sessionManager, sessionFile: file, sessionId: "", getContextUsage: () => undefined };
  try {
    const stats = AgentSession.prototype.getSessionStats.call(self);
    out[file] = { tokens: stats.tokens, cost: stats.cost };
  } catch (error) {
    // (an assistant message without usage or cost: pi's own count throws)
    out[file] = { error: String(error) };
  }
}
process.stdout.write(JSON.stringify(out));
