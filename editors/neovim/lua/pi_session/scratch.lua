-- What the plugin's read-only buffers share (:PiSessionTree, :PiSessionView): making one beside its
-- session buffer, filling it, its keys, and jumping to a line of the session.
local M = {}

--- A new scratch buffer for a session buffer, named `scheme://<session path>`. `on_wipe` runs when
--- it goes; `on_move` when its cursor moves or its window scrolls (what scrolls into view loads).
function M.create(source, scheme, on_wipe, on_move)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_name(buf, scheme .. '://' .. vim.api.nvim_buf_get_name(source))
  vim.b[buf].pi_session_source = source
  vim.api.nvim_create_autocmd('BufWipeout', { buffer = buf, once = true, callback = on_wipe })
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'WinScrolled' }, { buffer = buf, callback = on_move })
  return buf
end

--- Show `buf` in its window, or in a new `split` (e.g. 'botright vsplit').
function M.show(buf, split)
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd(split)
    vim.api.nvim_set_current_buf(buf)
  end
end

function M.set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

--- Buffer-local normal-mode keys: {lhs, function, description} triples.
function M.map(buf, keys)
  for _, key in ipairs(keys) do
    vim.keymap.set('n', key[1], key[2], { buffer = buf, nowait = true, silent = true, desc = key[3] })
  end
end

--- `q` closes the buffer.
function M.close_key(buf)
  return {
    'q',
    function()
      vim.api.nvim_buf_delete(buf, { force = true })
    end,
    'Close',
  }
end

--- Put the cursor on a 0-based line of the session buffer: in its window, else in one opened next
--- to the scratch buffer (`split`).
function M.jump(source, from, line, split)
  local win = vim.fn.win_findbuf(source)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('wincmd p')
    if vim.api.nvim_get_current_buf() == from then
      vim.cmd(split)
    end
    vim.api.nvim_set_current_buf(source)
  end
  vim.api.nvim_win_set_cursor(0, { line + 1, 0 })
  vim.cmd('normal! zv')
end

return M
