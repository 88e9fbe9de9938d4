// pi itself (the reference SessionManager) doing what it is told on stdin, one command a line, so a
// test can time pi's writes against ours. Usage: node pi_on_cue.mjs SESSION_MANAGER_JS FILE
//   open      SessionManager.open(FILE) (a v1/v2 file is migrated and rewritten in place); prints "opened"
//   append N  N appendMessage() calls; prints the id of each as it returns
//   quit      exit
// Prints "ready" once it reads commands.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [modulePath, file] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(modulePath).href);
let sm = null;
let n = 0;
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const [command, countText] = line.trim().split(/\s+/);
  if (command === "open") {
    sm = SessionManager.open(file);
    process.stdout.write("opened\n");
  } else if (command === "append") {
    if (sm === null) sm = SessionManager.open(file);
    for (let k = 0; k < Number(countText || 1); k++) {
      n += 1;
      const id = sm.appendMessage({ role: "user", content: `from pi ${n}`, timestamp: Date.now() });
      process.stdout.write(`${id}\n`);
    }
  } else if (command === "quit") {
    break;
  }
}
process.exit(0); // stdin may still be open: do not wait for its end
