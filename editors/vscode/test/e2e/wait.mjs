// What the end-to-end tests wait with: a state of the window or of a file, never a set time (a
// loaded machine takes longer, and is not wrong for it).

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
