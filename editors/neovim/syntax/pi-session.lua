-- pi session files are JSON Lines: JSON highlighting for the `pi-session` filetype (Neovim 0.11
-- ships no tree-sitter parser for JSON; with one installed, the ftplugin starts it instead).
if vim.b.current_syntax then
  return
end
vim.cmd('runtime! syntax/json.vim')
vim.b.current_syntax = 'pi-session'
