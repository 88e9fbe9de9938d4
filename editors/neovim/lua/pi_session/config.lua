-- Options of the pi_session plugin (set with require('pi_session').setup{...}).
local M = {}

M.defaults = {
  -- The pi-session command line WITHOUT a subcommand; `serve` is appended to start the server.
  -- E.g. { '/home/me/.venv/bin/python', '-m', 'pi_session_server' }.
  -- nil = `pi-session` on PATH.
  cmd = nil,
  -- The pi release whose semantics the server follows for every session ('1.6.0' or '0.86.1'):
  -- the LLM context, the problems reported, the tree. Sent as initializationOptions.piVersion;
  -- setup{pi_version} with another release restarts a running server.
  pi_version = '1.6.0',
  -- Initial filter of :PiSessionTree (pi's /tree modes).
  tree_filter = 'default',
  -- Show Context as 'markdown' or 'json'.
  context_format = 'markdown',
  -- Rows per pi/getTree request: :PiSessionTree loads the rows around the leaf, then a page of
  -- this many rows at a time as they scroll into view.
  tree_page_size = 200,
  -- Entries per pi/getPath request of :PiSessionView.
  view_page_size = 100,
  -- What the plugin turns on in a session buffer when the server attaches: the server's code
  -- lenses (entries, branch points, the leaf), its inlay hints, its folding ranges, the
  -- highlights of the entry under the cursor and the ids naming it (after 'updatetime' at rest),
  -- and completion of entry ids and types as `"` is typed.
  codelens = true,
  inlay_hints = true,
  folding = true,
  highlights = true,
  completion = true,
}

M.options = vim.deepcopy(M.defaults)

--- The pi releases the server follows, the default first.
M.pi_versions = { '1.6.0', '0.86.1' }

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

--- How to install the server (it is on no package index): from a clone, or the wheel built from one.
M.INSTALL_HINT = 'pip install /path/to/pi-session-server (a clone of the repository; `pip install -e .` inside it, or `pip install` the wheel built from it)'

--- The pi release for initializationOptions.piVersion: setup{pi_version} if it is one the server
--- knows, else the default.
---@return string
function M.pi_version()
  local wanted = M.options.pi_version
  return vim.tbl_contains(M.pi_versions, wanted) and wanted or M.defaults.pi_version
end

--- Glyphs for the codicons in the server's code lens titles (others are dropped).
M.icons = { ['git-branch'] = '⑂', target = '●' }

--- A code lens title with its codicons ("$(git-branch)") as plain glyphs.
---@param title string
---@return string
function M.plain_icons(title)
  return (title:gsub('%$%(([%w-]+)%)(%s?)', function(name, space)
    local glyph = M.icons[name]
    return glyph and (glyph .. space) or ''
  end))
end

--- The command that starts the language server.
---@return string[]
function M.server_cmd()
  local cmd = M.cli()
  table.insert(cmd, 'serve')
  return cmd
end

return M
