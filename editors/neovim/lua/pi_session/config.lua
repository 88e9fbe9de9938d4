-- Options of the pi_session plugin (set with require('pi_session').setup{...}).
local M = {}

M.defaults = {
  -- The pi-session command line WITHOUT a subcommand; `serve` is appended to start the server.
  -- E.g. { '/home/me/.venv/bin/python', '-m', 'pi_session_server' }.
  -- nil = `pi-session` on PATH.
  cmd = nil,
  -- Initial filter of :PiSessionTree (pi's /tree modes).
  tree_filter = 'default',
  -- Show Context as 'markdown' or 'json'.
  context_format = 'markdown',
  -- Nodes per pi/getTree request: the tree comes in pages of this size (the server sends at most
  -- 50,000 nodes per reply and refuses a bigger tree asked for in one piece).
  tree_page_size = 50000,
}

M.options = vim.deepcopy(M.defaults)

M.filters = { 'default', 'no-tools', 'user-only', 'labeled-only', 'all' }

M.filter_descriptions = {
  default = 'conversation entries, without settings and bookkeeping entries',
  ['no-tools'] = 'the default view without tool results',
  ['user-only'] = 'only user messages',
  ['labeled-only'] = 'only labeled entries',
  all = 'every entry',
}

--- The CLI prefix: setup{cmd}, else vim.g.pi_session_cmd, else `pi-session`.
---@return string[]
function M.cli()
  local cmd = M.options.cmd or vim.g.pi_session_cmd
  if type(cmd) == 'string' then
    return { cmd }
  elseif type(cmd) == 'table' and #cmd > 0 then
    return vim.deepcopy(cmd)
  end
  return { 'pi-session' }
end

--- The command that starts the language server.
---@return string[]
function M.server_cmd()
  local cmd = M.cli()
  table.insert(cmd, 'serve')
  return cmd
end

return M
