// The server's code lens titles use plain glyphs ("⑂ 2 branches", "● leaf"), which Neovim shows as
// they are; VS Code's fonts lack "⑂" (a box), and its lens titles render codicons instead.
const GLYPHS: Array<[RegExp, string]> = [
  [/⑂/g, '$(git-branch)'],
  [/●/g, '$(target)'],
];

/** A code lens title with the server's glyphs as codicons. */
export function lensTitle(title: string): string {
  return GLYPHS.reduce((text, [glyph, icon]) => text.replace(glyph, icon), title);
}
