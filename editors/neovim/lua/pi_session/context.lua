-- :PiSessionContext: the LLM context (pi/buildSessionContext) at the leaf or at the entry under the
-- cursor, in a read-only Markdown (or JSON) scratch buffer. The server renders the Markdown.
local config = require('pi_session.config')

local M = {}

--- Open (or replace) the context buffer.
local function show_buffer(name, lines, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].modifiable = true
  vim.bo[buf].readonly = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = filetype
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('belowright split')
    vim.api.nvim_set_current_buf(buf)
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  return buf
end

--- :PiSessionContext [leaf] [json|markdown]. The entry under the cursor and the context are asked
--- in the background: the buffer opens when they come.
---@param opts {leaf?: boolean, format?: 'markdown'|'json'}
function M.show(opts)
  opts = opts or {}
  local session = require('pi_session')
  local function at(bufnr, node)
    local where = node and session.id_text(node.id) or 'leaf'
    local leaf_id = node and node.id or nil
    local file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t')
    local format = opts.format or config.options.context_format
    if format == 'json' then
      return M.show_json(bufnr, leaf_id, ('pi-session-context://%s@%s.json'):format(file, where))
    end
    -- rendered by the server (the document `pi-session context` prints)
    session.request(bufnr, 'pi/buildSessionContext', { leafId = leaf_id, format = 'markdown' }, function(err, result)
      vim.schedule(function()
        if err or type(result) ~= 'table' or type(result.markdown) ~= 'string' then
          return vim.notify('pi-session: context failed: ' .. tostring(err and err.message or 'no result'), vim.log.levels.ERROR)
        end
        local lines = vim.split(result.markdown, '\n', { plain = true })
        show_buffer(('pi-session-context://%s@%s.md'):format(file, where), lines, 'markdown')
      end)
    end)
  end
  if opts.leaf then
    local bufnr = session.session_buffer()
    if not bufnr then
      return vim.notify('pi-session: not a pi session buffer (or a :PiSessionTree or :PiSessionView buffer)', vim.log.levels.ERROR)
    end
    return at(bufnr, nil)
  end
  session.target(function(bufnr, node, problem, err)
    if not bufnr or err then
      return vim.notify('pi-session: context failed: ' .. problem, vim.log.levels.ERROR)
    end
    at(bufnr, node) -- no entry on the line (the header): at the leaf
  end)
end

--- The JSON context keeps pi's key order (`role` before `content`): a table decoded by vim.json has
--- none, so the JSON comes as text from `pi-session context FILE --json --leaf ID` (asynchronously),
--- at the entry, or at the server's leaf (which :PiSessionBranch moves).
---@param leaf_id any nil: the leaf
function M.show_json(bufnr, leaf_id, name)
  local session = require('pi_session')
  local path = vim.api.nvim_buf_get_name(bufnr)
  local function run(leaf)
    local cmd = config.cli()
    vim.list_extend(cmd, { 'context', path, '--json' })
    if leaf ~= nil and leaf ~= vim.NIL then
      vim.list_extend(cmd, { '--leaf', session.id_text(leaf) })
    end
    local ok, started = pcall(vim.system, cmd, { text = true }, function(out)
      vim.schedule(function()
        if out.code ~= 0 then
          local why = vim.trim(out.stderr or '')
          return vim.notify('pi-session: context failed: ' .. (why ~= '' and why or ('exit code ' .. out.code)), vim.log.levels.ERROR)
        end
        show_buffer(name, vim.split(vim.trim(out.stdout or ''), '\n', { plain = true }), 'json')
      end)
    end)
    if not ok then
      vim.notify('pi-session: context failed: ' .. tostring(started), vim.log.levels.ERROR)
    end
  end
  if leaf_id ~= nil then
    return run(leaf_id)
  end
  session.request(bufnr, 'pi/getInfo', {}, function(err, info)
    vim.schedule(function()
      if err then
        return vim.notify('pi-session: context failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      run(type(info) == 'table' and info.leafId or nil)
    end)
  end)
end

return M
