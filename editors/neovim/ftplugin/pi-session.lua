-- pi session files are JSON Lines: JSON highlighting, no wrapping of the long lines.
vim.bo.commentstring = ''
vim.wo.wrap = false
if not pcall(vim.treesitter.start, 0, 'json') then
  vim.bo.syntax = 'json'
end
vim.b.undo_ftplugin = (vim.b.undo_ftplugin or '') .. '\n setlocal wrap< syntax<'
