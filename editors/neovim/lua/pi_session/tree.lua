-- :PiSessionTree: the session tree (pi/getTree, flat form) drawn in a scratch buffer, in the layout
-- of `pi-session tree` and pi's /tree: single-child chains stay flat, branch points fan out.
local config = require('pi_session.config')

local M = {}

local ns = vim.api.nvim_create_namespace('pi_session_tree')
local HEADER_LINES = 3

---@type table<integer, {source: integer, filter: string, rows: table<integer, table>, leaf_id: any, generation?: integer}>
local trees = {}

local function one_line(text, max)
  text = tostring(text or ''):gsub('[\r\n\t]+', ' ')
  text = vim.trim(text)
  max = max or 160
  if vim.fn.strchars(text) > max then
    text = vim.fn.strcharpart(text, 0, max - 1) .. '…'
  end
  return text
end

--- The visible tree from the flat preorder rows: a row's parent is the nearest earlier row one level up.
---@param nodes table[]
---@return table[] roots each {node=, children={}}
function M.visible_tree(nodes)
  local roots, open = {}, {}
  for _, node in ipairs(nodes) do
    local row = { node = node, children = {} }
    while #open > 0 and open[#open].node.depth >= node.depth do
      table.remove(open)
    end
    local parent = open[#open]
    if parent then
      table.insert(parent.children, row)
    else
      table.insert(roots, row)
    end
    table.insert(open, row)
  end
  return roots
end

--- The drawn tree: lines and, for each line, its node. Markers as in `pi-session tree`:
--- `*` on the path to the leaf, `[label]`, `(N branches)`, `<- leaf` (or `<- leaf (hidden below)` on the
--- nearest shown ancestor when the filter hides the leaf).
---@param nodes table[] pi/getTree flat nodes
---@param leaf_id any the result's leafId
---@return string[] lines, table[] line_nodes
function M.draw(nodes, leaf_id)
  local roots = M.visible_tree(nodes)
  -- the leaf marker goes on the leaf, or, when the filter hides it, on its deepest shown ancestor
  local marked, hidden = nil, false
  for _, node in ipairs(nodes) do
    if node.isLeaf then
      marked = node
    end
  end
  if not marked and leaf_id ~= nil and leaf_id ~= vim.NIL then
    for _, node in ipairs(nodes) do
      if node.onLeafPath and (not marked or node.depth > marked.depth) then
        marked, hidden = node, true
      end
    end
  end
  local lines, line_nodes, stack = {}, {}, {}
  for i = #roots, 1, -1 do
    local last = i == #roots
    if #roots > 1 then
      table.insert(stack, { roots[i], last and '└─ ' or '├─ ', last and '   ' or '│  ' })
    else
      table.insert(stack, { roots[i], '', '' })
    end
  end
  while #stack > 0 do
    local row, prefix, child_prefix = unpack(table.remove(stack))
    local node = row.node
    local text = one_line(node.preview)
    if text == '' then
      text = '[' .. tostring(node.type) .. ']'
    end
    local parts = { prefix, node.onLeafPath and '*' or ' ', ' ', text }
    if node.label ~= nil and node.label ~= vim.NIL then
      table.insert(parts, '  [' .. tostring(node.label) .. ']')
    end
    if #row.children > 1 then
      table.insert(parts, ('  (%d branches)'):format(#row.children))
    end
    if node == marked then
      table.insert(parts, hidden and '  <- leaf (hidden below)' or '  <- leaf')
    end
    table.insert(lines, table.concat(parts))
    table.insert(line_nodes, node)
    local children = row.children
    if #children == 1 then
      table.insert(stack, { children[1], child_prefix, child_prefix })
    else
      for i = #children, 1, -1 do
        local last = i == #children
        table.insert(stack, { children[i], child_prefix .. (last and '└─ ' or '├─ '), child_prefix .. (last and '   ' or '│  ') })
      end
    end
  end
  return lines, line_nodes
end

--- What the tree buffer says of lines pi skips (pi/getInfo's `skippedLines` and `skipped`): pi reads
--- a damaged file without a word, and what those lines held is not in the tree. nil when none are.
---@param info table|nil
---@return string|nil
function M.skipped_notice(info)
  local count = type(info) == 'table' and info.skippedLines or nil
  if type(count) ~= 'number' or count <= 0 then
    return nil
  end
  local first = type(info.skipped) == 'table' and info.skipped[1] or nil
  local where = ''
  if type(first) == 'table' and type(first.line) == 'number' then
    where = (': line %d (%s)'):format(first.line + 1, one_line(first.message, 100))
    if count > 1 then
      where = where .. (', and %d more'):format(count - 1)
    end
  end
  return ('pi skips %s of this file, so the tree lacks what %s%s. The diagnostics list %s with the repairs.'):format(
    count == 1 and '1 line' or (count .. ' lines'),
    count == 1 and 'it holds' or 'they hold',
    where,
    count == 1 and 'it' or 'them'
  )
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function highlight(buf, lines, notice)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for i = 1, math.min(HEADER_LINES, #lines) do
    local group = (notice and i == HEADER_LINES) and 'WarningMsg' or 'Comment'
    vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { end_col = #lines[i], hl_group = group })
  end
  for i = HEADER_LINES + 1, #lines do
    local line = lines[i]
    local s, e = line:find('  <%- leaf.*$')
    if s then
      vim.api.nvim_buf_set_extmark(buf, ns, i - 1, s + 1, { end_col = e, hl_group = 'WarningMsg' })
    end
    for ls, le in line:gmatch('()  %[[^%]]*%]()') do
      vim.api.nvim_buf_set_extmark(buf, ns, i - 1, ls + 1, { end_col = le - 1, hl_group = 'Special' })
    end
  end
end

--- Redraw a tree buffer from a pi/getTree result (and pi/getInfo's, for the lines pi skips).
local function render(buf, result, err, info)
  local state = trees[buf]
  if not state or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(state.source), ':t')
  local lines = {}
  local notice = not err and M.skipped_notice(info) or nil
  state.rows = {}
  if err then
    lines = {
      ('Session tree of %s · filter: %s'):format(name, state.filter),
      'error: ' .. tostring(err.message or vim.inspect(err)),
      '',
    }
  else
    local drawn, line_nodes = M.draw(result and result.nodes or {}, result and result.leafId)
    lines = {
      ('Session tree of %s · filter: %s · %d entries'):format(name, state.filter, #drawn),
      '<CR> jump  f filter  r refresh  c context  b branch  L label  q close',
      notice or '',
    }
    if #drawn == 0 then
      table.insert(lines, ('(no entries match the filter "%s")'):format(state.filter))
    end
    for i, line in ipairs(drawn) do
      table.insert(lines, line)
      state.rows[HEADER_LINES + i] = line_nodes[i]
    end
    state.leaf_id = result and result.leafId
  end
  set_lines(buf, lines)
  highlight(buf, lines, notice)
end

local function tree_params(state)
  return { filter = state.filter, form = 'flat', activeBranchFirst = true }
end

--- Reload a tree buffer (synchronously when `sync`, e.g. right after opening it). The tree comes in
--- pages (pi_session.get_tree); an older load that ends after a newer one is dropped.
function M.refresh(buf, sync)
  local state = trees[buf]
  if not state then
    return
  end
  local session = require('pi_session')
  state.generation = (state.generation or 0) + 1
  local generation = state.generation
  -- pi/getInfo says which lines pi skips; a server that cannot tell leaves the notice out
  if sync then
    local result, err = session.get_tree(state.source, tree_params(state))
    local info = not err and session.request_sync(state.source, 'pi/getInfo', {}) or nil
    render(buf, result, err, info)
  else
    session.get_tree(state.source, tree_params(state), function(err, result)
      local function draw(info)
        vim.schedule(function()
          if trees[buf] == state and state.generation == generation then
            render(buf, result, err, info)
          end
        end)
      end
      if err then
        return draw(nil)
      end
      session.request(state.source, 'pi/getInfo', {}, function(info_err, info)
        draw(not info_err and info or nil)
      end)
    end)
  end
end

--- Redraw every tree buffer of a session buffer.
function M.refresh_for(source, sync)
  for buf, state in pairs(trees) do
    if state.source == source then
      M.refresh(buf, sync)
    end
  end
end

local function same_file(uri_a, uri_b)
  if uri_a == uri_b then
    return true
  end
  local ok_a, a = pcall(vim.uri_to_fname, uri_a)
  local ok_b, b = pcall(vim.uri_to_fname, uri_b)
  return ok_a and ok_b and vim.fs.normalize(a) == vim.fs.normalize(b)
end

--- pi/didChange from the server: redraw the trees of that session.
function M.on_did_change(params)
  if type(params) ~= 'table' then
    return
  end
  vim.schedule(function()
    for buf, state in pairs(trees) do
      if vim.api.nvim_buf_is_valid(state.source) and (params.uri == nil or same_file(vim.uri_from_bufnr(state.source), params.uri)) then
        M.refresh(buf)
      end
    end
  end)
end

--- The node on the cursor row of a tree buffer.
function M.node_under_cursor()
  local state = trees[vim.api.nvim_get_current_buf()]
  if not state then
    return nil
  end
  return state.rows[vim.api.nvim_win_get_cursor(0)[1]]
end

--- <CR>: jump to the entry's line in the session buffer.
function M.jump()
  local buf = vim.api.nvim_get_current_buf()
  local state = trees[buf]
  local node = M.node_under_cursor()
  if not state or not node or type(node.line) ~= 'number' then
    return
  end
  local win = vim.fn.win_findbuf(state.source)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('wincmd p')
    if vim.api.nvim_get_current_buf() == buf then
      vim.cmd('aboveleft vsplit')
    end
    vim.api.nvim_set_current_buf(state.source)
  end
  vim.api.nvim_win_set_cursor(0, { node.line + 1, 0 })
  vim.cmd('normal! zv')
end

function M.pick_filter()
  local buf = vim.api.nvim_get_current_buf()
  local state = trees[buf]
  if not state then
    return
  end
  vim.ui.select(config.filters, {
    prompt = 'Session tree filter',
    format_item = function(mode)
      return ('%-13s %s'):format(mode, config.filter_descriptions[mode])
    end,
  }, function(choice)
    if choice then
      state.filter = choice
      M.refresh(buf, true)
    end
  end)
end

local function map_keys(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
  map('<CR>', M.jump, 'Jump to the entry')
  map('f', M.pick_filter, 'Choose the filter')
  map('r', function()
    M.refresh(buf, true)
  end, 'Refresh')
  map('c', function()
    require('pi_session.context').show({})
  end, 'Show the context at this entry')
  map('b', function()
    require('pi_session').branch()
  end, 'Branch here')
  map('L', function()
    require('pi_session').label()
  end, 'Label this entry')
  map('q', function()
    vim.api.nvim_buf_delete(buf, { force = true })
  end, 'Close')
end

--- :PiSessionTree [filter]
---@param filter? string
function M.open(filter)
  if filter and filter ~= '' and not vim.tbl_contains(config.filters, filter) then
    return vim.notify('pi-session: unknown filter ' .. filter .. ' (one of ' .. table.concat(config.filters, ', ') .. ')', vim.log.levels.ERROR)
  end
  local current = vim.api.nvim_get_current_buf()
  local source = require('pi_session').session_buffer(current)
  if not source then
    return vim.notify('pi-session: :PiSessionTree works in a pi session buffer', vim.log.levels.ERROR)
  end
  -- one tree buffer per session: reuse it
  for buf, state in pairs(trees) do
    if state.source == source and vim.api.nvim_buf_is_valid(buf) then
      if filter and filter ~= '' then
        state.filter = filter
      end
      local win = vim.fn.win_findbuf(buf)[1]
      if win then
        vim.api.nvim_set_current_win(win)
      else
        vim.cmd('botright vsplit')
        vim.api.nvim_set_current_buf(buf)
      end
      M.refresh(buf, true)
      return buf
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_name(buf, 'pi-session-tree://' .. vim.api.nvim_buf_get_name(source))
  vim.b[buf].pi_session_source = source
  trees[buf] = { source = source, filter = (filter and filter ~= '') and filter or config.options.tree_filter, rows = {} }
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      trees[buf] = nil
    end,
  })
  vim.cmd('botright vsplit')
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_width(0, math.max(50, math.floor(vim.o.columns * 0.4)))
  vim.wo.wrap = false
  vim.wo.number = false
  vim.wo.cursorline = true
  vim.bo[buf].filetype = 'pi-session-tree'
  map_keys(buf)
  M.refresh(buf, true)
  -- start on the leaf
  for lnum, node in pairs(trees[buf].rows) do
    if node.isLeaf then
      vim.api.nvim_win_set_cursor(0, { lnum, 0 })
    end
  end
  return buf
end

return M
