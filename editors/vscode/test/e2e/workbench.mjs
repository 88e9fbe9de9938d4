// What the end-to-end tests wait with and drive the workbench by. A step waits for a state of the
// window or of a file, never for a set time: a loaded machine takes longer, and is not wrong for it.

/**
 * Whether `condition()` (sync or async) comes true within `timeout` ms, asked every `every` ms. A
 * condition that throws counts as not yet.
 */
export async function until(condition, timeout, every = 250) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await Promise.resolve().then(condition).catch(() => false)) return true;
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

/**
 * The quick input (command palette, Quick Open, Go to Line) opened with `keys` and its input field;
 * the keys are pressed again while it does not open (a workbench busy starting, or under load, may
 * drop them). Throws when it never opens.
 */
export async function openQuickInput(page, keys) {
  const input = page.locator('.quick-input-widget input');
  const opens = async () => {
    await page.keyboard.press(keys);
    return input.first().waitFor({ timeout: 5_000 }).then(() => true);
  };
  if (!(await until(opens, 60_000, 0))) throw new Error(`${keys} did not open the quick input`);
  return input;
}

/**
 * Runs the command `title` from the command palette; answers when Enter was pressed. The palette
 * is closed and opened again while the command is not listed (a palette opened before the
 * extension's commands were known keeps the list it had).
 */
export async function runCommand(page, title) {
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  let tries = 0;
  const listed = async () => {
    if (tries++ > 0) {
      await page.keyboard.press('Escape');
      await until(() => page.locator('.quick-input-widget').first().isHidden(), 5_000);
    }
    const input = await openQuickInput(page, 'F1');
    await input.fill(`>${title}`);
    return row.waitFor({ timeout: 10_000 }).then(() => true);
  };
  if (!(await until(listed, 90_000, 0))) throw new Error(`the command palette does not list "${title}"`);
  const pressed = Date.now();
  await page.keyboard.press('Enter');
  return pressed;
}
