-- :PiSessionContext: the LLM context (pi/buildSessionContext) at the leaf or at the entry under the
-- cursor, in a read-only Markdown (or JSON) scratch buffer.
local config = require('pi_session.config')

local M = {}

local function fence(text, lang)
  local longest = 2
  for ticks in text:gmatch('`+') do
    longest = math.max(longest, #ticks)
  end
  local f = string.rep('`', longest + 1)
  return f .. (lang or '') .. '\n' .. text .. '\n' .. f
end

local function is_table(v)
  return type(v) == 'table'
end

local function json(v)
  local ok, text = pcall(vim.json.encode, v)
  return ok and text or vim.inspect(v)
end

local function str(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  return tostring(v)
end

local function block_text(block)
  if type(block) == 'string' then
    return block
  end
  if not is_table(block) then
    return fence(json(block), 'json')
  end
  if block.type == 'text' then
    return str(block.text)
  elseif block.type == 'thinking' then
    return '> *thinking:* ' .. str(block.thinking):gsub('\n', '\n> ')
  elseif block.type == 'toolCall' then
    return ('**tool call** `%s` (%s)\n\n%s'):format(str(block.name), str(block.id), fence(json(block.arguments or vim.empty_dict()), 'json'))
  elseif block.type == 'image' then
    return ('*[image %s]*'):format(str(block.mimeType))
  end
  return fence(json(block), 'json')
end

local function content_text(content)
  if type(content) == 'string' then
    return content
  end
  if vim.islist(content) then
    local parts = {}
    for _, block in ipairs(content) do
      table.insert(parts, block_text(block))
    end
    return table.concat(parts, '\n\n')
  end
  if content == nil or content == vim.NIL then
    return ''
  end
  return fence(json(content), 'json')
end

local function heading(message, index)
  local role = str(message.role)
  local extra = {}
  if role == 'assistant' and message.model then
    table.insert(extra, str(message.model))
  elseif role == 'toolResult' then
    table.insert(extra, message.toolName and str(message.toolName) or 'tool')
    if message.isError == true then
      table.insert(extra, 'error')
    end
  elseif role == 'custom' and message.customType then
    table.insert(extra, str(message.customType))
  end
  return ('## %d. %s%s'):format(index, role, #extra > 0 and (' (' .. table.concat(extra, ', ') .. ')') or '')
end

local function body(message)
  local role = message.role
  if role == 'bashExecution' then
    return fence('$ ' .. str(message.command) .. '\n' .. str(message.output), 'console') .. '\nexit code: ' .. str(message.exitCode)
  elseif role == 'compactionSummary' or role == 'branchSummary' then
    return str(message.summary)
  elseif role == 'assistant' and message.errorMessage and message.errorMessage ~= vim.NIL then
    return content_text(message.content) .. '\n\n**error:** ' .. str(message.errorMessage)
  end
  return content_text(message.content)
end

--- Markdown for a pi/buildSessionContext result.
---@return string[] lines
function M.render_markdown(result, title)
  local out = { '# ' .. title, '' }
  local model = 'none'
  if is_table(result.model) then
    model = (result.model.provider and str(result.model.provider) or '?') .. '/' .. (result.model.modelId and str(result.model.modelId) or '?')
  end
  local messages = vim.islist(result.messages) and result.messages or {}
  table.insert(out, '- model: ' .. model)
  table.insert(out, '- thinking level: ' .. (result.thinkingLevel and str(result.thinkingLevel) or 'off'))
  table.insert(out, '- messages: ' .. #messages)
  table.insert(out, '')
  for i, message in ipairs(messages) do
    if is_table(message) then
      table.insert(out, heading(message, i))
      table.insert(out, '')
      local text = vim.trim(body(message))
      table.insert(out, text ~= '' and text or '*(empty)*')
    else
      table.insert(out, ('## %d. ?'):format(i))
      table.insert(out, '')
      table.insert(out, fence(json(message), 'json'))
    end
    table.insert(out, '')
  end
  return vim.split(table.concat(out, '\n'), '\n', { plain = true })
end

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

--- :PiSessionContext [leaf] [json|markdown]
---@param opts {leaf?: boolean, format?: 'markdown'|'json'}
---@return integer|nil buffer
function M.show(opts)
  opts = opts or {}
  local session = require('pi_session')
  local bufnr, node = session.target()
  if not bufnr then
    return vim.notify('pi-session: not a pi session buffer (or a :PiSessionTree buffer)', vim.log.levels.ERROR)
  end
  local params = {}
  local where = 'leaf'
  if not opts.leaf and node then
    params.leafId = node.id
    where = session.id_text(node.id)
  end
  local file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t')
  local format = opts.format or config.options.context_format
  if format == 'json' then
    return M.show_json(bufnr, params.leafId, ('pi-session-context://%s@%s.json'):format(file, where))
  end
  local result, err = session.request_sync(bufnr, 'pi/buildSessionContext', params)
  if err or not result then
    return vim.notify('pi-session: context failed: ' .. tostring(err and err.message or 'no result'), vim.log.levels.ERROR)
  end
  local title = ('Context of %s at %s'):format(file, where == 'leaf' and 'the leaf' or ('entry ' .. where))
  return show_buffer(('pi-session-context://%s@%s.md'):format(file, where), M.render_markdown(result, title), 'markdown')
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
