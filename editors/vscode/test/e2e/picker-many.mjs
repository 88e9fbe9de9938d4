// Open Session... with 5,000 sessions of the workspace folder, in real VS Code (code-server): the
// picker shows at once, busy, and fills when the one pi/list reply comes; closed while busy, it
// cancels the listing on the server ($/cancelRequest in the client's trace, answered as cancelled).
// Prints the times it measured (shown, not checked: a loaded machine is slower, not wrong), one line
// per check and "N passed, M failed". Run by scripts/e2e.sh
// in place of the main test:
//   E2E_SCRIPT=editors/vscode/test/e2e/picker-many.mjs bash editors/vscode/scripts/e2e.sh
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { runCommand, until } from './workbench.mjs';

const FOLDER = process.env.WS_FOLDER;
const SESSIONS = Number(process.env.PICKER_SESSIONS || 5000);

const checks = [];
function check(name, ok, detail = '') {
  checks.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail ? ` (${detail})` : ''}`);
}

// the sessions, in the folder where e2e.sh put the two of the main test (pi's name for the folder)
const agentSessions = path.join(path.dirname(FOLDER), 'agent', 'sessions');
const dir = path.join(agentSessions, fs.readdirSync(agentSessions).find((name) => name.endsWith('-ws--')));
const iso = (ms) => new Date(ms).toISOString();
const base = Date.parse('2026-01-06T09:00:00.000Z');
for (let i = 0; i < SESSIONS; i++) {
  const t = base + i * 60_000;
  const id = `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`;
  const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  const lines = [
    { type: 'session', version: 3, id, timestamp: iso(t), cwd: FOLDER },
    { type: 'message', id: 'a0000001', parentId: null, timestamp: iso(t + 1000),
      message: { role: 'user', content: `Question number ${i} about the parser and the loader`, timestamp: t + 1000 } },
    { type: 'message', id: 'a0000002', parentId: 'a0000001', timestamp: iso(t + 2000),
      message: { role: 'assistant', content: [{ type: 'text', text: `Answer ${i}` }], api: 'anthropic-messages', provider: 'anthropic',
        model: 'm', stopReason: 'stop', timestamp: t + 2000, usage } },
  ];
  fs.writeFileSync(path.join(dir, `${iso(t).replace(/[:.]/g, '-')}_${id}.jsonl`), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
}
console.log(`${SESSIONS} sessions in ${dir}`);

/** The "Starting"/pi/list/$/cancelRequest lines of the client's trace in the "Pi Session" channel. */
function traceLines() {
  const files = [];
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('Pi Session.log')) files.push(full);
    }
  };
  walk(process.env.VSCODE_LOGS);
  return files.flatMap((f) => fs.readFileSync(f, 'utf8').split('\n')).filter((l) => /'pi\/list|\$\/cancelRequest/.test(l));
}

const ctx = await chromium.launchPersistentContext(process.env.CHROME_PROFILE, {
  executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1600, height: 1000 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'], timeout: 60_000,
});
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  await page.goto(`${process.env.CS_URL}/?folder=${encodeURIComponent(FOLDER)}`, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  /** Enter on "Open Session..." in the command palette; answers when Enter was pressed. */
  const openSession = () => runCommand(page, 'Pi Session: Open Session...');
  const title = page.locator('.quick-input-widget .quick-input-title', { hasText: 'Pi sessions of' });
  // busy: its placeholder says so (VS Code draws the busy bar only later)
  const reading = async () => (await page.locator('.quick-input-widget input').first().getAttribute('placeholder')) === 'Reading the sessions...';
  const newest = page.locator('.quick-input-widget .monaco-list-row', { hasText: `Question number ${SESSIONS - 1} about` });
  const closed = () => page.locator('.quick-input-widget').first().isHidden();
  const runs = [];
  for (let run = 0; run < 4; run++) {
    const pressed = await openSession();
    await title.first().waitFor({ timeout: 60_000 });
    const shown = Date.now() - pressed;
    const wasBusy = await reading();
    await newest.first().waitFor({ timeout: 120_000 });
    runs.push({ shown, wasBusy, filled: Date.now() - pressed });
    await page.keyboard.press('Escape');
    await until(closed, 15_000);
  }
  const times = runs.map((r, i) => `${i === 0 ? 'activating: ' : ''}shown ${r.shown} ms${r.wasBusy ? ' busy' : ''}, filled ${r.filled} ms`).join('; ');
  const later = runs.slice(1);
  // at once: before the listing, the picker is there and busy (the times are for the reader)
  check(`the picker shows at once, busy, and fills with the ${SESSIONS} sessions`,
    later.every((r) => r.wasBusy && r.filled >= r.shown), times);

  const before = traceLines().length;
  const pressed = await openSession();
  await title.first().waitFor({ timeout: 60_000 });
  await page.keyboard.press('Escape');
  const closedAfter = Date.now() - pressed;
  let lines = [];
  await until(() => (lines = traceLines().slice(before)).some((l) => /Received response 'pi\/list/.test(l)), 60_000, 500);
  check('a picker closed while busy cancels its listing on the server',
    lines.some((l) => l.includes("Sending notification '$/cancelRequest'")) && lines.some((l) => /Received response 'pi\/list.*-32800/.test(l)),
    `closed ${closedAfter} ms after the command; ${lines.join(' | ').slice(0, 400)}`);
} catch (e) {
  check('the test ran to the end', false, String(e).slice(0, 300));
} finally {
  await ctx.close();
}
const passed = checks.filter(Boolean).length;
console.log(`${passed} passed, ${checks.length - passed} failed`);
process.exit(passed === checks.length ? 0 : 1);
