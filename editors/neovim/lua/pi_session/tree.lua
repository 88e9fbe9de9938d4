-- :PiSessionTree: the session tree in a scratch buffer, in the layout of `pi-session tree` and pi's
-- /tree (single-child chains stay flat, branch points fan out). It loads asynchronously and lazily
-- (pi/getTree windows, see lazy.lua): the rows around the leaf and the lists down to it first,
-- further pages as they scroll into view, a branch's entries when <CR> opens it. A small session
-- shows every branch at once.
local config = require('pi_session.config')
local lazy = require('pi_session.lazy')
local scratch = require('pi_session.scratch')

local M = {}

local ns = vim.api.nvim_create_namespace('pi_session_tree')
local HEADER_LINES = 3
--- Sessions with at most this many entries open with every branch shown (as `pi-session tree` does).
M.SHOW_ALL_UP_TO = 2000

---@type table<integer, table>
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

local function present(v)
  return v ~= nil and v ~= vim.NIL
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

--- The drawn tree of what is loaded: lines and, for each, what it shows ({row=} or {load=container,
--- direction=}). Markers as in `pi-session tree`: `*` on the path to the leaf, `[label]`,
--- `(N branches)`, `<- leaf` (`<- leaf (hidden below)` on the deepest shown row of the leaf's path
--- when the filter hides the leaf).
---@return string[] lines, table[] items, boolean complete
function M.draw(tree, marker)
  local lines, items, complete = {}, {}, true
  local function emit(text, item)
    table.insert(lines, text)
    table.insert(items, item)
  end
  local function row_line(prefix, row)
    local node = row.node
    local text = one_line(node.preview)
    if text == '' then
      text = '[' .. tostring(node.type) .. ']'
    end
    local parts = { prefix, node.onLeafPath and '*' or ' ', ' ', text }
    if present(node.label) then
      table.insert(parts, '  [' .. tostring(node.label) .. ']')
    end
    if node.isBranchPoint then
      table.insert(parts, ('  (%d branches)'):format(#(node.childIds or {})))
    end
    if row == marker then
      table.insert(parts, node.isLeaf and '  <- leaf' or '  <- leaf (hidden below)')
    end
    emit(table.concat(parts), { row = row })
  end
  local chain, branches
  local function more(c, prefix, direction)
    local count = direction == 'before' and c.start or (c.total - lazy.container_end(c))
    if count > 0 then
      complete = false
      emit(('%s… %d %s (<CR> to load)'):format(prefix, count, direction == 'before' and 'earlier entries' or 'more entries'), { load = c, direction = direction })
    end
  end
  local function under(row, cont)
    local c = tree:child(row)
    if not c then
      return
    end
    if not c.loaded then
      complete = false
      emit(cont .. '… (<CR> to open)', { load = c, direction = 'open' })
    elseif c.kind == 'branches' then
      branches(c, cont)
    else
      chain(c, cont)
    end
  end
  function chain(c, prefix)
    more(c, prefix, 'before')
    for _, row in ipairs(c.rows) do
      row_line(prefix, row)
      if row.node.isBranchPoint then
        under(row, prefix)
      end
    end
    more(c, prefix, 'after')
  end
  function branches(c, base)
    more(c, base .. '├─ ', 'before')
    for _, row in ipairs(c.rows) do
      local last = row.index == c.total - 1
      row_line(base .. (last and '└─ ' or '├─ '), row)
      under(row, base .. (last and '   ' or '│  '))
    end
    more(c, base .. '└─ ', 'after')
  end
  if tree.top.roots then
    branches(tree.top, '')
  else
    chain(tree.top, '')
  end
  return lines, items, complete
end

local function highlight(buf, lines, notice, items)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for i = 1, math.min(HEADER_LINES, #lines) do
    local group = (notice and i == HEADER_LINES) and 'WarningMsg' or 'Comment'
    vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { end_col = #lines[i], hl_group = group })
  end
  for i = HEADER_LINES + 1, #lines do
    local line = lines[i]
    local item = items[i - HEADER_LINES]
    if item and item.load then
      vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { end_col = #line, hl_group = 'Comment' })
    else
      local s, e = line:find('  <%- leaf.*$')
      if s then
        vim.api.nvim_buf_set_extmark(buf, ns, i - 1, s + 1, { end_col = e, hl_group = 'WarningMsg' })
      end
      for ls, le in line:gmatch('()  %[[^%]]*%]()') do
        vim.api.nvim_buf_set_extmark(buf, ns, i - 1, ls + 1, { end_col = le - 1, hl_group = 'Special' })
      end
    end
  end
end

--- Redraw a tree buffer from what is loaded; the cursor stays on the entry it was on (or goes to
--- `focus`, a row).
local function render(buf, focus)
  local state = trees[buf]
  if not state or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local win = vim.fn.win_findbuf(buf)[1]
  local keep
  if win and not focus then
    local item = state.items and state.items[vim.api.nvim_win_get_cursor(win)[1] - HEADER_LINES]
    keep = item and item.row and item.row.key
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(state.source), ':t')
  local lines, items
  if state.error then
    lines = { ('Session tree of %s · filter: %s'):format(name, state.filter), 'error: ' .. tostring(state.error), '' }
    items = {}
  elseif not state.tree then
    lines = { ('Session tree of %s · filter: %s'):format(name, state.filter), 'Loading the tree…', '' }
    items = {}
  else
    local drawn, drawn_items, complete = M.draw(state.tree, state.marker)
    local rows = 0
    for _, item in ipairs(drawn_items) do
      rows = rows + (item.row and 1 or 0)
    end
    lines = {
      ('Session tree of %s · filter: %s · %d %s'):format(name, state.filter, rows, complete and 'entries' or 'entries shown'),
      '<CR> jump/load  f filter  r refresh  c context  b branch  L label  q close',
      state.notice or '',
    }
    if #drawn == 0 then
      -- an empty file is not a filter hiding everything
      local empty = state.entry_count == 0
      table.insert(lines, empty and '(the session has no entries yet)' or ('(no entries match the filter "%s")'):format(state.filter))
      table.insert(drawn_items, {})
    end
    vim.list_extend(lines, drawn)
    items = drawn_items
  end
  state.items = items
  scratch.set_lines(buf, lines)
  highlight(buf, lines, state.notice, items)
  if win then
    local target = focus and focus.key or keep
    for i, item in ipairs(items) do
      if target and item.row and item.row.key == target then
        vim.api.nvim_win_set_cursor(win, { HEADER_LINES + i, 0 })
        break
      end
    end
  end
  if state.on_render then
    state.on_render()
  end
end

local function tree_request(state)
  local session = require('pi_session')
  return function(params, callback)
    local full = vim.tbl_extend('force', { filter = state.filter, form = 'flat', activeBranchFirst = true }, params)
    session.request(state.source, 'pi/getTree', full, function(err, result)
      vim.schedule(function()
        callback(err, result)
      end)
    end)
  end
end

--- Loads begun anew, one after another, when the session changes while one loads; past that the
--- error is shown, and the session's next change (pi/didChange) loads it again.
M.RELOADS_ON_CHANGE = 5

--- How long a window refused because the session changed waits for the pi/didChange the change is
--- told by, when the refusal came first (then the tree follows, and the window is asked again at
--- the new revision); none by then: the tree is loaded anew.
M.CATCH_UP_WAIT_MS = 1000

local follow, load_anew

--- Reload a tree buffer, asynchronously: the top level around the leaf and each level down to it
--- (a small session: every level). One load runs at a time: the refreshes asked for while it runs
--- (pi appending turn after turn, each a pi/didChange) share one more load after it, so a session
--- that changes faster than it loads is still shown, each load a little behind the file. A load for
--- another filter, or one asked for by the user (``now``: `r`, the command again), starts at once,
--- and the one running is dropped.
---
--- ``new_leaf`` ({ id }): the change was entries appended (pi/didChange `appended`) or a move of
--- the leaf (:PiSessionBranch), and this is the leaf after it: the tree shown takes in what changed
--- (the levels that changed, asked with `since`) instead of loading anew, unless another change
--- without it comes before the load, or the server answers that it must be loaded anew, or the
--- request fails.
function M.refresh(buf, now, new_leaf)
  local state = trees[buf]
  if not state then
    return
  end
  if state.loading and not now and state.loading_filter == state.filter then
    -- the load after this one takes this change in too: it follows only if each change can be
    state.next_leaf = new_leaf and (not state.load_again or state.next_leaf) and new_leaf or nil
    state.load_again = true
    return
  end
  state.generation = (state.generation or 0) + 1
  state.load_again, state.next_leaf = false, nil
  state.loading_filter = state.filter
  if new_leaf and not now and state.tree and not state.error then
    follow(buf, state, new_leaf.id)
  else
    load_anew(buf, state)
  end
  -- the windows refused before this change was told wait for its load (see catch_up)
  local waiting = state.refresh_waiters or {}
  state.refresh_waiters = nil
  for _, wake in ipairs(waiting) do
    wake()
  end
end

--- What a load does when it ends (shown unless another started since): draw it, the windows refused
--- meanwhile that wait for it (see catch_up), and the load asked for meanwhile.
local function loaded(buf, state, tree, err, marker)
  state.loading = false
  if lazy.is_tree_changed(err) and (state.reloads or 0) < M.RELOADS_ON_CHANGE then
    -- the session changed while it loaded (its windows would be of two trees): load it anew
    state.reloads = (state.reloads or 0) + 1
    return M.refresh(buf, true)
  end
  state.reloads = 0
  state.error = err and (err.message or vim.inspect(err)) or nil
  state.tree = not err and tree or nil
  state.marker = marker
  render(buf, state.focus_leaf and marker or nil)
  state.focus_leaf = false
  local waiting = state.after_load or {}
  state.after_load = nil
  for _, waiter in ipairs(waiting) do
    waiter()
  end
  if state.load_again then
    M.refresh(buf, false, state.next_leaf)
  end
end

--- Take in the change to the tree shown (entries appended, the leaf moved: `leaf_id` the leaf
--- now); loaded anew when the server says it must be, or the request fails.
follow = function(buf, state, leaf_id)
  local generation = state.generation
  local tree = state.tree
  state.loading = true
  tree:follow(leaf_id, function(err, marker, reload)
    if trees[buf] ~= state or state.generation ~= generation then
      return
    end
    if err or reload then
      return load_anew(buf, state) -- (a load anew tells what is wrong, if anything still is)
    end
    if type(state.entry_count) == 'number' and state.entry_count <= M.SHOW_ALL_UP_TO then
      return tree:load_all(function(aerr)
        if trees[buf] == state and state.generation == generation then
          loaded(buf, state, tree, aerr, marker)
        end
      end)
    end
    loaded(buf, state, tree, nil, marker)
  end)
end

--- Load the tree anew: the top level around the leaf and each level down to it.
load_anew = function(buf, state)
  local session = require('pi_session')
  local generation = state.generation
  local tree = lazy.new(tree_request(state), config.options.tree_page_size)
  local current = function()
    return trees[buf] == state and state.generation == generation
  end
  local function finish(err, marker)
    if current() then
      loaded(buf, state, tree, err, marker)
    end
  end
  state.loading = true
  session.request(state.source, 'pi/getInfo', {}, function(info_err, info)
    vim.schedule(function()
      if not current() then
        return
      end
      info = not info_err and info or nil
      state.notice = M.skipped_notice(info)
      state.entry_count = type(info) == 'table' and info.entryCount or nil
      tree:load(tree.top, { offset = 0 }, function(err)
        if err then
          return finish(err)
        end
        local leaf = tree.leaf_id
        local function after_locate(lerr, marker)
          if lerr then
            return finish(lerr)
          end
          local count = type(info) == 'table' and info.entryCount or nil
          if type(count) == 'number' and count <= M.SHOW_ALL_UP_TO then
            tree:load_all(function(aerr)
              finish(aerr, marker)
            end)
          else
            finish(nil, marker)
          end
        end
        if present(leaf) then
          tree:locate(leaf, after_locate)
        else
          after_locate(nil, nil)
        end
      end)
    end)
  end)
end

--- Redraw every tree buffer of a session buffer; ``new_leaf`` ({ id }): its leaf moved to that
--- entry, nothing else changed (see M.refresh).
function M.refresh_for(source, new_leaf)
  for buf, state in pairs(trees) do
    if state.source == source then
      M.refresh(buf, false, new_leaf)
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
M.same_file = same_file

--- The moves of a leaf the server told (pi/didChange leafMoved): see :PiSessionBranch.
M.leaf_moves_told = 0
--- The appends the server told (pi/didChange appended): see :PiSessionLabel.
M.appends_told = 0

--- pi/didChange from the server: reload the trees of that session.
function M.on_did_change(params)
  if type(params) ~= 'table' then
    return
  end
  if params.kind == 'leafMoved' then
    M.leaf_moves_told = M.leaf_moves_told + 1
  elseif params.kind == 'appended' then
    M.appends_told = M.appends_told + 1
  end
  if params.kind == 'rewriting' then
    -- another program is writing the file again: the server keeps the session as it was and
    -- reports the finished file (reloaded) next; re-reading now would only show the old state
    return
  end
  if params.kind == 'unreadable' then
    -- the file held still without a session header (other text, a byte order mark): the server
    -- keeps the session as it was; a reload follows if a header comes back
    vim.schedule(function()
      vim.notify(
        'pi-session: ' .. tostring(params.uri or 'the session file')
          .. ' is not a session file now (no session header; pi cannot read it either): the session is shown as it was until the header is back',
        vim.log.levels.WARN
      )
    end)
    return
  end
  vim.schedule(function()
    for buf, state in pairs(trees) do
      if vim.api.nvim_buf_is_valid(state.source) and (params.uri == nil or same_file(vim.uri_from_bufnr(state.source), params.uri)) then
        -- entries appended (pi writing a turn) or the leaf moved (another view's pi/branch): the tree
        -- takes in what changed, else (no leaf now, any other change) it loads anew
        local moved = params.kind == 'appended' or params.kind == 'leafMoved'
        M.refresh(buf, false, moved and present(params.leafId) and { id = params.leafId } or nil)
      end
    end
    require('pi_session.view').on_did_change(params)
  end)
end

--- The node on the cursor row of a tree buffer.
function M.node_under_cursor()
  local state = trees[vim.api.nvim_get_current_buf()]
  if not state or not state.items then
    return nil
  end
  local item = state.items[vim.api.nvim_win_get_cursor(0)[1] - HEADER_LINES]
  return item and item.row and item.row.node or nil
end

--- After a window of `tree` was refused because the session changed (`err`: TreeChanged, naming
--- its revision now): pi appended, and the tree takes that in (follow) when pi/didChange tells it,
--- which may be before the refusal comes back, while it does, or after it (then the refusal waits
--- for it, up to M.CATCH_UP_WAIT_MS). Once the tree has followed to the revision the refusal names
--- (the load running then ended first), `ask` again, at that revision; else (the follow answered
--- that the tree must be loaded anew, failed, or none came) the tree is loaded anew. Nothing when
--- another tree is shown by then (it was loaded anew already).
local function catch_up(buf, state, tree, err, ask)
  local revision = type(err.data) == 'table' and err.data.revision or nil
  local function decide()
    if trees[buf] ~= state or state.tree ~= tree then
      return
    end
    if type(revision) == 'string' and tree.revision == revision then
      return ask()
    end
    M.refresh(buf)
  end
  local function after_load()
    state.after_load = state.after_load or {}
    table.insert(state.after_load, decide)
  end
  if type(revision) == 'string' and tree.revision ~= revision and state.tree == tree then
    if state.loading then
      return after_load()
    end
    -- the change is not told yet: its refresh (the next one) is waited for, a while
    local waited = false
    state.refresh_waiters = state.refresh_waiters or {}
    table.insert(state.refresh_waiters, function()
      if not waited then
        waited = true
        if state.loading then
          after_load()
        else
          decide()
        end
      end
    end)
    vim.defer_fn(function()
      if not waited then
        waited = true
        decide()
      end
    end, M.CATCH_UP_WAIT_MS)
    return
  end
  decide()
end

--- Load what a placeholder line stands for (a page, or a branch's entries), then redraw.
local function load_item(buf, item)
  local state = trees[buf]
  if not state or not state.tree or item.busy then
    return
  end
  item.busy = true
  local tree = state.tree
  local asked = 0
  local ask
  local function done(err)
    if lazy.is_tree_changed(err) then
      -- the session changed: asked again once the tree has followed, else it is loaded anew (this
      -- page with it); once only, a session that keeps changing is not chased
      if asked == 1 then
        return catch_up(buf, state, tree, err, ask)
      end
      if state.tree == tree then
        M.refresh(buf)
      end
      return
    end
    if err then
      vim.notify('pi-session: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    if state.tree == tree then
      render(buf)
    end
  end
  ask = function()
    asked = asked + 1
    if item.direction == 'open' then
      tree:ensure_loaded(item.load, done)
    else
      tree:load_more(item.load, item.direction, done)
    end
  end
  ask()
end

--- Placeholders that scroll into view load by themselves ("load as you scroll").
local function load_visible(buf)
  local state = trees[buf]
  local win = vim.fn.win_findbuf(buf)[1]
  if not state or not state.items or not win then
    return
  end
  local first, last = vim.fn.line('w0', win), vim.fn.line('w$', win)
  for lnum = first, last do
    local item = state.items[lnum - HEADER_LINES]
    if item and item.load and item.direction ~= 'open' then
      return load_item(buf, item)
    end
  end
end

--- <CR>: load a placeholder, or jump to the entry's line in the session buffer.
function M.activate()
  local buf = vim.api.nvim_get_current_buf()
  local state = trees[buf]
  if not state or not state.items then
    return
  end
  local item = state.items[vim.api.nvim_win_get_cursor(0)[1] - HEADER_LINES]
  if item and item.load then
    return load_item(buf, item)
  end
  local node = item and item.row and item.row.node
  if node and type(node.line) == 'number' then
    scratch.jump(state.source, buf, node.line, 'aboveleft vsplit')
  end
end
M.jump = M.activate

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
      state.focus_leaf = true
      M.refresh(buf)
    end
  end)
end

local function map_keys(buf)
  scratch.map(buf, {
    { '<CR>', M.activate, 'Jump to the entry, or load what the line stands for' },
    { 'f', M.pick_filter, 'Choose the filter' },
    {
      'r',
      function()
        M.refresh(buf, true)
      end,
      'Refresh',
    },
    {
      'c',
      function()
        require('pi_session.context').show({})
      end,
      'Show the context at this entry',
    },
    {
      'b',
      function()
        require('pi_session').branch()
      end,
      'Branch here',
    },
    {
      'L',
      function()
        require('pi_session').label()
      end,
      'Label this entry',
    },
    scratch.close_key(buf),
  })
end

--- The state of a tree buffer (for tests and the commands that act on its rows).
function M.state(buf)
  return trees[buf]
end

--- :PiSessionTree [filter]: opens at once; the tree fills in when the server answers.
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
      scratch.show(buf, 'botright vsplit')
      state.focus_leaf = true
      M.refresh(buf, true)
      return buf
    end
  end
  local buf
  buf = scratch.create(source, 'pi-session-tree', function()
    trees[buf] = nil
  end, function()
    load_visible(buf)
  end)
  trees[buf] = { source = source, filter = (filter and filter ~= '') and filter or config.options.tree_filter, focus_leaf = true }
  vim.cmd('botright vsplit')
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_width(0, math.max(50, math.floor(vim.o.columns * 0.4)))
  vim.wo.wrap = false
  vim.wo.number = false
  vim.wo.cursorline = true
  vim.bo[buf].filetype = 'pi-session-tree'
  map_keys(buf)
  render(buf)
  M.refresh(buf)
  return buf
end

return M
