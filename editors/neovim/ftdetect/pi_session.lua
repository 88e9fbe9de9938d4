-- pi session files get the `pi-session` filetype, winning over the built-in `jsonl`:
--  * any .jsonl under a .pi/agent/sessions/ directory (pi's default place), and
--  * any other .jsonl whose first lines are a pi session's: a header on one of them (it may have
--    moved down), or, without one, pi entries (a session whose header is gone). A byte order mark
--    does not hide a session: the server reports it, with its repair.
-- Ordinary .jsonl files fall through to `jsonl` (a pattern returning nil does not match).

local DETECTION_LINES = 20
local ENTRY_TYPES = {
  message = true,
  model_change = true,
  thinking_level_change = true,
  compaction = true,
  branch_summary = true,
  custom = true,
  custom_message = true,
  label = true,
  session_info = true,
  usage = true,
  context_edit = true,
}

local function decode(line)
  if type(line) ~= 'string' then
    return nil
  end
  line = line:gsub('^\239\187\191', '')
  if not line:match('^%s*{') then
    return nil
  end
  local ok, value = pcall(vim.json.decode, line, { luanil = { object = true } })
  return ok and type(value) == 'table' and value or nil
end

local function is_header(value)
  return value.type == 'session' and type(value.id) == 'string'
end

local function is_entry(value, line)
  return type(value.type) == 'string'
    and ENTRY_TYPES[value.type] == true
    and type(value.id) == 'string'
    and line:find('"parentId"%s*:') ~= nil -- a null parentId decodes to nothing
    and type(value.timestamp) == 'string'
end

--- Whether the first lines of a file are a pi session's (the same rule as the VS Code extension).
local function looks_like_session(lines)
  local entries, objects = 0, 0
  for i = 1, math.min(#lines, DETECTION_LINES) do
    local line = lines[i]
    local value = decode(line)
    if value then
      if is_header(value) then
        return true
      end
      objects = objects + 1
      if is_entry(value, line) then
        entries = entries + 1
      end
    end
  end
  return entries > 0 and entries * 2 >= objects
end

vim.filetype.add({
  pattern = {
    ['.*/%.pi/agent/sessions/.*%.jsonl'] = 'pi-session',
    ['.*%.jsonl'] = {
      function(path, bufnr)
        local lines = {}
        local loaded = bufnr and bufnr > 0 and vim.api.nvim_buf_is_valid(bufnr)
        if loaded then
          lines = vim.api.nvim_buf_get_lines(bufnr, 0, DETECTION_LINES, false)
        end
        if #lines == 0 or (#lines == 1 and lines[1] == '') or (loaded and vim.bo[bufnr].fileformat == 'mac') then
          -- no buffer, or not read yet (e.g. :setfiletype from a BufNew), or read with its lines
          -- ending at "\r" (fileformat=mac): look at the file itself, whose lines end at "\n"
          local ok, read = pcall(vim.fn.readfile, path, '', DETECTION_LINES)
          lines = ok and read or {}
        end
        if looks_like_session(lines) then
          return 'pi-session'
        end
      end,
      -- above the extension rule for jsonl, below exact paths
      { priority = 10 },
    },
  },
})
