// Drive code-server (real VS Code) with Debian chromium through playwright-core and check what a
// user of the Pi Session extension sees: the language, the diagnostics in the Problems panel, a hover,
// the session tree view, a click that reveals the entry, the context document, and that an ordinary
// .jsonl stays JSON Lines. Run by scripts/e2e.sh. Prints one line per check and "N passed, M failed".
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const URL_BASE = process.env.CS_URL || 'http://127.0.0.1:18080';
const FOLDER = process.env.WS_FOLDER;
const OUT = process.env.OUT_DIR || os.tmpdir();
const PROFILE = process.env.CHROME_PROFILE || fs.mkdtempSync(path.join(os.tmpdir(), 'chrome-profile-'));
const SESSION = 'broken-session.jsonl';
const ORDINARY = 'ordinary.jsonl';
// What the server reports for the cut-off line 8 of the fixture (tests/editors/fixtures).
const DIAGNOSTIC = process.env.EXPECT_DIAGNOSTIC || 'invalid JSON';

const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const checks = [];
function check(name, ok, detail = '') {
  checks.push({ name, ok });
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail ? ` (${detail})` : ''}`);
  return ok;
}
const visible = (locator, timeout) => locator.first().waitFor({ timeout }).then(() => true, () => false);
const squash = (text) => text.replace(/\s+/g, ' ').trim();

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
}

async function openFromExplorer(page, file) {
  const item = page.locator(`.explorer-folders-view .monaco-list-row[aria-label^="${file}"]`).first();
  await item.waitFor({ timeout: 60_000 });
  await item.click();
  await page.locator(`.tab[aria-label*="${file}"]`).first().waitFor({ timeout: 30_000 });
}

/** Opens a file of the workspace by name with Quick Open (also files the Explorer does not show). */
async function openByName(page, file) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 15_000 });
  await input.fill(file);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: file }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press('Enter');
  await page.locator(`.tab[aria-label*="${file}"]`).first().waitFor({ timeout: 30_000 });
}

/** The editor's visible lines, top to bottom, as text (the DOM order of view-lines is not the line order). */
async function editorLines(page, editorSelector) {
  const lines = page.locator(`${editorSelector} .view-lines .view-line`);
  const items = [];
  for (let i = 0; i < (await lines.count()); i++) {
    const line = lines.nth(i);
    const box = await line.boundingBox();
    if (box) items.push({ y: box.y, line });
  }
  items.sort((a, b) => a.y - b.y);
  return items;
}

let failed = false;
const ctx = await chromium.launchPersistentContext(PROFILE, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1600, height: 1000 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  timeout: 60_000,
});
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on('pageerror', (e) => console.log('  [pageerror]', String(e).slice(0, 200)));
  await page.goto(`${URL_BASE}/?folder=${encodeURIComponent(FOLDER)}`, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  log('workbench visible');

  // 1. an ordinary .jsonl stays JSON Lines (opened first: it must not activate anything wrongly)
  await openFromExplorer(page, ORDINARY);
  const mode = page.locator('#status\\.editor\\.mode');
  const jsonLines = await visible(mode.filter({ hasText: /JSON Lines/ }), 30_000);
  check('an ordinary .jsonl stays JSON Lines', jsonLines, squash(await mode.first().innerText().catch(() => '?')));

  // 1b. any .jsonl under .pi/agent/sessions is a Pi Session by its path (no header needed)
  await openByName(page, 'headerless-session.jsonl');
  const byPath = await visible(mode.filter({ hasText: 'Pi Session' }), 30_000);
  check('a .jsonl under .pi/agent/sessions opens as "Pi Session"', byPath, squash(await mode.first().innerText().catch(() => '?')));

  // 2. the session file opens as Pi Session
  await openFromExplorer(page, SESSION);
  const language = await visible(mode.filter({ hasText: 'Pi Session' }), 30_000);
  check('the session file opens as "Pi Session"', language, squash(await mode.first().innerText().catch(() => '?')));

  // 3. diagnostics: a squiggle in the editor and the message in the Problems panel
  const squiggle = await visible(page.locator('.monaco-editor .squiggly-error, .monaco-editor .squiggly-warning'), 60_000);
  check('a diagnostic squiggle in the editor', squiggle);
  await page.keyboard.press('Control+Shift+M');
  const problemRow = page.locator('.markers-panel .monaco-list-row', { hasText: DIAGNOSTIC });
  const problems = await visible(problemRow, 30_000);
  await page.waitForTimeout(1000); // a doubled report (push and pull) would show up by now
  const problemsText = problems ? squash(await problemRow.first().innerText()) : '';
  const problemCount = await problemRow.count();
  check('the Problems panel lists the broken line, once', problems && /\[Ln 8/.test(problemsText) && problemCount === 1,
    `${problemCount} row(s): ${problemsText.slice(0, 200)}`);

  // room for the tree: collapse the folder pane (the files are open) and widen the side bar
  const folderHeader = page.locator('.pane-header', { hasText: /^\s*ws\s*$/i }).first();
  if ((await folderHeader.count()) > 0 && (await folderHeader.getAttribute('aria-expanded')) === 'true') await folderHeader.click();
  const sideBar = await page.locator('.part.sidebar').first().boundingBox().catch(() => null);
  if (sideBar) {
    // the side bar's sash sits on its right edge
    const x = sideBar.x + sideBar.width;
    const y = sideBar.y + sideBar.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x + 200, y, { steps: 10 });
    await page.mouse.up();
  }

  // 4. the session tree view (Explorer): entries, label, branch point, leaf
  const treePane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Pi Session Tree' }) }).first();
  const treeShown = await visible(treePane, 30_000);
  if (treeShown && (await treePane.locator('.pane-header[aria-expanded="false"]').count()) > 0) {
    await treePane.locator('.pane-header').click();
  }
  const expectedRows = [
    'user: Refactor the parser please',
    'assistant: Sure. Which module first?',
    'user: Actually, do the loader instead',
    'assistant: Loader refactored and tested',
    '[scanner-try] user: Start with the scanner',
    'assistant: Scanner split into two functions',
  ];
  let rowsText = [];
  const treeOk = treeShown && (await visible(treePane.locator('.monaco-list-row', { hasText: 'Loader refactored' }), 30_000));
  if (treeOk) {
    const rows = treePane.locator('.monaco-list-row');
    for (let i = 0; i < (await rows.count()); i++) rowsText.push(squash(await rows.nth(i).innerText()));
  }
  const allRows = expectedRows.every((text) => rowsText.some((row) => row.includes(text)));
  check('the tree view shows the entries, the label and the branches', allRows, rowsText.join(' | ').slice(0, 400));
  const leafRow = rowsText.find((row) => row.includes('Loader refactored and tested')) || '';
  check('the tree view marks the leaf', leafRow.includes('leaf'), leafRow);
  const branchRow = rowsText.find((row) => row.includes('Which module first')) || '';
  check('the tree view marks the branch point', branchRow.includes('2 branches'), branchRow);
  // pi skips the cut-off line 8 without a word: the view says what the tree lacks
  const skippedNotice = treePane.getByText('pi skips 1 line of this file');
  const noticeShown = await visible(skippedNotice, 15_000);
  check('the tree view says pi skips the broken line', noticeShown && /line 8 \(invalid JSON/.test(await skippedNotice.first().innerText()),
    squash(await skippedNotice.first().innerText().catch(() => '(no notice)')).slice(0, 200));

  // 5. clicking a tree row reveals its line in the editor
  if (treeOk) await treePane.locator('.monaco-list-row', { hasText: 'Start with the scanner' }).first().click();
  const cursor = page.locator('#status\\.editor\\.selection');
  const revealed = treeOk && (await visible(cursor.filter({ hasText: /Ln 5, Col 1/ }), 15_000));
  check('clicking a tree row puts the cursor on its line', revealed, squash(await cursor.first().innerText().catch(() => '?')));

  // 6. hover over an entry line shows the entry summary
  const sessionEditor = '.editor-group-container.active .monaco-editor';
  await page.keyboard.press('Escape');
  const lines = await editorLines(page, sessionEditor);
  let hoverOk = false;
  let hoverText = '';
  if (lines.length >= 5) {
    const box = await lines[4].line.boundingBox(); // line 5: u0000002
    for (const dx of [60, 70]) {
      await page.mouse.move(box.x + dx, box.y + box.height / 2);
      await page.waitForTimeout(250);
    }
    const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: 'Start with the scanner' });
    hoverOk = await visible(hover, 20_000);
    if (hoverOk) hoverText = squash(await hover.first().innerText());
    await page.waitForTimeout(500); // let the fade-in finish for the screenshot
    await page.screenshot({ path: path.join(OUT, 'e2e-hover.png') });
  }
  check('hovering an entry shows its summary', hoverOk && hoverText.includes('u0000002'), hoverText.slice(0, 200));

  // 7. Show Context at Leaf opens a read-only Markdown document beside the session
  await page.mouse.move(5, 500);
  await runCommand(page, 'Pi Session: Show Context at Leaf');
  const contextTab = page.locator('.tab', { hasText: 'context at leaf.md' });
  const contextOpen = await visible(contextTab, 30_000);
  let contextText = '';
  if (contextOpen) {
    const contextEditor = '.editor-group-container.active .monaco-editor';
    await page.locator(`${contextEditor} .view-lines`).first().waitFor({ timeout: 15_000 });
    await visible(page.locator(`${contextEditor} .view-line`, { hasText: 'Context of' }), 15_000);
    contextText = (await Promise.all((await editorLines(page, contextEditor)).map((l) => l.line.innerText())))
      .join('\n')
      .replace(/\u00a0/g, ' '); // the editor renders spaces as no-break spaces
  }
  const contextOk = contextOpen && contextText.includes('# Context of broken-session.jsonl at the leaf')
    && contextText.includes('Loader refactored and tested') && contextText.includes('messages: 4');
  check('Show Context opens the context document at the leaf', contextOk, squash(contextText).slice(0, 200));

  // 8. another program (pi itself) appends to the session: the tree and the leaf context follow
  const piLine = JSON.stringify({
    type: 'message', id: 'u0000009', parentId: 'a0000003', timestamp: '2026-01-05T10:00:30.000Z',
    message: { role: 'user', content: 'A line written by pi itself', timestamp: 1767607230000 },
  });
  fs.appendFileSync(path.join(FOLDER, SESSION), `${piLine}\n`);
  const newRow = treePane.locator('.monaco-list-row', { hasText: 'A line written by pi itself' });
  const followed = await visible(newRow, 30_000);
  const newRowText = followed ? squash(await newRow.first().innerText()) : '';
  check('the tree follows another program appending to the session', followed && newRowText.includes('leaf'), newRowText);
  const contextEditor = '.editor-group-container.active .monaco-editor';
  const contextFollowed = await visible(page.locator(`${contextEditor} .view-line`, { hasText: 'A line written by pi itself' }), 30_000);
  check('the context document at the leaf follows too', contextFollowed);

  // 9. Check All Sessions runs `pi-session check --json` over pi's session directory (a session that
  // is not open) and lists its problems in the Problems panel
  await runCommand(page, 'Pi Session: Check All Sessions');
  const otherFile = page.locator('.markers-panel .monaco-list-row', { hasText: 'other-broken-session.jsonl' });
  const checked = await visible(otherFile, 60_000);
  const otherProblem = page.locator('.markers-panel .monaco-list-row', { hasText: DIAGNOSTIC });
  const checkedRows = checked ? await otherProblem.count() : 0;
  check('Check All Sessions lists the problems of a session that is not open', checked && checkedRows === 2,
    `${checkedRows} "${DIAGNOSTIC}" row(s) in the panel`);

  // 10. lines glued together after a crash (PI006): "Fix All" splits them
  await openByName(page, 'glued-session.jsonl');
  const gluedProblem = await visible(page.locator('.markers-panel .monaco-list-row', { hasText: 'lines glued together' }), 60_000);
  check('lines glued together are reported', gluedProblem);
  // the tree follows the glued file: pi skips its glued line, and the notice names it
  const gluedNotice = treePane.getByText('pi skips 1 line of this file');
  const gluedNoticeShown = await gluedNotice.filter({ hasText: 'line 2 (2 lines glued together' }).first()
    .waitFor({ timeout: 20_000 }).then(() => true, () => false);
  check('the tree view of the glued file names the glued line', gluedNoticeShown,
    squash(await gluedNotice.first().innerText().catch(() => '(no notice)')).slice(0, 200));
  // Fix All, then save: the file on disk must hold the glued entry on a line of its own
  const gluedPath = path.join(FOLDER, 'glued-session.jsonl');
  const before = fs.readFileSync(gluedPath, 'utf8');
  await page.locator('.tab[aria-label*="glued-session.jsonl"]').first().click();
  await page.waitForTimeout(1000); // let the editor's first code-action requests settle
  let after = before;
  let attempts = 0;
  while (after === before && attempts < 3) {
    attempts += 1;
    await runCommand(page, 'Fix All');
    await page.waitForTimeout(1000);
    await page.keyboard.press('Control+S');
    for (let i = 0; i < 20 && after === before; i++) {
      await page.waitForTimeout(500);
      after = fs.readFileSync(gluedPath, 'utf8');
    }
  }
  const savedLines = after.split('\n');
  const split = savedLines.length === before.split('\n').length + 1 && savedLines[2].startsWith('{"type":"message","id":"g0000002"');
  check('Fix All splits them onto lines of their own', split,
    `${attempts} attempt(s); lines now start: ${savedLines.map((l) => l.slice(0, 34)).join(' | ')}`);
  // the tree of the repaired file no longer says pi skips a line
  const noticeGone = await treePane.getByText('pi skips').first().waitFor({ state: 'hidden', timeout: 20_000 }).then(() => true, () => false);
  check('the notice of skipped lines goes once the file is repaired', gluedNoticeShown && split && noticeGone);

  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(OUT, 'e2e.png') });
  log('screenshots saved in', OUT);
} catch (e) {
  check('the test ran to the end', false, String(e).slice(0, 300));
  try {
    await ctx.pages()[0].screenshot({ path: path.join(OUT, 'e2e-error.png') });
  } catch {}
} finally {
  await ctx.close();
}
failed = checks.some((c) => !c.ok);
const passed = checks.filter((c) => c.ok).length;
console.log(`${passed} passed, ${checks.length - passed} failed`);
process.exit(failed ? 1 : 0);
