// pi itself (the reference SessionManager, 0.86.1) appending to a session file, as pi does while the
// sidecar holds the file. Usage: node pi_appender.mjs SESSION_MANAGER_JS FILE COUNT PAUSE_MS [SIZE]
// Prints "ready" once the file is open, then the id of every appendMessage() that returned. SIZE:
// characters of padding in each message (big lines take many pages, so a write() is seen halfway).
import { pathToFileURL } from "node:url";

const [modulePath, file, countText, pauseText, sizeText] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(modulePath).href);
const count = Number(countText);
const pause = Number(pauseText);
const padding = " ".repeat(Number(sizeText || 0));
const sm = SessionManager.open(file);
process.stdout.write("ready\n");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let n = 0; n < count; n++) {
  const id = sm.appendMessage({ role: "user", content: `from pi ${n}${padding}`, timestamp: Date.now() });
  process.stdout.write(`${id}\n`);
  if (pause > 0) await sleep(pause);
}
