-- pi session files are JSON Lines: JSON highlighting (syntax/pi-session.lua, or the tree-sitter
-- JSON parser when one is installed), no wrapping of the long lines.
vim.bo.commentstring = ''
vim.wo.wrap = false
if vim.treesitter.language.add('json') then
  pcall(vim.treesitter.start, 0, 'json')
end
vim.b.undo_ftplugin = (vim.b.undo_ftplugin or '') .. '\n setlocal wrap<'
-- pi's lines end at "\n" only: a buffer read with its lines ending at "\r" is read again
require('pi_session.line_ends').read_as_pi_lines(vim.api.nvim_get_current_buf())
