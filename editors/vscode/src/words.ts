/** Counts in words, as the command line writes them (`1 problem`, `1,234 session files`). */
export function counted(count: number, unit: string, units = `${unit}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? unit : units}`;
}
