-- :checkhealth pi_session: is Neovim new enough, is the command there, does the server start?
local M = {}

local function initialize_exchange()
  local function frame(message)
    local body = vim.json.encode(message)
    return ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
  end
  return table.concat({
    frame({ jsonrpc = '2.0', id = 1, method = 'initialize', params = { processId = vim.NIL, rootUri = vim.NIL, capabilities = vim.empty_dict() } }),
    frame({ jsonrpc = '2.0', method = 'initialized', params = vim.empty_dict() }),
    frame({ jsonrpc = '2.0', id = 2, method = 'shutdown' }),
    frame({ jsonrpc = '2.0', method = 'exit' }),
  })
end

--- The JSON-RPC messages in a byte stream of Content-Length framed messages.
---@return table[]
function M.read_messages(stream)
  local messages, pos = {}, 1
  while true do
    local header_end = stream:find('\r\n\r\n', pos, true)
    if not header_end then
      break
    end
    local length = tonumber(stream:sub(pos, header_end):match('[Cc]ontent%-[Ll]ength:%s*(%d+)'))
    if not length then
      break
    end
    local body = stream:sub(header_end + 4, header_end + 3 + length)
    local ok, message = pcall(vim.json.decode, body)
    if ok and type(message) == 'table' then
      table.insert(messages, message)
    end
    pos = header_end + 4 + length
  end
  return messages
end

--- Start the server, send initialize/shutdown/exit, and read the initialize answer.
---@return boolean ok, string detail
function M.probe(cmd, timeout_ms)
  local ok, process = pcall(vim.system, cmd, { stdin = initialize_exchange() })
  if not ok then
    return false, tostring(process)
  end
  local result = process:wait(timeout_ms or 20000)
  if result.signal ~= 0 and result.code ~= 0 and (result.stdout or '') == '' then
    return false, ('no answer within %d s (killed)'):format((timeout_ms or 20000) / 1000)
  end
  for _, message in ipairs(M.read_messages(result.stdout or '')) do
    if message.id == 1 and type(message.result) == 'table' and message.result.capabilities then
      local info = message.result.serverInfo
      local name = type(info) == 'table' and ((info.name or 'server') .. ' ' .. (info.version or '')) or 'server'
      return true, vim.trim(name)
    end
  end
  local stderr = vim.trim(result.stderr or '')
  return false, ('exit code %s; %s'):format(result.code, stderr ~= '' and stderr:sub(-400) or 'no initialize answer')
end

function M.check()
  local health = vim.health
  health.start('pi_session')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.11 or newer is needed (vim.lsp.config / vim.lsp.enable)')
  end

  local config = require('pi_session.config')
  local cmd = config.server_cmd()
  local lsp_cmd = vim.lsp.config.pi_session and vim.lsp.config.pi_session.cmd
  if type(lsp_cmd) == 'table' then
    cmd = lsp_cmd -- the user set it with vim.lsp.config('pi_session', {cmd = ...})
  end
  local exe = cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(('command: %s (%s)'):format(table.concat(cmd, ' '), vim.fn.exepath(exe)))
  else
    health.error(('`%s` is not executable'):format(exe), {
      'Install the server: ' .. config.INSTALL_HINT .. ' (puts `pi-session` on PATH)',
      "or point the plugin at it: require('pi_session').setup({ cmd = { '/path/to/python', '-m', 'pi_session_server' } })",
    })
    return
  end

  local ok, detail = M.probe(cmd)
  if ok then
    health.ok('the server starts and answers initialize: ' .. detail)
  else
    health.error('the server did not start: ' .. detail, {
      'Run the command in a terminal to see the error',
      'Check that the Python environment has pi-session-server installed: ' .. config.INSTALL_HINT,
    })
  end

  local options = config.options
  local features = {}
  for _, name in ipairs({ 'codelens', 'inlay_hints', 'folding', 'highlights', 'completion' }) do
    table.insert(features, ('%s %s'):format(name, options[name] == false and 'off' or 'on'))
  end
  health.info('in session buffers: ' .. table.concat(features, ', ') .. " (setup options; see :help pi_session-features)")

  if vim.g.pi_session_auto_enable == false then
    health.info("vim.g.pi_session_auto_enable = false: enable it yourself with vim.lsp.enable('pi_session')")
  elseif vim.lsp.is_enabled and not vim.lsp.is_enabled('pi_session') then
    health.warn("the pi_session LSP config is not enabled: vim.lsp.enable('pi_session')")
  else
    health.ok('LSP config pi_session is enabled for filetype pi-session')
  end
end

return M
