-- The session tree loaded a level and a page at a time (pi/getTree windows), asynchronously, in the
-- layout of pi's /tree: a single-child chain is one flat list, a branch point fans out into its
-- branches, and each branch's continuation hangs under the branch's first entry (its head).
--
-- Each list is a container:
--   top       the root's chain (`chain = true`), or the roots when there are several (each a head)
--   chain     the continuation of a branch: the chain from the head's only child (`rootId`, `chain`)
--   branches  the branches of a branch point (`rootId` = the branch point, `depth = 1`, its own row
--             skipped), each the head of a branch
-- A container holds one window [start, start + #rows) of its rows; the view asks for more pages.
local M = {}

M.PAGE = 200
--- Rows of each level when the view opens down to an entry (`locate`): the levels of a long session
--- (hundreds) come at once, each with the rows around its row on the path; the rest load on demand.
M.LEVEL_PAGE = 50

--- The error code of a window refused because the session changed since the tree's first window
--- (TreeChanged, data.revision the revision now): its rows would be of another tree than those
--- loaded. The window is asked again once the tree has followed the change, else the tree is loaded
--- anew (see tree.lua).
M.TREE_CHANGED = -32015

function M.is_tree_changed(err)
  return type(err) == 'table' and err.code == M.TREE_CHANGED
end

local function is_number(v)
  return type(v) == 'number'
end

local function child_ids(node)
  return type(node.childIds) == 'table' and node.childIds or {}
end

--- Same entry id (ids of a damaged file may be any JSON value).
function M.same_id(a, b)
  return a == b or (type(a) == 'table' and type(b) == 'table' and vim.deep_equal(a, b))
end

--- A table key of an entry id: equal for ids same_id tells equal (and for no others).
local function id_key(id)
  return type(id) == 'string' and ('s' .. id) or ('j' .. vim.json.encode(id))
end

--- The keys (id_key) of a list of ids a reply gave (none when it is not a list).
local function id_keys(ids)
  local keys = {}
  for _, id in ipairs(type(ids) == 'table' and ids or {}) do
    keys[id_key(id)] = true
  end
  return keys
end

function M.container(kind, owner, root_id)
  return { kind = kind, owner = owner, root_id = root_id, rows = {}, start = 0, total = 0, loaded = false, roots = false }
end

function M.container_end(c)
  return c.start + #c.rows
end

--- Does the row hang a list of its own under it?
function M.has_children(row)
  return row.node.isBranchPoint == true or (row.head and #child_ids(row.node) == 1)
end

local Tree = {}
Tree.__index = Tree

--- request(params, callback(err, result)) sends one pi/getTree window request.
function M.new(request, page_size)
  page_size = page_size or M.PAGE
  return setmetatable({
    request = request,
    page_size = page_size,
    level_size = math.min(page_size, M.LEVEL_PAGE),
    top = M.container('top'),
    leaf_id = nil,
    -- the session's revision the loaded rows were cut from (the first reply's): every window after
    -- it is asked with it, so that one of a session changed meanwhile is refused (TREE_CHANGED)
    -- instead of joining another tree's rows to these
    revision = nil,
    -- the levels of the last `levels` reply taken in whole: { revision, rows } (the row on the path
    -- in each level, whose list is the next level): what `follow` asks the changes since
    held_levels = nil,
  }, Tree)
end

--- Forget the rows a container holds (they are loaded anew).
local function clear(c)
  c.rows, c.start, c.total, c.loaded = {}, 0, 0, false
end

--- The revision of the first reply that gives one (a server that gives none is asked without).
function Tree:note_revision(revision)
  if self.revision == nil and type(revision) == 'string' then
    self.revision = revision
  end
end

--- The list under a row, made on first use (nil: the row has none).
function Tree:child(row)
  if row.children then
    return row.children
  end
  if not M.has_children(row) then
    return nil
  end
  if row.node.isBranchPoint then
    row.children = M.container('branches', row, row.node.id)
  else
    row.children = M.container('chain', row, child_ids(row.node)[1])
  end
  return row.children
end

local function window_params(c)
  if c.kind == 'top' then
    return { chain = true }
  elseif c.kind == 'chain' then
    return { rootId = c.root_id, chain = true }
  end
  return { rootId = c.root_id, depth = 1 }
end

local function key_of(c)
  return c.owner and (c.owner.key .. '>') or 'top'
end

local function merge(c, start, nodes, total)
  if c.kind == 'top' then
    -- in a chain the row at index i has depth i; the roots of several trees all have depth 0
    c.roots = false
    if total > 1 then
      for i, node in ipairs(nodes) do
        if node.depth ~= start + i - 1 then
          c.roots = true
        end
      end
    end
  end
  local head = c.kind == 'branches' or (c.kind == 'top' and c.roots)
  local rows = {}
  for i, node in ipairs(nodes) do
    local index = start + i - 1
    rows[i] = { node = node, container = c, index = index, head = head, key = key_of(c) .. index }
  end
  local touches = c.loaded and c.total == total and start <= M.container_end(c) and start + #rows >= c.start
  if not touches then
    c.rows, c.start = rows, start
  else
    local kept = {}
    for _, row in ipairs(c.rows) do
      kept[row.index] = row
    end
    local merged = {}
    for _, row in ipairs(c.rows) do
      if row.index < start then
        table.insert(merged, row)
      end
    end
    for _, row in ipairs(rows) do
      local old = kept[row.index]
      if old and M.same_id(old.node.id, row.node.id) then
        old.node = row.node -- a row loaded before keeps its loaded children
        table.insert(merged, old)
      else
        table.insert(merged, row)
      end
    end
    for _, row in ipairs(c.rows) do
      if row.index >= start + #rows then
        table.insert(merged, row)
      end
    end
    c.rows, c.start = merged, math.min(c.start, start)
  end
  c.total = total
  c.loaded = true
end

--- Do two rows of one entry hang the same list under them (see Tree:child)?
local function same_list(before, now)
  if (before.isBranchPoint == true) ~= (now.isBranchPoint == true) then
    return false
  end
  return now.isBranchPoint == true or M.same_id(child_ids(before)[1], child_ids(now)[1])
end

--- A row kept at another place in its list: its index and key, and the keys below it, are the place's.
local function moved(row, index, key)
  row.index, row.key = index, key
  local stack = { row.children }
  while #stack > 0 do
    local c = table.remove(stack)
    for _, below in ipairs(c.rows) do
      below.key = key_of(c) .. below.index
      if below.children then
        table.insert(stack, below.children)
      end
    end
  end
end

--- After a level sent again replaced what `c` held (`held`: its rows before): each row of the same
--- entry keeps its table, and the list opened under it (a branch the user opened, whose rows the
--- server did not change) while the row still has that list, wherever it is in the list now (a
--- branch to an older entry puts the branch on the path first). A row that moved takes the key of
--- its place. Rows the level no longer has go: the server tells nothing of them. Where ids repeat
--- (a damaged file) a row keeps its table only at the same place.
local function keep_held(c, held)
  local by_id, repeated = {}, {}
  for _, row in ipairs(held) do
    local key = id_key(row.node.id)
    repeated[key] = by_id[key] ~= nil or nil
    by_id[key] = row
  end
  for i, row in ipairs(c.rows) do
    local key = id_key(row.node.id)
    local old = by_id[key]
    if old and old.head == row.head and not (repeated[key] and old.index ~= row.index) then
      if old.children and not same_list(old.node, row.node) then
        old.children = nil
      end
      old.node = row.node
      if old.index ~= row.index then
        moved(old, row.index, row.key)
      end
      c.rows[i] = old
    end
  end
end

--- Take the server's reply for a window of `c` (asked from `offset`, the skipped rows included);
--- the index (in the container) of the row on the path to the window's aroundId, if any.
local function apply(c, offset, result)
  local skip = c.kind == 'branches' and 1 or 0
  local nodes = type(result.nodes) == 'table' and result.nodes or {}
  local first = is_number(result.offset) and result.offset or offset
  if first < skip then
    nodes = vim.list_slice(nodes, skip - first + 1)
    first = skip
  end
  local total = math.max(0, (is_number(result.total) and result.total or #nodes) - skip)
  local around = nil
  if is_number(result.aroundIndex) and result.aroundIndex >= skip then
    around = result.aroundIndex - skip
  end
  merge(c, first - skip, nodes, total)
  return around
end

--- Load a page of `c`: at opts.offset, or around the row on the path to opts.around_id.
--- callback(err, around_index): the index (in the container) of the row on that path, if any.
function Tree:load(c, opts, callback)
  opts = opts or {}
  local skip = c.kind == 'branches' and 1 or 0
  local limit = math.max(1, opts.limit or self.page_size)
  local params = vim.tbl_extend('force', window_params(c), { offset = (opts.offset or 0) + skip, limit = limit + skip })
  if opts.around_id ~= nil then
    params.aroundId = opts.around_id
  end
  params.revision = self.revision
  self.request(params, function(err, result)
    if err then
      return callback(err)
    end
    result = type(result) == 'table' and result or {}
    self:note_revision(result.revision)
    if c == self.top then
      self.leaf_id = result.leafId
    end
    callback(nil, apply(c, params.offset, result))
  end)
end

--- The next page after (or before) the loaded window.
function Tree:load_more(c, direction, callback)
  if direction == 'after' then
    return self:load(c, { offset = M.container_end(c) }, callback)
  end
  local offset = math.max(0, c.start - self.page_size)
  self:load(c, { offset = offset, limit = c.start - offset }, callback)
end

function Tree:ensure_loaded(c, callback)
  if c.loaded then
    return callback(nil)
  end
  self:load(c, { offset = 0 }, callback)
end

local function row_at(c, index)
  if index == nil then
    return nil
  end
  for _, r in ipairs(c.rows) do
    if r.index == index then
      return r
    end
  end
  return nil
end

--- Is `level` (of a `levels` reply) the server's window of `c`? (The same layout on both sides.)
local function is_window_of(c, level)
  return level.kind == c.kind and (c.kind == 'top' or M.same_id(level.rootId, c.root_id))
end

--- Load the lists down the path to an entry (around it at each level); callback(err, row): its
--- row, or the deepest shown row on its path when the filter hides it. Every level comes in one
--- `levels` reply (a session with thousands of branch points on the path took thousands of
--- requests); what it leaves out (or a server that does not know `levels`) is asked level by level.
function Tree:locate(entry_id, callback)
  local params = { levels = true, aroundId = entry_id, limit = self.level_size, revision = self.revision }
  self.request(params, function(err, reply)
    if M.is_tree_changed(err) then
      return callback(err)
    end
    if err or type(reply) ~= 'table' or type(reply.levels) ~= 'table' then
      return self:descend(self.top, entry_id, nil, callback)
    end
    self.leaf_id = reply.leafId
    self:note_revision(reply.revision)
    self:take_levels(entry_id, reply, self.top, {}, false, callback)
  end)
end

--- Each level of a `levels` reply into its container, from `c` (the container of the first of them)
--- down the path, after the levels whose path rows are `above`; then callback(nil, row) as locate.
--- `anew`: each container's rows are replaced by its level's (what was held of its list goes, but
--- the rows the level still has: see keep_held).
function Tree:take_levels(entry_id, reply, c, above, anew, callback)
  local found = above[#above]
  local rows = vim.list_extend({}, above)
  local function whole(row)
    if type(reply.revision) == 'string' and reply.complete == true then
      self.held_levels = { revision = reply.revision, rows = rows }
    end
    return callback(nil, row)
  end
  for _, level in ipairs(reply.levels) do
    if not c or not is_window_of(c, level) then
      return self:descend(c, entry_id, found, callback)
    end
    local held = anew and c.rows or {}
    if anew then
      clear(c)
    end
    local around = apply(c, level.offset, level)
    keep_held(c, held)
    local row = row_at(c, around)
    if not row then
      return whole(found)
    end
    found = row
    table.insert(rows, row)
    if M.same_id(row.node.id, entry_id) then
      return whole(row)
    end
    c = self:child(row)
  end
  if reply.complete == true or not c then
    return whole(found)
  end
  self:descend(c, entry_id, found, callback)
end

--- Take in what changed since the levels the tree holds (pi appended to the session): the levels
--- down to `entry_id` (the new leaf) asked with `since`. The lists the server names stale go first
--- (loaded anew when opened); the levels the server says are as the tree holds them stay (with the
--- lists opened under them); each level after them replaces what the tree holds of its list, the
--- rows it still has keeping the lists opened under them; the rows of an entry whose label
--- changed, or that left the leaf's path or joined it (a branch to an older entry, then a turn
--- there), are changed wherever they are.
--- callback(err, row, reload): the row on the path to the entry (as locate), or reload = true when
--- the tree must be loaded anew: the server said so (not an append below the leaf, a revision it no
--- longer knows), the tree holds no whole levels reply, or the reply does not fit what it holds.
function Tree:follow(entry_id, callback)
  local held = self.held_levels
  if not held then
    return callback(nil, nil, true)
  end
  local params = { levels = true, aroundId = entry_id, limit = self.level_size, since = held.revision }
  self.request(params, function(err, reply)
    if err then
      return callback(err)
    end
    if type(reply) ~= 'table' or reply.reload == true then
      return callback(nil, nil, true)
    end
    local kept = reply.keptLevels
    if type(reply.levels) ~= 'table' or type(reply.revision) ~= 'string'
      or type(kept) ~= 'number' or kept < 0 or kept > #held.rows or kept % 1 ~= 0 then
      return callback(nil, nil, true)
    end
    local above = vim.list_slice(held.rows, 1, kept)
    local last = above[#above]
    self:drop_lists(id_keys(reply.staleLists)) -- (before the list the levels start in is found)
    local c = last == nil and self.top or self:child(last)
    self.held_levels = nil -- (until the levels are all taken in again)
    self.leaf_id = reply.leafId
    self.revision = reply.revision -- the windows asked from now on are of this tree
    self:relabel(type(reply.relabelled) == 'table' and reply.relabelled or {})
    self:mark_path(id_keys(reply.leftLeafPath), id_keys(reply.joinedLeafPath))
    if #reply.levels == 0 then
      -- every level as held: the path's row is the one before (a new leaf the filter hides)
      self.held_levels = { revision = reply.revision, rows = above }
      return callback(nil, last)
    end
    if not c then
      return callback(nil, nil, true)
    end
    self:take_levels(entry_id, reply, c, above, true, callback)
  end)
end

--- Every loaded row, the lists opened under them included.
function Tree:loaded_rows()
  local out, stack = {}, { self.top }
  while #stack > 0 do
    local c = table.remove(stack)
    for _, row in ipairs(c.rows) do
      table.insert(out, row)
      if row.children and row.children.loaded then
        table.insert(stack, row.children)
      end
    end
  end
  return out
end

--- The label of the rows of each entry named (`relabelled` of a `levels` reply with `since`).
function Tree:relabel(changed)
  if #changed == 0 then
    return
  end
  for _, row in ipairs(self:loaded_rows()) do
    for _, c in ipairs(changed) do
      if type(c) == 'table' and M.same_id(c.id, row.node.id) then
        local node = vim.deepcopy(row.node)
        node.label, node.labelTimestamp = c.label, c.labelTimestamp
        row.node = node
      end
    end
  end
end

--- Drop the list under each row of an entry named (`staleLists`: its rows changed otherwise).
function Tree:drop_lists(stale)
  if next(stale) == nil then
    return
  end
  for _, row in ipairs(self:loaded_rows()) do
    if stale[id_key(row.node.id)] then
      row.children = nil
    end
  end
end

--- The rows of the entries that left the leaf's path (neither on it nor the leaf now) or joined it.
function Tree:mark_path(left, joined)
  if next(left) == nil and next(joined) == nil then
    return
  end
  for _, row in ipairs(self:loaded_rows()) do
    local key = id_key(row.node.id)
    if left[key] or joined[key] then
      local node = vim.deepcopy(row.node)
      node.onLeafPath = joined[key] == true
      if left[key] then
        node.isLeaf = false
      end
      row.node = node
    end
  end
end

--- Load the lists from `c` down the path to an entry, a request per level.
function Tree:descend(c, entry_id, found, callback)
  local function step(container, level)
    if not container or level > 10000 then
      return callback(nil, found)
    end
    self:load(container, { around_id = entry_id, limit = self.level_size }, function(err, index)
      if err then
        return callback(err, found)
      end
      local row = row_at(container, index)
      if not row then
        return callback(nil, found)
      end
      found = row
      if M.same_id(row.node.id, entry_id) then
        return callback(nil, row)
      end
      step(self:child(row), level + 1)
    end)
  end
  step(c, 0)
end

--- Load every list that is not loaded yet (a small session shows all its branches, as pi does);
--- callback(err) once all are in.
function Tree:load_all(callback)
  local function pending()
    local stack, out = { self.top }, {}
    while #stack > 0 do
      local c = table.remove(stack)
      if not c.loaded then
        table.insert(out, c)
      else
        for _, row in ipairs(c.rows) do
          local child = self:child(row)
          if child then
            table.insert(stack, child)
          end
        end
      end
    end
    return out
  end
  local function round()
    local todo = pending()
    if #todo == 0 then
      return callback(nil)
    end
    local left, failed = #todo, nil
    for _, c in ipairs(todo) do
      self:load(c, { offset = 0 }, function(err)
        failed = failed or err
        left = left - 1
        if left == 0 then
          if failed then
            return callback(failed)
          end
          round()
        end
      end)
    end
  end
  round()
end

return M
