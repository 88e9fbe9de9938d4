-- :PiSessionView: the session as a conversation in a scratch buffer, the text counterpart of the
-- VS Code session viewer. It shows the path from the root to the leaf (or to an entry), the session
-- totals at the top, per turn the model, tokens and cost; thinking, tool calls, tool results, bash
-- output and the system prompt in closed folds; compactions, branch summaries and context edits as
-- separators; and where the path passes a branch point, the branches to switch to. It reads through
-- the server (pi/getPath pages, pi/getStats), asynchronously, a page at a time as you scroll, and
-- follows the session as pi appends.
local config = require('pi_session.config')
local scratch = require('pi_session.scratch')

local M = {}

local ns = vim.api.nvim_create_namespace('pi_session_view')
--- Lines of one block (a tool's output, a long message) shown before the rest is cut.
M.MAX_BLOCK_LINES = 200

---@type table<integer, table>
local views = {}

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

local function str(v)
  if not present(v) then
    return ''
  end
  if type(v) == 'table' then
    local ok, text = pcall(vim.json.encode, v)
    return ok and text or vim.inspect(v)
  end
  return tostring(v)
end

local function count(n)
  local text = tostring(math.floor((tonumber(n) or 0) + 0.5))
  local out = text:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return (out:gsub('^,', ''))
end

local function cost_text(c)
  c = tonumber(c) or 0
  return (c > 0 and c < 0.01) and ('$%.4f'):format(c) or ('$%.2f'):format(c)
end

local function time_text(ts)
  if type(ts) ~= 'string' then
    return ''
  end
  local date, clock = ts:match('^(%d+%-%d+%-%d+)T(%d+:%d+:%d+)')
  return date and (date .. ' ' .. clock) or ts
end

local function split(text)
  return vim.split(tostring(text or ''), '\n', { plain = true })
end

--- The text of a content value (a string or blocks) for the body of a message.
local function text_of(content)
  if type(content) == 'string' then
    return content
  end
  if type(content) ~= 'table' then
    return str(content)
  end
  local parts = {}
  for _, b in ipairs(content) do
    if type(b) == 'table' and b.type == 'text' then
      table.insert(parts, str(b.text))
    elseif type(b) == 'table' and b.type == 'image' then
      table.insert(parts, ('[image %s]'):format(str(b.mimeType)))
    elseif type(b) == 'string' then
      table.insert(parts, b)
    end
  end
  return table.concat(parts, '\n')
end

local function pretty(value)
  local ok, text = pcall(vim.json.encode, value)
  if not ok then
    return vim.inspect(value)
  end
  return text
end

local function tool_summary(args)
  if type(args) ~= 'table' then
    return str(args):sub(1, 120)
  end
  for _, key in ipairs({ 'command', 'path', 'file_path', 'pattern', 'url', 'query' }) do
    if type(args[key]) == 'string' then
      return (args[key]:gsub('\n.*', '')):sub(1, 160)
    end
  end
  return ''
end

--- The lines of one entry of the path: {text, kind} pairs; kind is 'head' (the entry's heading),
--- 'switch' (a branch switcher), 'sep' (a separator), 'fold' (the first line of a folded block),
--- 'body' (inside a fold) or 'text'.
function M.entry_lines(item, index)
  local out = {}
  local function add(text, kind)
    for i, line in ipairs(split(text)) do
      local this = kind or 'text'
      if i > 1 then
        this = kind == 'fold' and 'body' or 'text'
      end
      table.insert(out, { line, this })
    end
  end
  local function block(summary, body)
    local lines = split(body)
    add('▸ ' .. summary, 'fold')
    local shown = math.min(#lines, M.MAX_BLOCK_LINES)
    for i = 1, shown do
      table.insert(out, { '    ' .. lines[i], 'body' })
    end
    if #lines > shown then
      table.insert(out, { ('    … %d more lines (the whole entry: <CR> opens its line)'):format(#lines - shown), 'body' })
    end
  end
  local function body(text)
    local lines = split(text)
    local shown = math.min(#lines, M.MAX_BLOCK_LINES)
    for i = 1, shown do
      table.insert(out, { lines[i], 'text' })
    end
    if #lines > shown then
      table.insert(out, { ('… %d more lines'):format(#lines - shown), 'text' })
    end
  end
  local entry = type(item.entry) == 'table' and item.entry or {}
  local siblings = type(item.siblingIds) == 'table' and item.siblingIds or {}
  if #siblings > 1 then
    local position = 0
    for i, id in ipairs(siblings) do
      if require('pi_session.lazy').same_id(id, entry.id) then
        position = i
      end
    end
    add(('⑂ branch %d of %d   ]b next · [b previous · gb list'):format(position, #siblings), 'switch')
  end
  local where = {}
  if type(item.line) == 'number' then
    table.insert(where, 'line ' .. (item.line + 1))
  end
  local when = time_text(entry.timestamp)
  local tail = table.concat(vim.tbl_filter(function(s)
    return s ~= ''
  end, { when, table.concat(where, '') }), ' · ')
  local label = present(item.label) and ('  [' .. str(item.label) .. ']') or ''
  local forks = type(item.childIds) == 'table' and #item.childIds > 1 and ('  (%d branches)'):format(#item.childIds) or ''
  local function head(title)
    add(('── %s%s%s ── %s'):format(title, label, forks, tail), 'head')
  end
  local etype = entry.type
  if etype == 'message' and type(entry.message) == 'table' then
    local message = entry.message
    local role = str(message.role)
    if role == 'user' then
      head('user')
      body(text_of(message.content))
    elseif role == 'assistant' then
      local facts = {}
      local model = table.concat(vim.tbl_filter(function(s)
        return s ~= ''
      end, { str(message.provider), str(message.model) }), '/')
      if model ~= '' then
        table.insert(facts, model)
      end
      local usage = type(message.usage) == 'table' and message.usage or nil
      if usage then
        if type(usage.input) == 'number' then
          table.insert(facts, 'in ' .. count(usage.input))
        end
        if type(usage.output) == 'number' then
          table.insert(facts, 'out ' .. count(usage.output))
        end
        if type(usage.cacheRead) == 'number' and usage.cacheRead > 0 then
          table.insert(facts, 'cache read ' .. count(usage.cacheRead))
        end
        if type(usage.cost) == 'table' and type(usage.cost.total) == 'number' then
          table.insert(facts, cost_text(usage.cost.total))
        end
      end
      head('assistant' .. (#facts > 0 and (' · ' .. table.concat(facts, ' · ')) or ''))
      local content = message.content
      if type(content) == 'string' then
        body(content)
      elseif type(content) == 'table' then
        for _, b in ipairs(content) do
          if type(b) ~= 'table' then
            body(str(b))
          elseif b.type == 'text' then
            body(str(b.text))
          elseif b.type == 'thinking' then
            block('thinking', str(b.thinking))
          elseif b.type == 'toolCall' then
            block(('tool call %s %s'):format(str(b.name), tool_summary(b.arguments)), pretty(b.arguments or vim.empty_dict()))
          elseif b.type == 'image' then
            body(('[image %s]'):format(str(b.mimeType)))
          else
            block(str(b.type), pretty(b))
          end
        end
      end
      if present(message.errorMessage) then
        body('error: ' .. str(message.errorMessage))
      end
    elseif role == 'toolResult' then
      head('tool result')
      local text = text_of(message.content)
      local lines = #split(text)
      block(('%s %s (%d line%s)'):format(message.isError == true and 'tool error' or 'output', str(message.toolName), lines, lines == 1 and '' or 's'), text)
    elseif role == 'bashExecution' then
      head('bash')
      block(('$ %s (exit %s)'):format(str(message.command):gsub('\n.*', ''), str(message.exitCode)), str(message.output))
    elseif role == 'system' then
      head('system')
      block('system prompt', text_of(message.content))
    else
      head(role .. (present(message.customType) and (' · ' .. str(message.customType)) or ''))
      body(text_of(message.content))
    end
  elseif etype == 'compaction' then
    add(('══ compaction · %s tokens before ══ %s'):format(count(entry.tokensBefore), tail), 'sep')
    block('summary', str(entry.summary))
  elseif etype == 'branch_summary' then
    add(('══ branch summary ══ %s'):format(tail), 'sep')
    body(str(entry.summary))
  elseif etype == 'context_edit' then
    local what = entry.replacement == vim.NIL and 'left out of the context' or 'replaced in the context'
    add(('══ context edit · %s %s ══ %s'):format(str(entry.targetId), what, tail), 'sep')
    if type(entry.replacement) == 'table' then
      block('replacement', text_of(entry.replacement.content))
    end
  elseif etype == 'model_change' then
    head(('model → %s/%s'):format(str(entry.provider), str(entry.modelId)))
  elseif etype == 'thinking_level_change' then
    head('thinking level → ' .. str(entry.thinkingLevel))
  elseif etype == 'label' then
    head(('label %s on %s'):format(present(entry.label) and ('“' .. str(entry.label) .. '”') or 'cleared', str(entry.targetId)))
  elseif etype == 'session_info' then
    head('session name: ' .. str(entry.name))
  elseif etype == 'custom_message' then
    head(str(entry.customType) ~= '' and str(entry.customType) or 'custom message')
    body(text_of(entry.content))
  elseif etype == 'custom' then
    head('custom · ' .. str(entry.customType))
  else
    head(str(etype) ~= '' and str(etype) or 'entry')
    block('entry', pretty(entry))
  end
  table.insert(out, { '', 'text' })
  return out
end

--- The totals line of pi/getStats.
function M.stats_line(stats)
  if type(stats) ~= 'table' then
    return 'totals: …'
  end
  local roles = type(stats.roles) == 'table' and stats.roles or {}
  local tokens = type(stats.tokens) == 'table' and stats.tokens or {}
  return ('%s entries · %s user · %s assistant · %s tool results · %s branch points · tokens in %s out %s cache read %s · %s'):format(
    count(stats.entryCount),
    count(roles.user),
    count(roles.assistant),
    count(roles.toolResult),
    count(stats.branchPoints),
    count(tokens.input),
    count(tokens.output),
    count(tokens.cacheRead),
    cost_text(stats.cost)
  )
end

local HEADER_LINES = 4

--- The fold level of a line (the buffer's foldexpr): blocks are folds, closed when drawn.
function M.foldexpr(lnum)
  local state = views[vim.api.nvim_get_current_buf()]
  local kind = state and state.kinds and state.kinds[lnum]
  if kind == 'fold' then
    return '>1'
  elseif kind == 'body' then
    return '1'
  end
  return '0'
end

local KIND_HL = { head = 'Title', sep = 'WarningMsg', switch = 'Special', fold = 'Comment', more = 'Comment' }

--- Draw the buffer from what is loaded; the cursor stays on the entry it was on (or goes to `focus`).
local function render(buf, focus)
  local state = views[buf]
  if not state or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local win = vim.fn.win_findbuf(buf)[1]
  local keep
  if win and not focus then
    local at = state.line_item and state.line_item[vim.api.nvim_win_get_cursor(win)[1]]
    keep = at and at.index
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(state.source), ':t')
  local target = state.entry_id == nil and 'the path to the leaf (it follows the session)'
    or (state.descend and ('the path through entry %s'):format(str(state.entry_id)) or ('the path to entry %s'):format(str(state.entry_id)))
  local lines = {
    ('Session view of %s · %s'):format(name, target),
    state.stats_line or 'totals: …',
    '<CR> open line  ]b/[b next/previous branch  gb branches  c context  gl leaf  r refresh  q close  zo/zc folds',
    state.error and ('error: ' .. state.error) or (state.loading and 'Loading…' or ''),
  }
  local kinds, line_item = {}, {}
  if state.start > 0 then
    table.insert(lines, ('… %d earlier entries (<CR> to load)'):format(state.start))
    kinds[#lines] = 'more'
    line_item[#lines] = { more = 'before' }
  end
  for i, item in ipairs(state.items) do
    local index = state.start + i - 1
    for _, pair in ipairs(M.entry_lines(item, index)) do
      table.insert(lines, pair[1])
      kinds[#lines] = pair[2]
      line_item[#lines] = { index = index, item = item, kind = pair[2] }
    end
  end
  local finish = state.start + #state.items
  if finish < state.total then
    table.insert(lines, ('… %d more entries (<CR> to load)'):format(state.total - finish))
    kinds[#lines] = 'more'
    line_item[#lines] = { more = 'after' }
  elseif #state.items > 0 and type(state.items[#state.items].childIds) == 'table' and #state.items[#state.items].childIds > 0 then
    table.insert(lines, '… the path goes on below this entry (<CR> to continue to a leaf)')
    kinds[#lines] = 'more'
    line_item[#lines] = { more = 'continue' }
  end
  state.kinds, state.line_item = kinds, line_item
  scratch.set_lines(buf, lines)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for i = 1, HEADER_LINES do
    vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { end_col = #lines[i], hl_group = 'Comment' })
  end
  for lnum, kind in pairs(kinds) do
    local group = KIND_HL[kind]
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, lnum - 1, 0, { end_col = #lines[lnum], hl_group = group })
    end
  end
  if win then
    vim.api.nvim_win_call(win, function()
      vim.cmd('silent! normal! zX') -- folds anew from the fold levels, closed (foldlevel 0)
    end)
    local want = focus or keep
    if want ~= nil then
      for lnum = HEADER_LINES + 1, #lines do
        local at = line_item[lnum]
        if at and at.index == want then
          vim.api.nvim_win_set_cursor(win, { lnum, 0 })
          break
        end
      end
    end
  end
  if state.on_render then
    state.on_render()
  end
end

local function path_params(state, offset, limit)
  local params = { offset = math.max(0, offset), limit = limit or config.options.view_page_size }
  if state.entry_id ~= nil then
    params.entryId = state.entry_id
  end
  if state.descend then
    params.descend = true
  end
  return params
end

local follow, follow_missed

--- Ask for a page of the path; how: 'replace' (show it alone), 'append', 'prepend', 'follow'.
local function load(buf, offset, how, focus, limit)
  local state = views[buf]
  if not state or (state.loading and how ~= 'replace') then
    return
  end
  state.loading = true
  state.generation = (state.generation or 0) + 1
  local generation = state.generation
  require('pi_session').request(state.source, 'pi/getPath', path_params(state, offset, limit), function(err, page)
    vim.schedule(function()
      if views[buf] ~= state or state.generation ~= generation then
        return
      end
      state.loading = false
      if err or type(page) ~= 'table' then
        state.error = err and (err.message or vim.inspect(err)) or 'no answer'
        render(buf)
        return follow_missed(buf)
      end
      state.error = nil
      local items = type(page.items) == 'table' and page.items or {}
      state.total = page.total or #items
      if how == 'append' then
        vim.list_extend(state.items, items)
      elseif how == 'prepend' then
        local keep = {}
        for _, item in ipairs(items) do
          if page.offset + #keep < state.start then
            table.insert(keep, item)
          end
        end
        vim.list_extend(keep, state.items)
        state.items, state.start = keep, page.offset
      elseif how == 'follow' then
        local last = state.items[#state.items]
        local first = items[1]
        if last and first and page.offset == state.start + #state.items - 1 and require('pi_session.lazy').same_id(first.entry.id, last.entry.id) then
          vim.list_extend(state.items, vim.list_slice(items, 2))
        else
          state.items, state.start = items, page.offset -- the path changed: show it anew
        end
      else
        state.items, state.start = items, page.offset
      end
      render(buf, focus)
      follow_missed(buf)
    end)
  end)
end

--- After a load: what pi appended while it was on its way (a change then waits, see follow).
function follow_missed(buf)
  local state = views[buf]
  local missed = state and state.missed_change
  if missed then
    state.missed_change = nil
    follow(buf, missed)
  end
end

--- pi appended ``appended`` entries: when the view shows the end of the path to the leaf, take them
--- in; while a page is on its way, once it is shown.
function follow(buf, appended)
  local state = views[buf]
  if not state or state.entry_id ~= nil then
    return
  end
  if state.loading then
    state.missed_change = (state.missed_change or 0) + appended
    return
  end
  local finish = state.start + #state.items
  if finish >= state.total then
    load(buf, math.max(0, finish - 1), 'follow')
  else
    state.total = state.total + appended
    render(buf)
  end
end

--- The totals (pi/getStats), one request at a time: the changes while one is on its way (pi
--- appending turn after turn; on a big session the totals take a while) share one more after it.
local function load_stats(buf)
  local state = views[buf]
  if not state then
    return
  end
  if state.stats_loading then
    state.stats_again = true
    return
  end
  state.stats_loading = true
  require('pi_session').request(state.source, 'pi/getStats', {}, function(err, stats)
    vim.schedule(function()
      if views[buf] ~= state then
        return
      end
      state.stats_loading = false
      state.stats_line = err and ('totals: ' .. tostring(err.message or err)) or M.stats_line(stats)
      render(buf)
      if state.stats_again then
        state.stats_again = false
        load_stats(buf)
      end
    end)
  end)
end

--- Show the path anew: from `offset`, or its end (`at_end`), the cursor on `focus` (an index).
local function show(buf, offset, focus, at_end)
  local state = views[buf]
  if not state then
    return
  end
  if not at_end then
    return load(buf, offset or 0, 'replace', focus)
  end
  state.loading = true
  require('pi_session').request(state.source, 'pi/getPath', path_params(state, 2 ^ 40, 1), function(err, probe)
    vim.schedule(function()
      local total = (not err and type(probe) == 'table' and probe.total) or 0
      local page = config.options.view_page_size
      state.loading = false
      load(buf, math.max(0, total - page), 'replace', math.max(0, total - 1))
    end)
  end)
end

--- Pages that scroll into view load by themselves.
local function load_visible(buf)
  local state = views[buf]
  local win = vim.fn.win_findbuf(buf)[1]
  if not state or not state.line_item or not win or state.loading then
    return
  end
  for lnum = vim.fn.line('w0', win), vim.fn.line('w$', win) do
    local at = state.line_item[lnum]
    if at and at.more == 'after' then
      return load(buf, state.start + #state.items, 'append')
    elseif at and at.more == 'before' then
      local offset = math.max(0, state.start - config.options.view_page_size)
      return load(buf, offset, 'prepend', nil, state.start - offset)
    end
  end
end

local function at_cursor(buf)
  local state = views[buf]
  return state and state.line_item and state.line_item[vim.api.nvim_win_get_cursor(0)[1]], state
end

--- The entry with a branch switcher at or above the cursor.
local function fork_at_cursor(buf)
  local state = views[buf]
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  for l = lnum, HEADER_LINES + 1, -1 do
    local at = state.line_item[l]
    if at and at.item and type(at.item.siblingIds) == 'table' and #at.item.siblingIds > 1 then
      return at
    end
  end
  return nil
end

--- The view's state and the branch point at or above the cursor, or nil (with a warning).
local function fork_here()
  local buf = vim.api.nvim_get_current_buf()
  local state = views[buf]
  local at = state and fork_at_cursor(buf)
  if state and not at then
    vim.notify('pi-session: no branch point on the path above the cursor', vim.log.levels.WARN)
  end
  return buf, state, at
end

--- Switch to another branch: the path through `target`, down to a leaf.
local function switch_to(buf, target, index)
  local state = views[buf]
  state.entry_id, state.descend = target, true
  show(buf, math.max(0, index - 3), index)
end

--- ]b / [b: the next or previous branch at the branch point at or above the cursor.
function M.cycle(step)
  local buf, _, at = fork_here()
  if not at then
    return
  end
  local siblings = at.item.siblingIds
  local position
  for i, id in ipairs(siblings) do
    if require('pi_session.lazy').same_id(id, at.item.entry.id) then
      position = i
    end
  end
  local target = siblings[((position or 1) - 1 + step) % #siblings + 1]
  switch_to(buf, target, at.index)
end

--- gb: pick a branch at the branch point at or above the cursor (with the previews of pi's tree).
function M.pick_branch()
  local buf, state, at = fork_here()
  if not at then
    return
  end
  local parent = at.item.entry.parentId
  local params = { filter = 'none', limit = 500 }
  if present(parent) then
    params.rootId, params.depth = parent, 1
  else
    params.depth = 0
  end
  require('pi_session').request(state.source, 'pi/getTree', params, function(err, result)
    vim.schedule(function()
      if err then
        return vim.notify('pi-session: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      local nodes = type(result) == 'table' and result.nodes or {}
      if present(parent) then
        nodes = vim.list_slice(nodes, 2)
      end
      vim.ui.select(nodes, {
        prompt = 'Branch',
        format_item = function(node)
          return (node.onLeafPath and '* ' or '  ') .. tostring(node.preview or node.id)
        end,
      }, function(node)
        if node then
          switch_to(buf, node.id, at.index)
        end
      end)
    end)
  end)
end

--- <CR>: load what a "…" line stands for, or open the entry's line in the session buffer.
function M.activate()
  local buf = vim.api.nvim_get_current_buf()
  local at, state = at_cursor(buf)
  if not at then
    return
  end
  if at.more == 'after' then
    return load(buf, state.start + #state.items, 'append')
  elseif at.more == 'before' then
    local offset = math.max(0, state.start - config.options.view_page_size)
    return load(buf, offset, 'prepend', nil, state.start - offset)
  elseif at.more == 'continue' then
    local last = state.items[#state.items]
    state.entry_id, state.descend = last.entry.id, true
    return show(buf, math.max(0, state.start + #state.items - 3), state.start + #state.items - 1)
  end
  local line = at.item and at.item.line
  if type(line) == 'number' then
    scratch.jump(state.source, buf, line, 'aboveleft split')
  end
end

--- The entry under the cursor (for :PiSessionContext and the like).
function M.node_under_cursor()
  local at = at_cursor(vim.api.nvim_get_current_buf())
  return at and at.item and { id = at.item.entry.id, label = at.item.label } or nil
end

function M.state(buf)
  return views[buf]
end

--- Reload the views of a session (after :PiSessionBranch: the leaf moved).
function M.refresh_for(source)
  for buf, state in pairs(views) do
    if state.source == source then
      load_stats(buf)
      show(buf, state.start)
    end
  end
end

--- pi/didChange: the totals again, and the new entries when the view follows the leaf; after a
--- move of the leaf (another view's pi/branch) the path to it anew, as after :PiSessionBranch.
function M.on_did_change(params)
  for buf, state in pairs(views) do
    if vim.api.nvim_buf_is_valid(state.source) and (params.uri == nil or require('pi_session.tree').same_file(vim.uri_from_bufnr(state.source), params.uri)) then
      load_stats(buf)
      if params.kind == 'leafMoved' then
        show(buf, state.start)
      else
        follow(buf, #(params.newEntryIds or {}))
      end
    end
  end
end

local function map_keys(buf)
  scratch.map(buf, {
    { '<CR>', M.activate, 'Open the entry line, or load what the line stands for' },
    {
      ']b',
      function()
        M.cycle(1)
      end,
      'Next branch at the branch point above',
    },
    {
      '[b',
      function()
        M.cycle(-1)
      end,
      'Previous branch at the branch point above',
    },
    { 'gb', M.pick_branch, 'Pick a branch at the branch point above' },
    {
      'gl',
      function()
        local state = views[buf]
        state.entry_id, state.descend = nil, false
        show(buf, nil, nil, true)
      end,
      'Back to the path to the leaf',
    },
    {
      'c',
      function()
        require('pi_session.context').show({})
      end,
      'The context at this entry',
    },
    {
      'r',
      function()
        load_stats(buf)
        show(buf, views[buf].start)
      end,
      'Refresh',
    },
    scratch.close_key(buf),
  })
end

--- :PiSessionView [entry id]: opens at once and fills in as the server answers.
---@param entry_id? string the path to this entry instead of the leaf
function M.open(entry_id)
  local current = vim.api.nvim_get_current_buf()
  local session = require('pi_session')
  local source = session.session_buffer(current)
  if not source then
    return vim.notify('pi-session: :PiSessionView works in a pi session buffer', vim.log.levels.ERROR)
  end
  for buf, state in pairs(views) do
    if state.source == source and vim.api.nvim_buf_is_valid(buf) then
      scratch.show(buf, 'botright split')
      state.entry_id, state.descend = entry_id, false
      show(buf, nil, nil, entry_id ~= nil)
      load_stats(buf)
      return buf
    end
  end
  local buf
  buf = scratch.create(source, 'pi-session-view', function()
    views[buf] = nil
  end, function()
    load_visible(buf)
  end)
  views[buf] = { source = source, entry_id = entry_id, descend = false, items = {}, start = 0, total = 0 }
  vim.cmd('botright split')
  vim.api.nvim_set_current_buf(buf)
  vim.wo.wrap = true
  vim.wo.linebreak = true
  vim.wo.number = false
  vim.wo.foldmethod = 'expr'
  vim.wo.foldexpr = "v:lua.require'pi_session.view'.foldexpr(v:lnum)"
  vim.wo.foldtext = ''
  vim.wo.foldlevel = 0
  vim.bo[buf].filetype = 'pi-session-view'
  map_keys(buf)
  -- the path first: requests on a session run in order, and the totals read every message
  show(buf, nil, nil, entry_id ~= nil)
  load_stats(buf)
  render(buf)
  return buf
end

return M
