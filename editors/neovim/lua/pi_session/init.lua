-- pi_session: a thin Neovim client of the pi-session language server. The server does the work
-- (diagnostics, hover, tree, context); this module finds the client and sends it pi/* requests.
local config = require('pi_session.config')

local M = {}

---@param opts? {cmd?: string|string[], pi_version?: '1.6.0'|'0.86.1', tree_filter?: string, context_format?: 'markdown'|'json', tree_page_size?: integer, codelens?: boolean, inlay_hints?: boolean, folding?: boolean}
function M.setup(opts)
  local before = config.pi_version()
  config.options = vim.tbl_deep_extend('force', vim.deepcopy(config.defaults), opts or {})
  if config.options.pi_version ~= config.pi_version() then
    vim.notify(
      ('pi-session: pi_version %s is not a pi release the server knows (%s): it follows pi %s'):format(
        vim.inspect(config.options.pi_version),
        table.concat(config.pi_versions, ', '),
        config.pi_version()
      ),
      vim.log.levels.ERROR
    )
  end
  if config.pi_version() ~= before then
    M.restart()
  end
end

--- Start the running pi-session servers again (they read setup's options as they start), and
--- attach the new one to the session buffers.
function M.restart()
  local clients = vim.lsp.get_clients({ name = 'pi_session' })
  if #clients == 0 then
    return
  end
  for _, client in ipairs(clients) do
    client:stop()
  end
  local function again()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return vim.defer_fn(again, 20)
      end
    end
    if not vim.lsp.is_enabled('pi_session') then
      return
    end
    -- what vim.lsp.enable does for the buffers open before it: their FileType once more
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == M.FILETYPE then
        pcall(vim.api.nvim_exec_autocmds, 'FileType', { group = 'nvim.lsp.enable', buffer = buf, modeline = false })
      end
    end
  end
  again()
end

M.FILETYPE = 'pi-session'

--- The session buffer a command acts on: the current buffer, or the session shown by a tree buffer.
---@param bufnr? integer
---@return integer|nil
function M.session_buffer(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype == M.FILETYPE then
    return bufnr
  end
  local source = vim.b[bufnr].pi_session_source
  if source and vim.api.nvim_buf_is_valid(source) then
    return source
  end
  return nil
end

---@param bufnr integer
---@return vim.lsp.Client|nil
function M.client(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = 'pi_session' })[1]
end

--- Wait (up to timeout_ms) for the pi_session client to attach to bufnr.
---@return vim.lsp.Client|nil
function M.wait_client(bufnr, timeout_ms)
  local client
  vim.wait(timeout_ms or 10000, function()
    client = M.client(bufnr)
    return client ~= nil and client.initialized
  end, 20)
  return client
end

---@param bufnr integer
function M.uri(bufnr)
  return vim.uri_from_bufnr(bufnr)
end

--- Why a session buffer has no server to ask: it stopped (exited, crashed), or none attached.
local function no_server(bufnr)
  if vim.b[bufnr].pi_session_server_stopped then
    return { message = 'the pi-session language server stopped (:edit starts it again; see :checkhealth pi_session)' }
  end
  return { message = 'the pi-session language server is not attached to this buffer (see :checkhealth pi_session)' }
end

--- Send a pi/* request for a session buffer; callback(err, result). Errors are reported when no
--- callback is given.
---@param bufnr integer session buffer
---@param method string
---@param params table `uri` is filled in
---@param callback? fun(err: any, result: any)
function M.request(bufnr, method, params, callback)
  local client = M.client(bufnr)
  params = vim.tbl_extend('keep', params or {}, { uri = M.uri(bufnr) })
  local function done(err, result)
    if err and not callback then
      vim.notify(('pi-session: %s failed: %s'):format(method, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    if callback then
      callback(err, result)
    end
  end
  if not client then
    done(no_server(bufnr))
    return
  end
  client:request(method, params, function(err, result)
    done(err, result)
  end, bufnr)
end

--- Synchronous variant, for tests and scripts: no command uses it (the editor would wait).
---@return any result, any err
function M.request_sync(bufnr, method, params, timeout_ms)
  local client = M.client(bufnr)
  if not client then
    return nil, no_server(bufnr)
  end
  params = vim.tbl_extend('keep', params or {}, { uri = M.uri(bufnr) })
  local response, err = client:request_sync(method, params, timeout_ms or 10000, bufnr)
  if not response then
    return nil, { message = err or 'no response' }
  end
  return response.result, response.err
end

--- The entry on a 0-based line of a session buffer (pi/getEntryAtLine: its id, label, type, ...
--- without the tree; the buffer's lines are pi's, as Neovim does not end a line at a lone CR, so
--- nothing is converted as VS Code does with pi/getLineBreaks), asked in the background: callback(node, err) on the main loop, node nil on a
--- line without an entry. A session of gigabytes takes the server a while to open: nothing waits.
---@param callback fun(node: table|nil, err: any)
function M.entry_at_line(bufnr, line, callback)
  M.request(bufnr, 'pi/getEntryAtLine', { line = line }, function(err, found)
    vim.schedule(function()
      if err then
        return callback(nil, err)
      end
      callback(found ~= vim.NIL and found or nil)
    end)
  end)
end

--- The entry a command acts on: the row under the cursor in a tree buffer, else the entry on the
--- cursor line of the session buffer (asked of the server in the background).
--- callback(session_bufnr, node, problem, err): `problem` says why there is no node, `err` is set
--- when the server failed (not when the line merely has no entry).
---@param callback fun(bufnr: integer|nil, node: table|nil, problem: string|nil, err: any)
function M.target(callback)
  local current = vim.api.nvim_get_current_buf()
  local bufnr = M.session_buffer(current)
  if not bufnr then
    return callback(nil, nil, 'not a pi session buffer (or a :PiSessionTree or :PiSessionView buffer)')
  end
  if bufnr ~= current then
    local node = require('pi_session.tree').node_under_cursor() or require('pi_session.view').node_under_cursor()
    return callback(bufnr, node, node == nil and 'no entry on this row' or nil)
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  M.entry_at_line(bufnr, line, function(node, err)
    if err then
      return callback(bufnr, nil, err.message or vim.inspect(err), err)
    end
    -- a line without an entry may be a damaged one pi skips, not only the header or a blank line
    local problem = ('line %d holds no entry pi reads (the header, a blank line, or a line pi skips): put the cursor on an entry'):format(line + 1)
    callback(bufnr, node, node == nil and problem or nil)
  end)
end

local function id_text(id)
  return type(id) == 'string' and id or vim.json.encode(id)
end
M.id_text = id_text

--- :PiSessionBranch: make the entry under the cursor the leaf.
function M.branch()
  M.target(function(bufnr, node, problem)
    if not node then
      return vim.notify('pi-session: ' .. problem, vim.log.levels.ERROR)
    end
    local tree = require('pi_session.tree')
    local told = tree.leaf_moves_told
    M.request(bufnr, 'pi/branch', { entryId = node.id }, function(err, result)
      -- (counted now: the notification told before the answer is handled before this callback)
      local moved_told = tree.leaf_moves_told ~= told
      vim.schedule(function()
        if err then
          return vim.notify('pi-session: branch failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        end
        local leaf = type(result) == 'table' and result.leafId or nil
        vim.notify('pi-session: the leaf is now ' .. id_text(leaf or node.id))
        -- the server told the move before its answer (pi/didChange leafMoved): the trees and views
        -- of the session follow it already; else the trees take in the move of its leaf (the rows
        -- whose marks changed), and the views show the path anew
        if not moved_told then
          tree.refresh_for(bufnr, leaf ~= nil and leaf ~= vim.NIL and { id = leaf } or nil)
          require('pi_session.view').refresh_for(bufnr)
        end
        -- the leaf's code lens moves with it
        if config.options.codelens ~= false then
          require('pi_session.attach').refresh_lenses(bufnr)
        end
      end)
    end)
  end)
end

--- :PiSessionLabel [text]: set (or, with an empty text, clear) the label of the entry under the cursor.
---@param text? string nil = ask
function M.label(text)
  M.target(function(bufnr, node, problem)
    if not node then
      return vim.notify('pi-session: ' .. problem, vim.log.levels.ERROR)
    end
    local function apply(label)
      if label == nil then
        return -- cancelled
      end
      label = vim.trim(label)
      local params = { kind = 'label', targetId = node.id }
      if label ~= '' then
        params.label = label -- no label key clears it, as pi's /tree does
      end
      local tree = require('pi_session.tree')
      local told = tree.appends_told
      M.request(bufnr, 'pi/append', params, function(err)
        -- (counted now: the notification told before the answer is handled before this callback)
        local append_told = tree.appends_told ~= told
        vim.schedule(function()
          if err then
            return vim.notify('pi-session: label failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
          end
          -- the server told the append before its answer (pi/didChange appended): the trees and
          -- views of the session take it in already; else the trees load anew
          if not append_told then
            tree.refresh_for(bufnr)
          end
        end)
      end)
    end
    if text ~= nil then
      return apply(text)
    end
    vim.ui.input({ prompt = ('Label for %s (empty clears): '):format(id_text(node.id)), default = type(node.label) == 'string' and node.label or '' }, apply)
  end)
end

return M
