-- :PiSessionOpen[!]: pick one of pi's sessions of the current directory (of every directory with
-- !), newest first, as pi's /resume offers them, with vim.ui.select, and open its file. Nothing
-- waits: the listing comes back through a callback. The sessions come with their first message
-- cut short, never their whole text, so a listing of long sessions stays small.
local M = {}

--- The first message is cut to this many characters: a title, not the message.
M.MAX_TEXT_CHARS = 200
M.ALL_SESSIONS = 'All sessions...'

local MINUTE = 60
local HOUR = 60 * MINUTE
local DAY = 24 * HOUR
--- Older than this, a session shows its local date instead of how long ago it changed.
local RELATIVE_FOR = 7 * DAY
--- How long a server started for the picker may take to answer `initialize`.
local START_TIMEOUT_MS = 15000

local function one_line(text)
  return vim.trim((text:gsub('%s+', ' ')))
end

--- The session's name, else its first message, on one line.
function M.title(session)
  if type(session.name) == 'string' and vim.trim(session.name) ~= '' then
    return one_line(session.name)
  end
  local first = type(session.firstMessage) == 'string' and one_line(session.firstMessage) or ''
  if first == '' then
    return '(no messages)'
  end
  return session.textTruncated == true and first .. '…' or first
end

--- Seconds since the epoch of an ISO date as JSON.stringify writes it (UTC), or nil.
function M.epoch(iso)
  if type(iso) ~= 'string' then
    return nil
  end
  local y, mo, d, h, mi, s = iso:match('^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)')
  if not y then
    return nil
  end
  -- days since 1970-01-01 of a proleptic Gregorian date (no os.time: it reads local time)
  y, mo = tonumber(y), tonumber(mo)
  local yy = mo <= 2 and y - 1 or y
  local era = math.floor(yy / 400)
  local yoe = yy - era * 400
  local doy = math.floor((153 * (mo + (mo > 2 and -3 or 9)) + 2) / 5) + tonumber(d) - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * DAY + tonumber(h) * HOUR + tonumber(mi) * MINUTE + tonumber(s)
end

local function plural(count, unit)
  local digits = tostring(count):reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
  return digits .. ' ' .. unit .. (count == 1 and '' or 's')
end

--- When the session last changed: how long ago within a week, else its local date and time.
---@param modified string|nil ISO date (pi/list's `modified`; null when invalid)
---@param now integer seconds since the epoch
function M.when(modified, now)
  local time = M.epoch(modified)
  if not time then
    return 'unknown time'
  end
  local ago = now - time
  if ago < MINUTE then
    return 'just now' -- the future too: a clock ahead of this one
  elseif ago < HOUR then
    return plural(math.floor(ago / MINUTE), 'minute') .. ' ago'
  elseif ago < DAY then
    return plural(math.floor(ago / HOUR), 'hour') .. ' ago'
  elseif ago < RELATIVE_FOR then
    return plural(math.floor(ago / DAY), 'day') .. ' ago'
  end
  return os.date('%Y-%m-%d %H:%M', time)
end

--- A path under the home folder as ~/... (what a narrow picker has room for), any other as it is.
local function home_relative(path)
  return vim.fn.fnamemodify(path, ':~')
end

--- A title is never cut shorter than this many cells to make room for the file's name.
M.MIN_TITLE_CELLS = 24

--- `text` in at most `cells` display cells, its end replaced by … when cut.
local function fit(text, cells)
  if vim.fn.strdisplaywidth(text) <= cells then
    return text
  end
  local kept, used = {}, 0
  for _, char in ipairs(vim.fn.split(text, '\\zs')) do
    used = used + vim.fn.strdisplaywidth(char)
    if used > cells - 1 then
      break
    end
    table.insert(kept, char)
  end
  return (table.concat(kept):gsub('%s+$', '')) .. '…'
end

local hex = function(n)
  return ('%x'):rep(n)
end
--- pi's name for a session file: the time it was made (UTC, its `:` and `.` written `-`), `_`, the
--- session's UUID, `.jsonl`; captures the time and the UUID's first 8 and last 4 digits.
local PI_FILE_NAME = '^(%d%d%d%d%-%d%d%-%d%dT%d%d%-%d%d%-%d%d%-%d%d%dZ)_(' .. hex(8) .. ')%-' .. hex(4) .. '%-' .. hex(4) .. '%-' .. hex(4)
  .. '%-' .. hex(8) .. '(' .. hex(4) .. ')%.jsonl$'

--- A file name pi gave as its time and its UUID's first 8 and last 4 digits (the start a short id
--- is, the end random in pi's UUIDv7, where the start is the time again), in 38 cells where the
--- whole takes 67: what tells two sessions of the same minute apart, the UUID's end, stays when the
--- whole does not fit. Any other name as it is.
function M.short_name(name)
  local time, first, last = name:match(PI_FILE_NAME)
  return time and ('%s_%s…%s'):format(time, first, last) or name
end

--- One session's line. What a user knows a session by comes first, its title (name or first
--- message) and its file's name, then when it changed, its messages (and its folder in all
--- sessions), then the folder its file is in (~/... under the home folder); the item keeps the full
--- path to open. A picker cuts a line's end: within `width` display cells (no picker is wider than
--- the editor) the title is cut to leave the file's name room, the name pi gave shortened when it
--- would not fit whole (M.short_name), and the parts after the file's name that do not fit are left
--- out (no picker could show them). Without `width`, the whole line.
---@param width? integer
function M.format(session, now, with_folder, width)
  local path = tostring(session.path)
  local name = vim.fn.fnamemodify(path, ':t')
  local title = M.title(session)
  local facts = { M.when(session.modified, now), plural(tonumber(session.messageCount) or 0, 'message') }
  if with_folder and type(session.cwd) == 'string' and session.cwd ~= '' then
    table.insert(facts, home_relative(session.cwd))
  end
  local rest = { ('(%s)'):format(table.concat(facts, ' · ')), home_relative(vim.fn.fnamemodify(path, ':h')) }
  if not width then
    return table.concat(vim.list_extend({ title, name }, rest), '  ')
  end
  if M.MIN_TITLE_CELLS + 2 + vim.fn.strdisplaywidth(name) > width then
    name = M.short_name(name)
  end
  local room_for_title = math.max(M.MIN_TITLE_CELLS, width - 2 - vim.fn.strdisplaywidth(name))
  local line = fit(title, room_for_title) .. '  ' .. name
  for _, part in ipairs(rest) do
    if vim.fn.strdisplaywidth(line) + 2 + vim.fn.strdisplaywidth(part) > width then
      break
    end
    line = line .. '  ' .. part
  end
  return line
end

--- A pi_session client to ask, started (without a buffer) when none runs; callback(client, problem).
local function with_client(callback)
  local client = vim.lsp.get_clients({ name = 'pi_session' })[1]
  if not client then
    local config = vim.lsp.config.pi_session
    local id = config and vim.lsp.start(vim.tbl_extend('force', config, { name = 'pi_session' }), { attach = false, silent = true })
    client = id and vim.lsp.get_client_by_id(id)
    if not client then
      return callback(nil, 'the pi-session language server did not start (see :checkhealth pi_session)')
    end
  end
  local waited = 0
  local function ready()
    if client:is_stopped() then
      return callback(nil, 'the pi-session language server stopped (see :checkhealth pi_session)')
    elseif client.initialized then
      return callback(client)
    elseif waited >= START_TIMEOUT_MS then
      return callback(nil, 'the pi-session language server did not answer (see :checkhealth pi_session)')
    end
    waited = waited + 20
    vim.defer_fn(ready, 20)
  end
  ready()
end

local function sessions_of(result)
  if type(result) ~= 'table' then
    return {}
  end
  return vim.islist(result) and result or (type(result.sessions) == 'table' and result.sessions or {})
end

--- The listing on its way ({ client, id }), or nil. Thousands of sessions take a second or more to
--- read: a :PiSessionOpen given meanwhile replaces it, cancelled on the server ($/cancelRequest),
--- and no picker comes of it.
local pending

local function cancel_pending()
  local listing = pending
  pending = nil
  if listing and listing.id then
    listing.client:cancel_request(listing.id)
  end
end

--- :PiSessionOpen[!]: the sessions of the current directory (all of them with `all`), picked with
--- vim.ui.select; the one picked is opened with :edit.
---@param all boolean
function M.open(all)
  local cwd = vim.fn.getcwd()
  local method = all and 'pi/listAll' or 'pi/list'
  -- where pi's command line keeps sessions (its variable, this directory's sessionDir setting), as
  -- pi --resume lists them
  local params = { text = 'first', maxTextChars = M.MAX_TEXT_CHARS, cliSessionDir = true, environment = { cwd = cwd } }
  if not all then
    params.cwd = cwd
  end
  vim.api.nvim_echo({ { all and 'pi-session: reading all sessions…' or ('pi-session: reading the sessions of %s…'):format(cwd) } }, false, {})
  cancel_pending()
  local listing = { client = nil, id = nil }
  pending = listing
  with_client(function(client, problem)
    if pending ~= listing then
      return -- a later :PiSessionOpen took over while the server started
    end
    if not client then
      pending = nil
      return vim.notify('pi-session: could not list the sessions: ' .. problem, vim.log.levels.ERROR)
    end
    local _, id = client:request(method, params, function(err, result)
      if pending ~= listing then
        return -- cancelled: a later :PiSessionOpen took over
      end
      pending = nil
      vim.schedule(function()
        M.show(err, result, all, cwd)
      end)
    end)
    listing.client, listing.id = client, id
  end)
end

--- The listing's answer: a picker, or what went wrong.
function M.show(err, result, all, cwd)
  vim.api.nvim_echo({ { '' } }, false, {})
  if err then
    return vim.notify('pi-session: could not list the sessions: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end
  local sessions = sessions_of(result)
  if #sessions == 0 then
    if all then
      return vim.notify('pi-session: pi has no sessions yet (it keeps them under ~/.pi/agent/sessions, or $PI_CODING_AGENT_DIR)', vim.log.levels.INFO)
    end
    return vim.notify(('pi-session: pi has no sessions of %s yet (:PiSessionOpen! lists all)'):format(cwd), vim.log.levels.INFO)
  end
  local items = vim.list_slice(sessions)
  -- last, not first: a picker's first item is its default, and that is the newest session
  if not all then
    table.insert(items, M.ALL_SESSIONS)
  end
  local now = os.time()
  -- the editor's width less the `N: ` before each item of Neovim's own picker (inputlist), and its
  -- last column: the message area wraps a line that fills it
  local width = vim.o.columns - 1 - #('%d: '):format(#items)
  vim.ui.select(items, {
    prompt = all and 'Pi sessions of all folders' or ('Pi sessions of %s'):format(cwd),
    kind = 'pi_session',
    format_item = function(item)
      return item == M.ALL_SESSIONS and item or M.format(item, now, all, width)
    end,
  }, function(item)
    if item == M.ALL_SESSIONS then
      M.open(true)
    elseif item then
      vim.cmd.edit(vim.fn.fnameescape(item.path))
    end
  end)
end

return M
