-- Headless test of the pi_session plugin in real Neovim (0.11+) against the real server:
--   nvim --headless -u NONE -i NONE -l editors/neovim/tests/run.lua
-- Environment: PI_SESSION_TEST_CLI  the CLI prefix as a JSON array (default: the repo's .venv python -m
--              pi_session_server); PI_SESSION_TEST_FIXTURES  the fixtures folder (tests/editors/fixtures).
-- Prints one line per test and closes with "N passed, M failed"; exit code 0 only when all pass.

local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, 'S').source:sub(2)))
local plugin_root = vim.fs.dirname(here)
local repo = vim.fs.dirname(vim.fs.dirname(plugin_root))
local fixtures = os.getenv('PI_SESSION_TEST_FIXTURES') or (repo .. '/tests/editors/fixtures')
local cli = os.getenv('PI_SESSION_TEST_CLI')
cli = cli and vim.json.decode(cli) or { repo .. '/.venv/bin/python', '-m', 'pi_session_server' }
local TIMEOUT = tonumber(os.getenv('PI_SESSION_TEST_TIMEOUT_MS') or '') or 20000

-- a fresh workspace with copies of the fixtures (the label test writes to its session file)
local work = vim.fn.tempname()
local function copy(from, to)
  vim.fn.mkdir(vim.fs.dirname(to), 'p')
  vim.fn.writefile(vim.fn.readfile(from, 'b'), to, 'b')
  return to
end
local session_path = copy(fixtures .. '/broken-session.jsonl', work .. '/elsewhere/broken-session.jsonl')
local ordinary_path = copy(fixtures .. '/ordinary.jsonl', work .. '/data/ordinary.jsonl')
local agent_dir_path = work .. '/home/.pi/agent/sessions/--work-demo--/not-a-header.jsonl'
vim.fn.mkdir(vim.fs.dirname(agent_dir_path), 'p')
vim.fn.writefile({ '{"some":"thing"}' }, agent_dir_path)

-- pi's agent directory for every server the tests start: :PiSessionOpen lists its sessions, and
-- the user's own ~/.pi is never read
local agent_dir = work .. '/agent'
vim.env.PI_CODING_AGENT_DIR = agent_dir

-- the plugin, as a user's packpath/lazy.nvim would load it
vim.opt.runtimepath:prepend(plugin_root)
vim.cmd('filetype plugin on') -- a standard setup: filetype plugins and syntax highlighting
vim.cmd('syntax on')
vim.cmd('runtime! plugin/pi_session.lua')
require('pi_session').setup({ cmd = cli })

local function say(text)
  io.stdout:write(text, '\n')
  io.stdout:flush()
end

local results = { passed = 0, failed = 0 }
local function test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    results.passed = results.passed + 1
    say('ok - ' .. name)
  else
    results.failed = results.failed + 1
    say('not ok - ' .. name .. '\n    ' .. tostring(err):gsub('\n', '\n    '))
  end
end

local function eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(('%s:\n  expected %s\n  got      %s'):format(what or 'values differ', vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

local function truthy(value, what)
  if not value then
    error(what or 'expected a true value', 2)
  end
end

--- Wait until what was scheduled before this call has run (vim.schedule runs its callbacks in
--- order): what a handler would have done by now is done, however slow the machine.
local function settle()
  local done = false
  vim.schedule(function()
    done = true
  end)
  truthy(vim.wait(TIMEOUT, function()
    return done
  end, 10), 'the event loop did not come round')
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- Wait until the buffer's lines satisfy `ok` (the tree and the view load asynchronously).
local function wait_lines(buf, ok, what)
  local lines
  local done = vim.wait(TIMEOUT, function()
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    return ok(lines, table.concat(lines, '\n'))
  end, 20)
  truthy(done, (what or 'the buffer did not fill in') .. ':\n' .. table.concat(lines or {}, '\n'))
  return lines
end

--- Wait until the tree whose state is `state` has no load running (a follow or a load anew).
local function wait_tree_loaded(state)
  vim.wait(TIMEOUT, function()
    return not state.loading
  end, 20)
end

local function hover_text(result)
  local contents = result and result.contents
  if type(contents) == 'string' then
    return contents
  elseif type(contents) == 'table' then
    if contents.value then
      return contents.value
    end
    local parts = {}
    for _, c in ipairs(contents) do
      table.insert(parts, type(c) == 'string' and c or c.value)
    end
    return table.concat(parts, '\n')
  end
  return ''
end

--- The hover's text at (line, character) of buffer `buf` (0-based), from every client that answers.
local function hover_at(buf, line, character)
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = character } }
  local reply = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, TIMEOUT)
  local text = ''
  for _, r in pairs(reply or {}) do
    truthy(not r.err, 'hover error: ' .. vim.inspect(r.err))
    text = text .. hover_text(r.result)
  end
  return text
end

local session_buf, session_win

test('filetype: a .jsonl with a session header is pi-session, wherever it is', function()
  vim.cmd.edit(vim.fn.fnameescape(session_path))
  session_buf, session_win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  eq(vim.bo[session_buf].filetype, 'pi-session', 'filetype')
end)

test('filetype: any .jsonl under .pi/agent/sessions is pi-session', function()
  eq(vim.filetype.match({ filename = agent_dir_path }), 'pi-session', 'filetype')
end)

test('filetype: an ordinary .jsonl stays jsonl', function()
  eq(vim.filetype.match({ filename = ordinary_path, contents = vim.fn.readfile(ordinary_path) }), 'jsonl', 'filetype')
  local ordinary = vim.fn.bufadd(ordinary_path)
  vim.fn.bufload(ordinary)
  vim.api.nvim_buf_call(ordinary, function()
    vim.cmd('filetype detect')
  end)
  eq(vim.bo[ordinary].filetype, 'jsonl', 'filetype of the loaded buffer')
end)

test('filetype: a session without a header, with the header not first, or with a byte order mark is pi-session', function()
  for _, name in ipairs({ 'headerless-session.jsonl', 'header-second.jsonl', 'bom-session.jsonl' }) do
    local path = copy(fixtures .. '/' .. name, work .. '/damaged/' .. name)
    eq(vim.filetype.match({ filename = path, contents = vim.fn.readfile(path) }), 'pi-session', name .. ' by its lines')
    local buf = vim.fn.bufadd(path)
    vim.fn.bufload(buf)
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('filetype detect')
    end)
    eq(vim.bo[buf].filetype, 'pi-session', name .. ' loaded')
  end
end)

test('highlighting: JSON syntax for pi-session in a standard setup (syntax on, no tree-sitter JSON parser)', function()
  eq(vim.bo[session_buf].syntax, 'pi-session', 'syntax')
  local name = vim.fn.synIDattr(vim.fn.synID(1, 3, 1), 'name') -- the first key of the header
  truthy(name:match('^json'), 'no JSON highlight group at line 1, column 3: "' .. name .. '"')
  local value = vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.synID(1, 12, 1)), 'name')
  truthy(value ~= '', 'the value "session" is not highlighted')
end)

local client
test('the pi_session server attaches to the session buffer', function()
  client = require('pi_session').wait_client(session_buf, TIMEOUT)
  truthy(client, 'no pi_session client attached within the timeout')
  eq(client.name, 'pi_session', 'client name')
  eq(client.server_info and client.server_info.name, 'pi-session-server', 'serverInfo.name')
end)

test('diagnostics arrive: the cut-off line 8 is reported', function()
  local diagnostics
  local arrived = vim.wait(TIMEOUT, function()
    diagnostics = vim.diagnostic.get(session_buf)
    return #diagnostics > 0
  end, 50)
  truthy(arrived, 'no diagnostics within the timeout')
  local on_line = vim.tbl_filter(function(d)
    return d.lnum == 7
  end, diagnostics)
  truthy(#on_line >= 1, 'no diagnostic on line 8; got ' .. vim.inspect(diagnostics))
  for _, d in ipairs(diagnostics) do
    say(('    diagnostic line %d: %s'):format(d.lnum + 1, d.message))
  end
  vim.wait(500) -- a second report (push after pull) would arrive about now
  diagnostics = vim.diagnostic.get(session_buf)
  on_line = vim.tbl_filter(function(d)
    return d.lnum == 7
  end, diagnostics)
  eq(#on_line, 1, 'diagnostics on line 8 (each problem once)')
  truthy(on_line[1].message:find('JSON', 1, true), 'message: ' .. on_line[1].message)
  eq(on_line[1].severity, vim.diagnostic.severity.ERROR, 'severity')
end)

test('hover on an entry shows its summary', function()
  local params = { textDocument = { uri = vim.uri_from_bufnr(session_buf) }, position = { line = 4, character = 10 } }
  truthy(client:supports_method('textDocument/hover'), 'the server does not offer hover')
  local response, err = client:request_sync('textDocument/hover', params, TIMEOUT, session_buf)
  truthy(response and not response.err, 'hover failed: ' .. vim.inspect(response or err))
  local text = hover_text(response.result)
  say('    hover: ' .. text:gsub('\n', ' | '):sub(1, 200))
  truthy(text:find('u0000002', 1, true), 'hover does not name the entry id')
  truthy(text:find('Start with the scanner', 1, true), 'hover does not show the message text')
end)

test('code lens, inlay hints and folding are on in the session buffer', function()
  truthy(vim.lsp.inlay_hint.is_enabled({ bufnr = session_buf }), 'inlay hints are off')
  local lenses
  vim.wait(TIMEOUT, function()
    lenses = vim.lsp.codelens.get(session_buf)
    return #lenses > 0
  end, 50)
  truthy(#lenses > 0, 'no code lenses')
  local titles = vim.tbl_map(function(l)
    return l.command and l.command.title or ''
  end, lenses)
  truthy(vim.iter(titles):any(function(t)
    return t:find('leaf', 1, true) ~= nil
  end), 'no leaf lens: ' .. vim.inspect(titles))
  -- the server's codicons ("$(git-branch) 2 branches") are shown as plain glyphs
  truthy(vim.tbl_contains(titles, '⑂ 2 branches'), 'no branch lens with its glyph: ' .. vim.inspect(titles))
  truthy(not table.concat(titles, ' '):find('$(', 1, true), 'a codicon shown as text: ' .. vim.inspect(titles))
  eq(require('pi_session.config').plain_icons('$(git-branch) 2 branches · $(target) leaf · $(unknown)x'), '⑂ 2 branches · ● leaf · x', 'plain_icons')
  vim.api.nvim_set_current_win(session_win)
  eq(vim.wo.foldmethod, 'expr', 'foldmethod')
  eq(vim.wo.foldexpr, 'v:lua.vim.lsp.foldexpr()', 'foldexpr')
  local folded = vim.wait(TIMEOUT, function()
    for lnum = 1, vim.api.nvim_buf_line_count(session_buf) do
      if vim.fn.foldlevel(lnum) > 0 then
        return true
      end
    end
    return false
  end, 50)
  truthy(folded, 'no folds from the server')
end)

test('an answer a later change overtook (ContentModified) is dropped, not logged as an error', function()
  local client = assert(require('pi_session').client(session_buf))
  local log = require('vim.lsp.log')
  local log_error, logged = log.error, {}
  log.error = function(...)
    table.insert(logged, vim.inspect({ ... }))
  end
  local overtaken = { code = vim.lsp.protocol.ErrorCodes.ContentModified, message = 'The document changed after this request: ask again' }
  local ok, failure = pcall(function()
    -- the inlay hints: Neovim asks for them after each change, through the client's handler
    local ctx = { bufnr = session_buf, client_id = client.id, method = 'textDocument/inlayHint', version = vim.lsp.util.buf_versions[session_buf] }
    truthy(client.handlers['textDocument/inlayHint'], 'no inlay hint handler of the plugin')
    client.handlers['textDocument/inlayHint'](overtaken, nil, ctx, {})
    -- the code lenses the plugin asks for
    local before = vim.lsp.codelens.get(session_buf)
    client.request = function(_, method, _, handler)
      handler(overtaken, nil, { bufnr = session_buf, client_id = client.id, method = method })
      return true, 1
    end
    require('pi_session.attach').refresh_lenses(session_buf)
    eq(#vim.lsp.codelens.get(session_buf), #before, 'the lenses shown stay')
  end)
  client.request = nil
  log.error = log_error
  truthy(ok, failure)
  eq(logged, {}, 'errors logged')
end)

test('resting on a parentId highlights the id it names and the ids naming it; completion is on as `"` is typed', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(session_win, { 5, 50 }) -- inside "a0000001", the parentId of u0000002
  vim.api.nvim_exec_autocmds('CursorHold', { buffer = session_buf })
  local ns = vim.api.nvim_create_namespace('nvim.lsp.references')
  local marks
  local shown = vim.wait(TIMEOUT, function()
    marks = vim.api.nvim_buf_get_extmarks(session_buf, ns, 0, -1, { details = true })
    return #marks > 0
  end, 50)
  truthy(shown, 'no highlights after CursorHold')
  local lines = vim.tbl_map(function(m)
    return m[2] + 1
  end, marks)
  table.sort(lines)
  -- a0000001's own id (line 4) and the parentIds naming it (lines 5 and 9)
  eq(table.concat(lines, ','), '4,5,9', 'highlighted lines')
  vim.api.nvim_win_set_cursor(session_win, { 5, 10 })
  vim.api.nvim_exec_autocmds('CursorMoved', { buffer = session_buf })
  eq(#vim.api.nvim_buf_get_extmarks(session_buf, ns, 0, -1, {}), 0, 'highlights left after the cursor moved')
  truthy(#vim.api.nvim_get_autocmds({ event = 'InsertCharPre', buffer = session_buf }) > 0,
    'no completion as you type (vim.lsp.completion autotrigger)')
  local triggers = vim.tbl_get(client.server_capabilities, 'completionProvider', 'triggerCharacters') or {}
  truthy(vim.tbl_contains(triggers, '"'), 'the server does not trigger completion on a quote: ' .. vim.inspect(triggers))
end)

test('a custom request (pi/getTree) answers with the visible tree', function()
  local result, err = require('pi_session').request_sync(session_buf, 'pi/getTree', { filter = 'default', activeBranchFirst = true }, TIMEOUT)
  truthy(not err, vim.inspect(err))
  local ids = vim.tbl_map(function(n)
    return n.id
  end, result.nodes)
  eq(ids, { 'u0000001', 'a0000001', 'u0000003', 'a0000003', 'u0000002', 'a0000002' }, 'ids in display order')
  eq(result.leafId, 'a0000003', 'leafId')
end)

local EXPECTED_TREE = {
  'Session tree of broken-session.jsonl · filter: default · 6 entries',
  '<CR> jump/load  f filter  r refresh  c context  b branch  L label  q close',
  -- line 8 of the fixture is cut off: pi skips it without a word, the tree buffer says so
  'pi skips 1 line of this file, so the tree lacks what it holds: line 8 (invalid JSON: Unterminated string). The diagnostics list it with the repairs.',
  '* user: Refactor the parser please',
  '* assistant: Sure. Which module first?  (2 branches)',
  '├─ * user: Actually, do the loader instead',
  '│  * assistant: Loader refactored and tested  <- leaf',
  '└─   user: Start with the scanner  [scanner-try]',
  '     assistant: Scanner split into two functions',
}

test('skipped_notice names the first line pi skips and counts the rest; nothing when none are', function()
  local tree = require('pi_session.tree')
  eq(tree.skipped_notice(nil), nil, 'no info')
  eq(tree.skipped_notice({ skippedLines = 0 }), nil, 'none skipped')
  eq(tree.skipped_notice({}), nil, 'a server without skippedLines')
  eq(
    tree.skipped_notice({ skippedLines = 3, skipped = { { line = 1, kind = 'glued', message = '2 lines glued\ntogether' } } }),
    'pi skips 3 lines of this file, so the tree lacks what they hold: line 2 (2 lines glued together), and 2 more. The diagnostics list them with the repairs.',
    'several lines'
  )
  eq(
    tree.skipped_notice({ skippedLines = 2 }),
    'pi skips 2 lines of this file, so the tree lacks what they hold. The diagnostics list them with the repairs.',
    'no list'
  )
end)

local tree_buf
test(':PiSessionTree opens at once and draws the tree asynchronously, without a synchronous request', function()
  vim.api.nvim_set_current_win(session_win)
  local sync_calls = 0
  local request_sync = client.request_sync
  client.request_sync = function(...)
    sync_calls = sync_calls + 1
    return request_sync(...)
  end
  vim.cmd('PiSessionTree')
  tree_buf = vim.api.nvim_get_current_buf()
  eq(vim.api.nvim_buf_get_lines(tree_buf, 1, 2, false), { 'Loading the tree…' }, 'right after the command')
  wait_lines(tree_buf, function(lines)
    return vim.deep_equal(lines, EXPECTED_TREE)
  end, 'the tree')
  client.request_sync = request_sync
  eq(sync_calls, 0, 'synchronous requests while the tree loaded')
  eq(vim.api.nvim_win_get_cursor(0)[1], 7, 'the cursor starts on the leaf')
  eq(vim.bo[tree_buf].modifiable, false, 'modifiable')
end)

test('<CR> in the tree jumps to the entry line in the session window', function()
  vim.api.nvim_win_set_cursor(0, { 8, 0 }) -- "user: Start with the scanner"
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  eq(vim.api.nvim_get_current_buf(), session_buf, 'current buffer after <CR>')
  eq(vim.api.nvim_win_get_cursor(0)[1], 5, 'cursor line (u0000002 is on line 5)')
end)

test(':PiSessionTree all shows settings entries too', function()
  vim.cmd('PiSessionTree all')
  local buf = vim.api.nvim_get_current_buf()
  wait_lines(buf, function(_, text)
    return text:find('filter: all', 1, true) and text:find('[model: claude-sonnet-4-5]', 1, true) and text:find('[label: scanner-try]', 1, true)
  end, 'settings entries with filter all')
  vim.cmd('PiSessionTree default')
  wait_lines(buf, function(lines)
    return vim.deep_equal(lines, EXPECTED_TREE)
  end, 'back to the default filter')
end)

--- A session of `n` entries in one chain (u0, a1, u2, ...), the last one the leaf.
local function chain_session(path, n)
  local lines = { '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000099","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}' }
  for i = 0, n - 1 do
    local id, parent = ('e%05d'):format(i), i == 0 and 'null' or ('"e%05d"'):format(i - 1)
    local role = i % 2 == 0 and 'user' or 'assistant'
    local content = role == 'user' and ('"question %d"'):format(i) or ('[{"type":"text","text":"answer %d"}]'):format(i)
    table.insert(lines, ('{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-05T10:%02d:%02d.000Z","message":{"role":"%s","content":%s}}'):format(
      id, parent, math.floor(i / 60) % 60, i % 60, role, content))
  end
  vim.fn.writefile(lines, path)
  return path
end

local long_buf

--- Record the pi/getTree requests the client sends (their params, after `rewrite` if given, which
--- may replace them) until the function it returns gives the client its own request back.
local function record_tree_requests(rewrite)
  local requests = {}
  local request = client.request
  client.request = function(self, method, params, ...)
    if method == 'pi/getTree' then
      params = rewrite and rewrite(params) or params
      table.insert(requests, params)
    end
    return request(self, method, params, ...)
  end
  return requests, function()
    client.request = request
  end
end

--- Open the session file at `path` in a split above the session window and wait for the client
--- to attach (`what` names it in the failure); the new window and buffer.
local function open_beside(path, what)
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('split')
  local win = vim.api.nvim_get_current_win()
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for the ' .. what)
  return win, buf
end

test('a 3,000-entry session: the tree opens on the rows around the leaf, and earlier pages load as they scroll into view', function()
  local options = require('pi_session.config').options
  options.tree_page_size = 50
  local path = chain_session(work .. '/elsewhere/long-session.jsonl', 3000)
  local long_win
  long_win, long_buf = open_beside(path, 'long session')
  local requests, stop_recording = record_tree_requests()
  vim.cmd('PiSessionTree')
  local buf = vim.api.nvim_get_current_buf()
  local lines = wait_lines(buf, function(_, text)
    return text:find('answer 2999  <- leaf', 1, true) ~= nil
  end, 'the leaf of the long session')
  eq(lines[4], '… 2950 earlier entries (<CR> to load)', 'the line above the page around the leaf')
  eq(#lines, 3 + 1 + 50, 'header, placeholder and one page')
  eq(vim.api.nvim_win_get_cursor(0)[1], #lines, 'the cursor on the leaf')
  eq(#requests, 2, 'pi/getTree requests: the first page, then the levels down to the leaf')
  for _, params in ipairs(requests) do
    truthy(params.limit <= 50 and (params.chain == true or params.levels == true), vim.inspect(params))
  end
  -- scrolling up to the placeholder loads the page before (CursorMoved)
  vim.cmd('normal! gg')
  vim.api.nvim_exec_autocmds('CursorMoved', { buffer = buf })
  lines = wait_lines(buf, function(got)
    return got[4] == '… 2900 earlier entries (<CR> to load)'
  end, 'the page before')
  eq(#lines, 3 + 1 + 100, 'two pages now')
  stop_recording()
  options.tree_page_size = 200
  vim.api.nvim_buf_delete(buf, { force = true })
  vim.api.nvim_win_close(long_win, true)
end)

test('lazy tree: every window after the first is asked with its revision; a TreeChanged refusal is handed back', function()
  local lazy = require('pi_session.lazy')
  local asked, revision = {}, '7'
  local function request(params, callback)
    table.insert(asked, vim.deepcopy(params))
    if params.revision ~= nil and params.revision ~= revision then
      return callback({ code = lazy.TREE_CHANGED, message = 'The session changed', data = { revision = revision } })
    end
    if params.levels then
      return callback(nil, { leafId = 'x', levels = {}, complete = true, revision = revision })
    end
    callback(nil, { leafId = 'x', nodes = {}, total = 0, hasMore = false, revision = revision })
  end
  local tree = lazy.new(request, 10)
  local failure
  tree:load(tree.top, { offset = 0 }, function(err)
    failure = err
  end)
  eq(failure, nil, 'the first window')
  eq(asked[1].revision, nil, 'the first window is asked without a revision')
  eq(tree.revision, '7', 'its reply gives the revision')
  tree:locate('x', function(err)
    failure = err
  end)
  eq(asked[2].levels, true, 'the levels')
  eq(asked[2].revision, '7', 'the levels are asked with it')
  revision = '8' -- pi appended: the next window is of another tree
  tree:locate('x', function(err)
    failure = err
  end)
  truthy(lazy.is_tree_changed(failure), vim.inspect(failure))
  eq(#asked, 3, 'a TreeChanged refusal of the levels is handed back, not asked again level by level')
  truthy(not lazy.is_tree_changed({ code = -32002 }) and not lazy.is_tree_changed(nil), 'other errors')
end)

test('lazy tree: a level sent again keeps the rows it still has, and the lists opened under them', function()
  local lazy = require('pi_session.lazy')
  -- a branch point r: the leaf's branch `side`, and the other branch u10 (its chain u11, u12)
  local r = { id = 'r', depth = 0, childIds = { 'side', 'u10' }, isBranchPoint = true, onLeafPath = true }
  local function branches(side)
    return {
      kind = 'branches', rootId = 'r', depth = 1, offset = 0, total = 3, aroundIndex = 1,
      nodes = { r, side, { id = 'u10', depth = 1, childIds = { 'u11' }, isBranchPoint = false } },
    }
  end
  local top = { kind = 'top', chain = true, offset = 0, total = 1, aroundIndex = 0, nodes = { r } }
  local asked = {}
  local function request(params, callback)
    table.insert(asked, vim.deepcopy(params))
    if params.since == '1' then
      local side = { id = 'side', depth = 1, childIds = { 'n1' }, isBranchPoint = false, onLeafPath = true }
      local chain = { kind = 'chain', rootId = 'n1', chain = true, offset = 0, total = 1, aroundIndex = 0,
        nodes = { { id = 'n1', depth = 0, childIds = {}, isLeaf = true } } }
      return callback(nil, { leafId = 'n1', levels = { branches(side), chain }, complete = true, keptLevels = 1, revision = '2' })
    elseif params.levels then
      local side = { id = 'side', depth = 1, childIds = {}, isLeaf = true, onLeafPath = true }
      return callback(nil, { leafId = 'side', levels = { top, branches(side) }, complete = true, revision = '1' })
    end
    callback(nil, { leafId = 'side', total = 2, offset = 0, revision = '1', nodes = {
      { id = 'u11', depth = 0, childIds = { 'u12' } }, { id = 'u12', depth = 1, childIds = {} } } })
  end
  local tree = lazy.new(request, 10)
  local found
  tree:locate('side', function(_, row)
    found = row
  end)
  eq(found and found.node.id, 'side', 'the leaf')
  local other = tree.top.rows[1].children.rows[2]
  eq(other.node.id, 'u10', 'the other branch')
  local opened = tree:child(other)
  tree:load(opened, { offset = 0 }, function() end)
  eq(#opened.rows, 2, 'the user opened it')
  local before = #asked
  tree:follow('n1', function(_, row, reload)
    found = reload and 'reload' or row
  end)
  eq(found and found.node and found.node.id, 'n1', 'the new leaf')
  eq(#asked, before + 1, 'one request')
  local level = tree.top.rows[1].children
  eq(level.rows[1].node.childIds, { 'n1' }, "the branch point's level was sent again")
  truthy(level.rows[2] == other, "the row keeps its table")
  truthy(other.children == opened and opened.loaded and #opened.rows == 2, 'and the list opened under it')
end)

test('lazy tree: a branch to an older entry keeps the rows that moved with their lists, marks the old path, drops stale lists', function()
  local lazy = require('pi_session.lazy')
  -- a branch point r: the leaf's branch side (its chain s1, s2: the leaf), and u10 (its chain u11,
  -- u12), which the user opens; then pi's /tree to u12 and a turn n1 there
  local function r(first, second)
    return { id = 'r', depth = 0, childIds = { first, second }, isBranchPoint = true, onLeafPath = true }
  end
  local function side(on_path)
    return { id = 'side', depth = 1, childIds = { 's1' }, isBranchPoint = false, onLeafPath = on_path }
  end
  local function u10(on_path)
    return { id = 'u10', depth = 1, childIds = { 'u11' }, isBranchPoint = false, onLeafPath = on_path }
  end
  local function u11_u12(more)
    local nodes = { { id = 'u11', depth = 0, childIds = { 'u12' }, onLeafPath = more ~= nil },
      { id = 'u12', depth = 1, childIds = more and { more[1].id } or {}, onLeafPath = more ~= nil } }
    return vim.list_extend(nodes, more or {})
  end
  local top = { kind = 'top', chain = true, offset = 0, total = 1, aroundIndex = 0, nodes = { r('side', 'u10') } }
  local function request(params, callback)
    if params.since == '1' then
      local moved_branches = { kind = 'branches', rootId = 'r', depth = 1, offset = 0, total = 3, aroundIndex = 1,
        nodes = { r('u10', 'side'), u10(true), side(false) } }
      local chain = { kind = 'chain', rootId = 'u11', chain = true, offset = 0, total = 3, aroundIndex = 2,
        nodes = u11_u12({ { id = 'n1', depth = 2, childIds = {}, isLeaf = true, onLeafPath = true } }) }
      return callback(nil, { leafId = 'n1', levels = { moved_branches, chain }, complete = true, keptLevels = 1,
        leftLeafPath = { 'side', 's1', 's2' }, joinedLeafPath = { 'u10', 'u11', 'u12' }, revision = '2' })
    elseif params.since == '2' then
      local chain = { kind = 'chain', rootId = 'u11', chain = true, offset = 0, total = 4, aroundIndex = 3,
        nodes = u11_u12({ { id = 'n1', depth = 2, childIds = { 'n2' }, onLeafPath = true },
          { id = 'n2', depth = 3, childIds = {}, isLeaf = true, onLeafPath = true } }) }
      return callback(nil, { leafId = 'n2', levels = { chain }, complete = true, keptLevels = 2,
        staleLists = { 'side' }, revision = '3' })
    elseif params.levels then
      local branches = { kind = 'branches', rootId = 'r', depth = 1, offset = 0, total = 3, aroundIndex = 1,
        nodes = { r('side', 'u10'), side(true), u10(false) } }
      local chain = { kind = 'chain', rootId = 's1', chain = true, offset = 0, total = 2, aroundIndex = 1, nodes = {
        { id = 's1', depth = 0, childIds = { 's2' }, onLeafPath = true },
        { id = 's2', depth = 1, childIds = {}, isLeaf = true, onLeafPath = true } } }
      return callback(nil, { leafId = 's2', levels = { top, branches, chain }, complete = true, revision = '1' })
    end
    callback(nil, { leafId = 's2', total = 2, offset = 0, revision = '1', nodes = u11_u12() })
  end
  local tree = lazy.new(request, 10)
  local found
  tree:locate('s2', function(_, row)
    found = row
  end)
  eq(found and found.node.id, 's2', 'the leaf')
  local level = tree.top.rows[1].children
  local held_side, other = level.rows[1], level.rows[2]
  eq({ held_side.node.id, other.node.id }, { 'side', 'u10' }, 'the branches, the one on the path first')
  local opened = tree:child(other)
  tree:load(opened, { offset = 0 }, function() end)
  eq(#opened.rows, 2, 'the user opened u10')
  tree:follow('n1', function(_, row, reload)
    found = reload and 'reload' or row
  end)
  eq(found and found.node and found.node.id, 'n1', 'the new leaf, no load anew')
  truthy(level.rows[1] == other and other.index == 0, 'u10 keeps its table at its new place')
  truthy(other.children == opened, 'and the list opened under it')
  truthy(level.rows[2] == held_side and held_side.children ~= nil, 'side too, with the old path under it')
  local s2 = held_side.children.rows[2]
  eq({ s2.node.id, s2.node.isLeaf, s2.node.onLeafPath }, { 's2', false, false }, 'the old leaf is marked')
  eq(held_side.children.rows[1].node.onLeafPath, false, 'and the rest of the old path')
  tree:follow('n2', function(_, row, reload)
    found = reload and 'reload' or row
  end)
  eq(found and found.node and found.node.id, 'n2', 'the next turn')
  eq(held_side.children, nil, 'the list the server named stale is dropped (loaded anew when opened)')
end)

test('a tree whose session changed while it loaded is loaded anew (TreeChanged), never drawn from two trees', function()
  local path = work .. '/elsewhere/long-session.jsonl' -- the 3,000-entry chain of the test before
  local win = open_beside(path, 'long session')
  local staled = false
  local requests, stop_recording = record_tree_requests(function(params)
    if params.revision ~= nil and not staled then
      staled = true -- as if pi appended after the first page: a revision the session has left
      return vim.tbl_extend('force', params, { revision = 'left-behind' })
    end
  end)
  vim.cmd('PiSessionTree')
  local buf = vim.api.nvim_get_current_buf()
  local lines = wait_lines(buf, function(_, text)
    return text:find('answer 2999  <- leaf', 1, true) ~= nil
  end, 'the leaf of the long session, loaded anew')
  stop_recording()
  truthy(not table.concat(lines, '\n'):find('error', 1, true), table.concat(lines, '\n'))
  eq(#requests, 4, 'pi/getTree requests: the first page and the levels (refused), then both again')
  eq({ requests[1].revision, requests[2].revision, requests[3].revision }, { nil, 'left-behind', nil }, 'revisions')
  truthy(type(requests[4].revision) == 'string' and requests[4].revision ~= 'left-behind', vim.inspect(requests[4]))
  vim.api.nvim_buf_delete(buf, { force = true })
  vim.api.nvim_win_close(win, true)
end)

--- A session whose path to the leaf passes `n` branch points (a side entry off every third entry).
local function branchy_session(path, n)
  local lines = { '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000098","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}' }
  local parent = 'null'
  for i = 0, 3 * n - 1 do
    local id = ('m%05d'):format(i)
    local line = '{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-05T10:00:00.000Z","message":{"role":"user","content":"step %d"}}'
    table.insert(lines, line:format(id, parent, i))
    if i % 3 == 2 and i < 3 * n - 1 then
      table.insert(lines, line:format(('s%05d'):format(i), ('"%s"'):format(id), i))
    end
    parent = ('"%s"'):format(id)
  end
  vim.fn.writefile(lines, path)
  return path
end

test('a session with 40 branch points on the path: the tree opens down to the leaf in two requests', function()
  local path = branchy_session(work .. '/elsewhere/branchy-session.jsonl', 41)
  local win, buf = open_beside(path, 'branchy session')
  local requests, stop_recording = record_tree_requests()
  vim.cmd('PiSessionTree')
  local tree = vim.api.nvim_get_current_buf()
  local lines = wait_lines(tree, function(_, text)
    return text:find('user: step 122  <- leaf', 1, true) ~= nil
  end, 'the leaf of the branchy session')
  stop_recording()
  eq(#requests, 2, 'pi/getTree requests: the first page, then every level down to the leaf')
  eq(requests[2].levels, true, 'the second is the levels request')
  eq(vim.api.nvim_get_current_line():find('<- leaf', 1, true) ~= nil, true, 'the cursor on the leaf')
  truthy(#lines > 80, 'every level down to the leaf is drawn')
  vim.api.nvim_buf_delete(tree, { force = true })
  vim.api.nvim_win_close(win, true)
end)

--- Count the tree loads (each asks pi/getInfo once) until the function it returns puts
--- session.request back: `counted.loads`.
local function count_tree_loads()
  local session = require('pi_session')
  local request = session.request
  local counted = { loads = 0 }
  session.request = function(buf, method, ...)
    if method == 'pi/getInfo' then
      counted.loads = counted.loads + 1
    end
    return request(buf, method, ...)
  end
  return counted, function()
    session.request = request
  end
end

test('a turn pi appends below the leaf is taken in from one levels request with since, not loaded anew', function()
  local path = branchy_session(work .. '/elsewhere/followed-session.jsonl', 30)
  local win, buf = open_beside(path, 'followed session')
  vim.cmd('PiSessionTree')
  local tree_view = vim.api.nvim_get_current_buf()
  wait_lines(tree_view, function(_, text)
    return text:find('user: step 89  <- leaf', 1, true) ~= nil
  end, 'the leaf of the followed session')
  local tree = require('pi_session.tree')
  local session = require('pi_session')
  local state = tree.state(tree_view)
  wait_tree_loaded(state)
  local revision = state.tree.held_levels and state.tree.held_levels.revision
  truthy(type(revision) == 'string', 'the tree holds the levels of a revision')
  local counted, stop_counting = count_tree_loads()
  local requests, stop_recording = record_tree_requests()
  local ok, err = pcall(function()
    local turn = {
      { type = 'message', id = 'a0000090', parentId = 'm00089', timestamp = '2026-01-05T10:00:31.000Z',
        message = { role = 'assistant', content = { { type = 'text', text = 'An answer pi wrote' } }, timestamp = 1767607231000 } },
      { type = 'message', id = 'u0000091', parentId = 'a0000090', timestamp = '2026-01-05T10:00:32.000Z',
        message = { role = 'user', content = 'The next question', timestamp = 1767607232000 } },
    }
    local file = assert(io.open(path, 'a'))
    for _, entry in ipairs(turn) do
      file:write(vim.json.encode(entry), '\n')
    end
    file:close()
    local tree_text
    local seen = vim.wait(TIMEOUT, function()
      tree_text = buffer_text(tree_view)
      return tree_text:find('user: The next question  <- leaf', 1, true) ~= nil and not state.loading
    end, 20)
    truthy(seen, 'the tree did not follow the turn:\n' .. tree_text)
    truthy(tree_text:find('assistant: An answer pi wrote', 1, true), tree_text)
    truthy(not tree_text:find('step 89  <- leaf', 1, true), 'the old leaf keeps no marker')
    truthy(tree_text:find('user: step 2', 1, true), 'the levels kept are drawn')
    eq(counted.loads, 0, 'not loaded anew (a load asks pi/getInfo)')
    truthy(#requests >= 1, 'a request was sent')
    for _, params in ipairs(requests) do
      eq(params.levels, true, 'a levels request: ' .. vim.inspect(params))
      truthy(type(params.since) == 'string', 'asked with since: ' .. vim.inspect(params))
    end
    eq(requests[1].since, revision, 'since the revision the tree held')
    eq(requests[#requests].aroundId, 'u0000091', 'down to the new leaf')
    -- the next turn, whose request with since fails: the tree is loaded anew
    local counting = session.request
    session.request = function(b, method, params, callback)
      if type(params) == 'table' and params.since ~= nil then
        return callback({ code = -32603, message = 'the server went away' })
      end
      return counting(b, method, params, callback)
    end
    file = assert(io.open(path, 'a'))
    file:write(vim.json.encode({ type = 'message', id = 'a0000092', parentId = 'u0000091', timestamp = '2026-01-05T10:00:33.000Z',
      message = { role = 'assistant', content = { { type = 'text', text = 'Another answer' } }, timestamp = 1767607233000 } }), '\n')
    file:close()
    seen = vim.wait(TIMEOUT, function()
      tree_text = buffer_text(tree_view)
      return tree_text:find('assistant: Another answer  <- leaf', 1, true) ~= nil and not state.loading
    end, 20)
    truthy(seen, 'the tree was not loaded anew:\n' .. tree_text)
    eq(counted.loads, 1, 'loaded anew once')
    eq(state.error, nil, 'no error shown')
  end)
  stop_recording()
  stop_counting()
  vim.api.nvim_buf_delete(tree_view, { force = true })
  vim.api.nvim_win_close(win, true)
  vim.api.nvim_buf_delete(buf, { force = true })
  assert(ok, err)
end)

test('a page refused after an append the tree follows is asked again at the followed revision, not loaded anew', function()
  -- scrolling up asks for the page before, pinned to the tree's revision; pi appends just then: the
  -- page is refused (TreeChanged) after the tree followed the append, or while it follows it
  local options = require('pi_session.config').options
  options.tree_page_size = 50
  local path = chain_session(work .. '/elsewhere/raced-session.jsonl', 300)
  local win, buf = open_beside(path, 'raced session')
  vim.cmd('PiSessionTree')
  local tree_view = vim.api.nvim_get_current_buf()
  wait_lines(tree_view, function(_, text)
    return text:find('answer 299  <- leaf', 1, true) ~= nil
  end, 'the leaf of the raced session')
  local state = require('pi_session.tree').state(tree_view)
  wait_tree_loaded(state)
  local counted, stop_counting = count_tree_loads()
  local requests, stop_recording = record_tree_requests()
  -- the pi/getTree requests `holding` picks wait until the test lets them through
  local held, holding = {}, nil
  local recorded = client.request
  client.request = function(self, method, params, ...)
    if method == 'pi/getTree' and holding and holding(params) then
      local rest = { ... }
      table.insert(held, { params = params, release = function()
        recorded(self, method, params, unpack(rest))
      end })
      return true, -1
    end
    return recorded(self, method, params, ...)
  end
  local function page_pinned(params)
    return params.revision ~= nil and params.since == nil and params.levels == nil
  end
  local function waiting(count)
    truthy(vim.wait(TIMEOUT, function()
      return #held == count
    end, 20), ('%d requests waiting, not %d'):format(#held, count))
  end
  local appended = 300
  local function append_turn()
    local line = vim.json.encode({ type = 'message', id = ('e%05d'):format(appended), parentId = ('e%05d'):format(appended - 1),
      timestamp = '2026-01-05T11:00:00.000Z', message = { role = 'user', content = ('question %d'):format(appended) } })
    appended = appended + 1
    local file = assert(io.open(path, 'a'))
    file:write(line, '\n')
    file:close()
  end
  local function scroll_up()
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(tree_view)[1])
    vim.cmd('normal! gg')
    vim.api.nvim_exec_autocmds('CursorMoved', { buffer = tree_view })
  end
  --- The page before the leaf's is loaded at the revision followed, and drawn.
  local function page_taken_in(what)
    local top = state.tree.top
    local lines = wait_lines(tree_view, function(got)
      return not state.loading and top.total == appended and top.start == top.total - 100
        and got[4] == ('… %d earlier entries (<CR> to load)'):format(top.start)
    end, what)
    truthy(lines[#lines]:find(('question %d  <- leaf'):format(appended - 1), 1, true), lines[#lines])
    eq(counted.loads, 0, what .. ': not loaded anew (a load asks pi/getInfo)')
    local pages = vim.tbl_filter(page_pinned, requests)
    local revisions = { pages[#pages - 1].revision, pages[#pages].revision }
    truthy(revisions[1] ~= revisions[2] and revisions[2] == state.tree.revision, 'asked again at the revision followed: ' .. vim.inspect(revisions))
  end
  local catch_up_wait = require('pi_session.tree').CATCH_UP_WAIT_MS
  require('pi_session.tree').CATCH_UP_WAIT_MS = TIMEOUT -- (the notification comes well within it)
  local handlers = client.handlers
  local on_did_change = handlers['pi/didChange']
  local ok, err = pcall(function()
    -- the follow ends before the refusal comes back
    holding = page_pinned
    scroll_up()
    waiting(1)
    local revision = state.tree.revision
    append_turn()
    truthy(vim.wait(TIMEOUT, function()
      return state.tree.revision ~= revision and not state.loading
    end, 20), 'the tree did not follow the append')
    holding = nil
    held[1].release()
    page_taken_in('refused after the follow')
    -- the refusal comes back while the follow waits on its request
    held = {}
    holding = function(params)
      return page_pinned(params) or params.since ~= nil
    end
    scroll_up()
    waiting(1)
    append_turn()
    waiting(2)
    truthy(held[2].params.since ~= nil, 'the follow\'s request: ' .. vim.inspect(held[2].params))
    held[1].release()
    truthy(vim.wait(TIMEOUT, function()
      return state.after_load ~= nil or state.load_again
    end, 20), 'the refusal did not come back')
    eq(state.load_again, false, 'no load anew queued on the refusal')
    holding = nil
    held[2].release()
    page_taken_in('refused during the follow')
    -- the refusal comes back before the pi/didChange it is due to: it waits for it, a while
    held = {}
    holding = page_pinned
    local told = {}
    handlers['pi/didChange'] = function(...)
      table.insert(told, { ... })
    end
    scroll_up()
    waiting(1)
    append_turn()
    truthy(vim.wait(TIMEOUT, function()
      return #told > 0
    end, 20), 'the append was not told')
    holding = nil
    held[1].release()
    local refused = vim.wait(TIMEOUT, function()
      return state.refresh_waiters ~= nil or state.loading
    end, 20)
    handlers['pi/didChange'] = on_did_change
    truthy(refused, 'the refusal did not come back')
    eq(counted.loads, 0, 'no load anew begun on the refusal')
    for _, call in ipairs(told) do
      on_did_change(unpack(call))
    end
    page_taken_in('refused before the notification')
  end)
  client.request = recorded
  handlers['pi/didChange'] = on_did_change
  require('pi_session.tree').CATCH_UP_WAIT_MS = catch_up_wait
  stop_recording()
  stop_counting()
  options.tree_page_size = 200
  vim.api.nvim_buf_delete(tree_view, { force = true })
  vim.api.nvim_win_close(win, true)
  vim.api.nvim_buf_delete(buf, { force = true })
  assert(ok, err)
end)

--- pi_session.entry_at_line's answer: (node, err), waited for.
local function entry_at(buf, line)
  local answer
  require('pi_session').entry_at_line(buf, line, function(node, err)
    answer = { node = node, err = err }
  end)
  truthy(vim.wait(TIMEOUT, function()
    return answer ~= nil
  end, 20), 'pi/getEntryAtLine did not answer')
  return answer.node, answer.err
end

test('the entry under the cursor is asked for by line (no tree); an unknown method is an error, not a fallback', function()
  local node = entry_at(session_buf, 9) -- line 10: a0000003
  eq(node and node.id, 'a0000003', 'entry on line 10')
  eq(node and node.line, 9, 'its line')
  eq(entry_at(session_buf, 0), nil, 'the header line has no entry')
  local request = client.request
  client.request = function(self, method, params, handler, ...)
    if method == 'pi/getEntryAtLine' then
      handler({ code = -32601, message = 'Unhandled method pi/getEntryAtLine' }, nil)
      return true, 0
    end
    return request(self, method, params, handler, ...)
  end
  local missing, err = entry_at(session_buf, 9)
  client.request = request
  eq(missing, nil, 'no entry')
  eq(err and err.code, -32601, 'the error is returned')
end)

test(':PiSessionContext at the entry under the cursor', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 4, 0 }) -- a0000001
  vim.cmd('PiSessionContext')
  truthy(vim.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_name(0) == 'pi-session-context://broken-session.jsonl@a0000001.md'
  end, 20), 'no context buffer: ' .. vim.api.nvim_buf_get_name(0))
  local buf = vim.api.nvim_get_current_buf()
  local text = buffer_text(buf)
  eq(vim.bo[buf].filetype, 'markdown', 'filetype')
  truthy(text:find('# Context of broken-session.jsonl at entry a0000001', 1, true), text)
  truthy(text:find('- messages: 2', 1, true), text)
  truthy(text:find('## 2. assistant (claude-sonnet-4-5)\n\nSure. Which module first?', 1, true), text)
  eq(vim.bo[buf].modifiable, false, 'read-only')
end)

test(':PiSessionContext leaf json keeps pi\'s key order', function()
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('PiSessionContext leaf json')
  local lines = {}
  local shown = vim.wait(TIMEOUT, function()
    local buf = vim.fn.bufnr('pi-session-context://broken-session.jsonl@leaf.json')
    lines = buf > 0 and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
    return #lines > 2
  end, 50)
  truthy(shown, 'no JSON context buffer')
  local decoded = vim.json.decode(table.concat(lines, '\n'))
  eq(#decoded.messages, 4, 'messages at the leaf')
  eq(decoded.messages[4].content[1].text, 'Loader refactored and tested', 'last message')
  local role, content
  for i, line in ipairs(lines) do
    role = role or (line:find('"role"', 1, true) and i)
    content = content or (line:find('"content"', 1, true) and i)
  end
  truthy(role and content and role < content, ('"role" (line %s) comes after "content" (line %s): keys sorted?'):format(role, content))
end)

test(':PiSessionBranch moves the leaf and the tree follows', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- a0000002
  local state = require('pi_session.tree').state(tree_buf)
  wait_tree_loaded(state)
  local counted, stop_counting = count_tree_loads()
  local requests, stop_recording = record_tree_requests()
  vim.cmd('PiSessionBranch')
  wait_lines(tree_buf, function(lines)
    return vim.tbl_contains(lines, '├─ * user: Start with the scanner  [scanner-try]')
      and vim.tbl_contains(lines, '│  * assistant: Scanner split into two functions  <- leaf')
  end, 'the tree after the branch')
  wait_tree_loaded(state)
  stop_recording()
  stop_counting()
  -- the move of the leaf taken in from the levels that changed since the tree's, not loaded anew
  eq(counted.loads, 0, 'not loaded anew (a load asks pi/getInfo)')
  eq(#requests, 1, 'one request: ' .. vim.inspect(requests))
  truthy(type(requests[1].since) == 'string', 'asked what changed: ' .. vim.inspect(requests[1]))
  eq(requests[1].aroundId, 'a0000002', 'down to the new leaf')
  -- the leaf's code lens follows the branch (line 6, a0000002)
  local moved = vim.wait(TIMEOUT, function()
    for _, lens in ipairs(vim.lsp.codelens.get(session_buf)) do
      if lens.range.start.line == 5 and lens.command and lens.command.title:find('leaf', 1, true) then
        return true
      end
    end
    return false
  end, 50)
  truthy(moved, 'the leaf lens did not follow the branch: ' .. vim.inspect(vim.lsp.codelens.get(session_buf)))
end)

test(':PiSessionLabel labels the entry (the server appends a label line)', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 3, 0 }) -- u0000001
  vim.cmd('PiSessionLabel start')
  local last
  vim.wait(TIMEOUT, function()
    local file = vim.fn.readfile(session_path)
    last = vim.json.decode(file[#file])
    return last.type == 'label' and last.label == 'start'
  end, 20)
  eq({ last.type, last.targetId, last.label }, { 'label', 'u0000001', 'start' }, 'appended line')
  local tree_text
  vim.wait(TIMEOUT, function()
    tree_text = buffer_text(tree_buf)
    return tree_text:find('Refactor the parser please  [start]', 1, true) ~= nil
  end, 50)
  truthy(tree_text:find('Refactor the parser please  [start]', 1, true), tree_text)
  -- the new label line is the leaf now, hidden by the default filter: its parent carries the marker
  truthy(tree_text:find('* assistant: Scanner split into two functions  <- leaf (hidden below)', 1, true), tree_text)
end)

test('the tree follows another program appending to the session (pi/didChange)', function()
  -- (below an older entry, not the leaf: pi's /tree, then a turn there; the server answers what
  -- changed since the tree's levels, the rows that left the leaf's path with it)
  local requests, stop_recording = record_tree_requests()
  local line = vim.json.encode({
    type = 'message', id = 'u0000009', parentId = 'a0000003', timestamp = '2026-01-05T10:00:30.000Z',
    message = { role = 'user', content = 'A line written by pi itself', timestamp = 1767607230000 },
  })
  local file = assert(io.open(session_path, 'a'))
  file:write(line, '\n')
  file:close()
  local tree_text
  local seen = vim.wait(TIMEOUT, function()
    tree_text = buffer_text(tree_buf)
    return tree_text:find('user: A line written by pi itself  <- leaf', 1, true) ~= nil
  end, 50)
  stop_recording()
  truthy(seen, 'the tree did not follow the outside append:\n' .. tree_text)
  truthy(type(requests[1].since) == 'string', 'asked what changed: ' .. vim.inspect(requests[1]))
  eq(#requests, 1, 'not loaded anew')
end)

test('refreshes asked for while the tree loads share one load after it (pi appending turn after turn)', function()
  local tree = require('pi_session.tree')
  local counted, stop_counting = count_tree_loads()
  local state = tree.state(tree_buf)
  local ok, err = pcall(function()
    tree.refresh(tree_buf)
    tree.refresh(tree_buf)
    tree.refresh(tree_buf)
    tree.refresh(tree_buf)
    eq(counted.loads, 1, 'loads started while the first runs')
    local settled = vim.wait(TIMEOUT, function()
      return not state.loading and not state.load_again
    end, 20)
    truthy(settled, 'the loads did not end')
    eq(counted.loads, 2, 'the three refreshes during the first load shared one')
    truthy(buffer_text(tree_buf):find('user: A line written by pi itself  <- leaf', 1, true), buffer_text(tree_buf))
    -- another filter while a load runs: loaded at once (the running load is not shown)
    local filter = state.filter
    tree.refresh(tree_buf)
    state.filter = 'all'
    tree.refresh(tree_buf)
    eq(counted.loads, 4, 'a load for the new filter started at once')
    state.filter = filter
    tree.refresh(tree_buf)
    vim.wait(TIMEOUT, function()
      return not state.loading and not state.load_again
    end, 20)
    eq(counted.loads, 5, 'back to the first filter: one more load')
    -- `r` while a load runs: a load at once
    tree.refresh(tree_buf)
    tree.refresh(tree_buf, true)
    eq(counted.loads, 7, 'the user\'s refresh did not wait')
    vim.wait(TIMEOUT, function()
      return not state.loading and not state.load_again
    end, 20)
    eq(counted.loads, 7, 'and nothing after it')
  end)
  stop_counting()
  assert(ok, err)
end)

-- pi/didChange as the server sends it, with the tree's refreshes counted and the messages kept
-- (the viewer's own following is left out); restore() puts the plugin back as it was
local function did_change_watched()
  local tree = require('pi_session.tree')
  local view = require('pi_session.view')
  local refresh, view_change, notify = tree.refresh, view.on_did_change, vim.notify
  local watched = { calls = 0, notes = {} }
  tree.refresh = function(...)
    watched.calls = watched.calls + 1
    return refresh(...)
  end
  view.on_did_change = function() end
  vim.notify = function(message, level)
    table.insert(watched.notes, { message, level })
  end
  local handler = vim.lsp.config.pi_session.handlers['pi/didChange']
  local uri = vim.uri_from_bufnr(session_buf)
  function watched.send(kind)
    handler(nil, { session = 's1', uri = uri, kind = kind, newEntryIds = {} }, {})
  end
  function watched.restore()
    tree.refresh, view.on_did_change, vim.notify = refresh, view_change, notify
  end
  return watched
end

test('pi/didChange "rewriting" is waited out: the tree is not read again, nothing is reported', function()
  local watched = did_change_watched()
  watched.send('rewriting')
  settle()
  local during = watched.calls
  watched.send('reloaded')
  vim.wait(TIMEOUT, function()
    return watched.calls > during
  end, 20)
  watched.restore()
  eq(during, 0, 'tree refreshes while the file is being rewritten')
  truthy(watched.calls >= 1, 'the tree was not refreshed once the file was reloaded')
  eq(watched.notes, {}, 'messages')
end)

test('pi/didChange "unreadable" warns that the file is not a session now, without reading the tree again', function()
  local watched = did_change_watched()
  watched.send('unreadable')
  vim.wait(TIMEOUT, function()
    return #watched.notes > 0
  end, 20)
  settle()
  watched.restore()
  local notes = watched.notes
  eq(watched.calls, 0, 'tree refreshes of a file that is not a session now')
  eq(#notes, 1, 'messages')
  eq(notes[1][2], vim.log.levels.WARN, 'the message level')
  truthy(notes[1][1]:find('is not a session file now', 1, true), 'the message says why: ' .. notes[1][1])
end)

local view_buf
test(':PiSessionView shows the path to the leaf as a conversation, with the totals, and follows pi appending', function()
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('PiSessionView')
  view_buf = vim.api.nvim_get_current_buf()
  eq(vim.api.nvim_buf_get_lines(view_buf, 3, 4, false), { 'Loading…' }, 'right after the command')
  local lines = wait_lines(view_buf, function(_, text)
    return text:find('A line written by pi itself', 1, true) and text:find('entries · ', 1, true)
  end, 'the conversation')
  local text = table.concat(lines, '\n')
  truthy(lines[1]:find('the path to the leaf', 1, true), lines[1])
  truthy(lines[2]:match('^%d+ entries · 4 user · 3 assistant'), 'totals: ' .. lines[2])
  truthy(text:find('── user  [start] ── 2026-01-05 10:00:02 · line 3\nRefactor the parser please', 1, true), text)
  truthy(text:find('── assistant · anthropic/claude-sonnet-4-5 · in 30 · out 15', 1, true), text)
  truthy(text:find('Sure. Which module first?', 1, true), text)
  truthy(text:find('Actually, do the loader instead', 1, true), 'pi appended below the loader branch: the leaf is there')
  local line = vim.json.encode({
    type = 'message', id = 'u0000010', parentId = 'u0000009', timestamp = '2026-01-05T10:00:40.000Z',
    message = { role = 'user', content = 'Seen by the view as pi writes it', timestamp = 1767607240000 },
  })
  local file = assert(io.open(session_path, 'a'))
  file:write(line, '\n')
  file:close()
  wait_lines(view_buf, function(_, t)
    return t:find('Seen by the view as pi writes it', 1, true) ~= nil
  end, 'the appended entry')
end)

test(':PiSessionView follows changes that come while a page is on its way; the totals one request at a time', function()
  local view = require('pi_session.view')
  local session = require('pi_session')
  local request = session.request
  local asked = { ['pi/getPath'] = 0, ['pi/getStats'] = 0 }
  session.request = function(buf, method, ...)
    if asked[method] then
      asked[method] = asked[method] + 1
    end
    return request(buf, method, ...)
  end
  local state = view.state(view_buf)
  local on_did_change = view.on_did_change
  local noticed = false
  view.on_did_change = function() -- the server's own pi/didChange for the line: the test sends its own
    noticed = true
  end
  local ok, err = pcall(function()
    local uri = vim.uri_from_bufnr(session_buf)
    local file = assert(io.open(session_path, 'a'))
    file:write(vim.json.encode({
      type = 'message', id = 'u0000011', parentId = 'u0000010', timestamp = '2026-01-05T10:00:41.000Z',
      message = { role = 'user', content = 'Appended while a page was on its way', timestamp = 1767607241000 },
    }), '\n')
    file:close()
    truthy(vim.wait(TIMEOUT, function()
      return noticed
    end, 20), 'the server did not notice the append')
    -- three changes at once (as the server reports appends turn after turn): the first asks for
    -- the new entries and the totals; the others come while those are on their way
    for _ = 1, 3 do
      on_did_change({ uri = uri, kind = 'appended', newEntryIds = { 'u0000011' } })
    end
    eq(asked, { ['pi/getPath'] = 1, ['pi/getStats'] = 1 }, 'requests while the first ones are on their way')
    wait_lines(view_buf, function(_, t)
      return t:find('Appended while a page was on its way', 1, true) ~= nil
    end, 'the appended entry')
    vim.wait(TIMEOUT, function()
      return not state.loading and not state.missed_change and not state.stats_loading and not state.stats_again
    end, 20)
    eq(asked, { ['pi/getPath'] = 2, ['pi/getStats'] = 2 }, 'the changes during the first requests shared one more each')
  end)
  session.request, view.on_did_change = request, on_did_change
  assert(ok, err)
end)

test('a move of the leaf by another view (pi/branch, told as pi/didChange leafMoved) is followed by the tree and the view', function()
  local session = require('pi_session')
  local state = require('pi_session.tree').state(tree_buf)
  local leaf = session.request_sync(session_buf, 'pi/getLeaf', {}).leafId
  local counted, stop_counting = count_tree_loads()
  local requests, stop_recording = record_tree_requests()
  local ok, err = pcall(function()
    session.request(session_buf, 'pi/branch', { entryId = 'a0000002' }) -- (no callback: nothing else refreshes)
    wait_lines(view_buf, function(_, t)
      return t:find('Scanner split into two functions', 1, true) ~= nil
        and not t:find('Appended while a page was on its way', 1, true)
    end, 'the view: the path to the new leaf')
    wait_lines(tree_buf, function(lines)
      return vim.tbl_contains(lines, '│  * assistant: Scanner split into two functions  <- leaf')
    end, 'the tree: the leaf marker on the new leaf')
    wait_tree_loaded(state)
    eq(counted.loads, 0, 'the tree not loaded anew (a load asks pi/getInfo)')
    eq(#requests, 1, 'one request: ' .. vim.inspect(requests))
    eq({ type(requests[1].since), requests[1].aroundId }, { 'string', 'a0000002' }, 'asked what changed')
  end)
  stop_recording()
  stop_counting()
  -- back where it was, for the tests after this one
  session.request(session_buf, 'pi/branch', { entryId = leaf })
  wait_lines(view_buf, function(_, t)
    return t:find('Appended while a page was on its way', 1, true) ~= nil
  end, 'the view back on the leaf before')
  wait_tree_loaded(state)
  assert(ok, err)
end)

test('a label set by another view (pi/append, told as pi/didChange appended) is taken in by the tree from one request', function()
  local session = require('pi_session')
  local state = require('pi_session.tree').state(tree_buf)
  local counted, stop_counting = count_tree_loads()
  local requests, stop_recording = record_tree_requests()
  local function label(text) -- (no callback: nothing else refreshes)
    session.request(session_buf, 'pi/append', { kind = 'label', targetId = 'u0000001', label = text })
  end
  local ok, err = pcall(function()
    label('told')
    wait_lines(tree_buf, function(_, t)
      return t:find('Refactor the parser please  [told]', 1, true) ~= nil
    end, 'the tree: the label')
    wait_tree_loaded(state)
    eq(counted.loads, 0, 'the tree not loaded anew (a load asks pi/getInfo)')
    eq(#requests, 1, 'one request: ' .. vim.inspect(requests))
    eq(type(requests[1].since), 'string', 'asked what changed')
  end)
  stop_recording()
  stop_counting()
  label('start') -- (as it was, for the tests after this one)
  wait_lines(tree_buf, function(_, t)
    return t:find('Refactor the parser please  [start]', 1, true) ~= nil
  end, 'the label as it was')
  wait_tree_loaded(state)
  assert(ok, err)
end)

test(':PiSessionView switches branches at a branch point with ]b and shows it', function()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(view_buf)[1])
  local lines = vim.api.nvim_buf_get_lines(view_buf, 0, -1, false)
  local switcher
  for i, l in ipairs(lines) do
    if l:find('^⑂ branch 2 of 2') then
      switcher = i
    end
  end
  truthy(switcher, 'no branch switcher:\n' .. table.concat(lines, '\n'))
  vim.api.nvim_win_set_cursor(0, { switcher, 0 })
  vim.api.nvim_feedkeys(']b', 'x', false)
  lines = wait_lines(view_buf, function(got, text)
    return got[1]:find('the path through entry u0000002', 1, true) and text:find('Scanner split into two functions', 1, true)
  end, 'the other branch')
  truthy(not table.concat(lines, '\n'):find('Actually, do the loader instead', 1, true), 'still the old branch')
  vim.api.nvim_feedkeys('gl', 'x', false) -- back to the leaf
  wait_lines(view_buf, function(got)
    return got[1]:find('the path to the leaf', 1, true) ~= nil
  end, 'back to the leaf')
end)

test(':PiSessionView folds thinking, tool calls and tool results, and shows HTML and script tags as text', function()
  local path = copy(fixtures .. '/hostile-session.jsonl', work .. '/elsewhere/hostile-session.jsonl')
  local win = open_beside(path, 'hostile session')
  vim.cmd('PiSessionView')
  local buf = vim.api.nvim_get_current_buf()
  local lines = wait_lines(buf, function(_, text)
    return text:find('Done.', 1, true) ~= nil
  end, 'the hostile session')
  local text = table.concat(lines, '\n')
  truthy(text:find('Show me this markup: <script>alert("pwned")</script><img src=x onerror=alert(1)>', 1, true), text)
  local folds = {}
  for i, l in ipairs(lines) do
    if l:find('^▸ ') then
      folds[l:match('^▸ (%S+ ?%S*)')] = i
    end
  end
  for _, what in ipairs({ 'thinking', 'tool call', 'output bash' }) do
    local lnum = folds[what]
    truthy(lnum, ('no fold line for %s:\n%s'):format(what, text))
    eq(vim.fn.foldclosed(lnum + 1), lnum, what .. ' body folded under its line')
  end
  vim.api.nvim_buf_delete(buf, { force = true })
  vim.api.nvim_win_close(win, true)
end)

test(':PiSessionView loads a long path a page at a time as it scrolls', function()
  local options = require('pi_session.config').options
  options.view_page_size = 50
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('split')
  local win = vim.api.nvim_get_current_win()
  vim.cmd.edit(vim.fn.fnameescape(work .. '/elsewhere/long-session.jsonl'))
  vim.cmd('PiSessionView')
  local buf = vim.api.nvim_get_current_buf()
  wait_lines(buf, function(_, text)
    return text:find('… 2950 more entries (<CR> to load)', 1, true) ~= nil
  end, 'the first page')
  local state = require('pi_session.view').state(buf)
  eq(#state.items, 50, 'entries loaded')
  vim.cmd('normal! G')
  vim.api.nvim_exec_autocmds('CursorMoved', { buffer = buf })
  wait_lines(buf, function(_, text)
    return text:find('… 2900 more entries (<CR> to load)', 1, true) ~= nil
  end, 'the second page')
  eq(#state.items, 100, 'entries loaded after scrolling')
  options.view_page_size = 100
  vim.api.nvim_buf_delete(buf, { force = true })
  vim.api.nvim_win_close(win, true)
end)

test('text a JSON decoder may refuse never reaches Neovim: a broken line starting with an emoji, a lone surrogate in a message', function()
  -- V8 names the first half of the emoji ("Unexpected token '\ud83d'") and the message holds an
  -- escaped lone surrogate: Neovim's vim.json rejects either escape, which would drop the whole
  -- publishDiagnostics or hover reply
  local path = work .. '/elsewhere/odd-text.jsonl'
  vim.fn.writefile({
    '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000002","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}',
    '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"lone \\ud800 half","timestamp":1}}',
    '\u{1F600} this line is not JSON',
  }, path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for the second session')
  local diagnostics
  local arrived = vim.wait(TIMEOUT, function()
    diagnostics = vim.tbl_filter(function(d)
      return d.lnum == 2
    end, vim.diagnostic.get(buf))
    return #diagnostics > 0
  end, 50)
  truthy(arrived, 'no diagnostic for line 3: ' .. vim.inspect(vim.diagnostic.get(buf)))
  truthy(diagnostics[1].message:find("Unexpected token '\u{FFFD}'", 1, true), 'message: ' .. diagnostics[1].message)
  local text = hover_at(buf, 1, 10)
  truthy(text:find('lone \u{FFFD} half', 1, true), 'hover: ' .. text)
end)

test('a lone CR (JSON white space) stays inside its line, as pi reads it: the problems below it are on their buffer lines', function()
  -- Neovim ends a line at "\n" only (the "\r" shows as ^M) where the LSP ends one at a lone "\r"
  -- too: the plugin says so at initialize (lineBreaks), else every position after it is a line off
  local path = work .. '/elsewhere/lone-cr.jsonl'
  local file = assert(io.open(path, 'wb'))
  file:write(
    '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000004","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}\n',
    '{"type":"message",\r"id":"u1","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}}\n',
    '{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-05T10:00:02.000Z","message":{"role":"user","content":"cut off\n'
  )
  file:close()
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  eq(vim.api.nvim_buf_line_count(buf), 3, 'the buffer\'s lines (the "\\r" inside the second)')
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for the session')
  local diagnostics
  truthy(vim.wait(TIMEOUT, function()
    diagnostics = vim.diagnostic.get(buf)
    return #diagnostics > 0
  end, 50), 'no diagnostics')
  eq(vim.tbl_map(function(d)
    return d.lnum
  end, diagnostics), { 2 }, 'the cut-off line 3 is the line reported')
  local text = hover_at(buf, 1, 20)
  truthy(text:find('first', 1, true), 'a hover after the "\\r" is about u1: ' .. text)
end)

test('text typed after the ^M of a CRLF line (a file of "\\n" lines) is after it to the server too', function()
  local path = work .. '/elsewhere/one-crlf.jsonl'
  local file = assert(io.open(path, 'wb'))
  file:write(
    '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000005","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}\n',
    '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}}\r\n'
  )
  file:close()
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  eq(vim.bo[buf].fileformat, 'unix', 'fileformat')
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for the session')
  local line = vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1]
  eq(line:sub(-1), '\r', 'the CR is the line\'s last character')
  vim.api.nvim_buf_set_text(buf, 1, #line, 1, #line, { 'x' })
  local diagnostics
  truthy(vim.wait(TIMEOUT, function()
    diagnostics = vim.diagnostic.get(buf)
    return #diagnostics > 0
  end, 50), 'no diagnostics')
  eq(vim.tbl_map(function(d)
    return { d.lnum, d.col }
  end, diagnostics), { { 1, #line } }, 'the "x" typed after the ^M, where the JSON ends')
end)

test('fix all: lines glued after a crash are split by the documented code_action call', function()
  local header = '{"type":"session","version":3,"id":"0199e2e0-aaaa-7bbb-8ccc-000000000003","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}'
  local first = '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}}'
  local second = '{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-05T10:00:02.000Z","message":{"role":"user","content":"second","timestamp":2}}'
  local path = work .. '/elsewhere/glued.jsonl'
  vim.fn.writefile({ header, first .. second }, path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for the glued session')
  local arrived = vim.wait(TIMEOUT, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == 'PI006' then
        return true
      end
    end
    return false
  end, 50)
  truthy(arrived, 'no PI006 diagnostic: ' .. vim.inspect(vim.diagnostic.get(buf)))
  vim.lsp.buf.code_action({ context = { only = { 'source.fixAll' } }, apply = true })
  local split = vim.wait(TIMEOUT, function()
    return vim.api.nvim_buf_line_count(buf) >= 3
  end, 50)
  truthy(split, 'the buffer was not changed: ' .. buffer_text(buf))
  eq(vim.api.nvim_buf_get_lines(buf, 0, 3, false), { header, first, second }, 'the lines after fix all')
end)

test('pi_version reaches the server as initializationOptions.piVersion; setup with another restarts it', function()
  local pi = require('pi_session')
  local function followed()
    local info, err = pi.request_sync(session_buf, 'pi/getInfo', {}, TIMEOUT)
    truthy(not err, vim.inspect(err))
    return info.piVersion
  end
  eq(followed(), '1.6.0', 'the default release')
  local first = pi.client(session_buf)
  pi.setup({ cmd = cli, pi_version = '0.86.1' })
  local again = vim.wait(TIMEOUT, function()
    local now = pi.client(session_buf)
    return now ~= nil and now.id ~= first.id and now.initialized
  end, 20)
  truthy(again, 'no new client after setup{pi_version}')
  eq(followed(), '0.86.1', 'the release after setup{pi_version = "0.86.1"}')
  local notes = {}
  local notify = vim.notify
  vim.notify = function(message)
    table.insert(notes, message)
  end
  pi.setup({ cmd = cli, pi_version = '0.1' })
  vim.notify = notify
  truthy(notes[1] and notes[1]:find('not a pi release the server knows', 1, true), vim.inspect(notes))
  vim.wait(TIMEOUT, function()
    local now = pi.client(session_buf)
    return now ~= nil and now.initialized and select(2, pcall(followed)) == '1.6.0'
  end, 50)
  eq(followed(), '1.6.0', 'an unknown release: the default')
end)

--- Open a copy of a fixture and wait for a diagnostic with `code`; returns the buffer.
local function open_damaged(name, code)
  local path = copy(fixtures .. '/' .. name, work .. '/repairs/' .. name)
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  eq(vim.bo[buf].filetype, 'pi-session', name .. ' filetype')
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no client for ' .. name)
  local found = vim.wait(TIMEOUT, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == code then
        return true
      end
    end
    return false
  end, 50)
  truthy(found, ('no %s in %s: %s'):format(code, name, vim.inspect(vim.diagnostic.get(buf))))
  return buf, path
end

test('damaged headers are reported and repaired: missing, not first, and a byte order mark Neovim hides', function()
  local buf = open_damaged('headerless-session.jsonl', 'PI010')
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.buf.code_action({
    filter = function(action)
      return action.title == 'Insert a session header'
    end,
    apply = true,
  })
  truthy(vim.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]:find('"type":"session"', 1, true) ~= nil
  end, 50), 'no header inserted: ' .. buffer_text(buf))

  buf = open_damaged('header-second.jsonl', 'PI012')
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.lsp.buf.code_action({
    filter = function(action)
      return action.title == 'Move the session header to the first line'
    end,
    apply = true,
  })
  truthy(vim.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]:find('"type":"session"', 1, true) ~= nil
  end, 50), 'the header was not moved: ' .. buffer_text(buf))

  local path
  buf, path = open_damaged('bom-session.jsonl', 'PI014')
  truthy(vim.bo[buf].bomb, "Neovim keeps the mark in 'bomb', not in the text")
  vim.lsp.buf.code_action({ context = { only = { 'source.fixAll' } }, apply = true })
  local removed = vim.wait(TIMEOUT, function()
    local bytes = vim.fn.readblob(path)
    return bytes:sub(1, 3) ~= '\239\187\191' and not vim.bo[buf].bomb
  end, 50)
  truthy(removed, 'the mark is still in the file or in the buffer')
  local gone = vim.wait(TIMEOUT, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == 'PI014' then
        return false
      end
    end
    return true
  end, 50)
  truthy(gone, 'PI014 is still reported: ' .. vim.inspect(vim.diagnostic.get(buf)))
  truthy(vim.fn.readblob(path):sub(1, 16) == '{"type":"session', 'the file: ' .. vim.fn.readblob(path):sub(1, 40))
end)

test('a session in UTF-16, which Neovim decodes and pi cannot read, is written as UTF-8 by its repair', function()
  local buf, path = open_damaged('utf16-session.jsonl', 'PI017')
  eq(vim.bo[buf].fileencoding, 'utf-16le', 'Neovim decodes the file')
  vim.lsp.buf.code_action({ context = { only = { 'source.fixAll' } }, apply = true })
  local written = vim.wait(TIMEOUT, function()
    return vim.fn.readblob(path):sub(1, 16) == '{"type":"session' and vim.bo[buf].fileencoding == 'utf-8'
  end, 50)
  truthy(written, 'the file: ' .. vim.fn.readblob(path):sub(1, 40) .. ', fileencoding ' .. vim.bo[buf].fileencoding)
  eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]:sub(1, 16), '{"type":"session', 'the buffer read again')
  local gone = vim.wait(TIMEOUT, function()
    return #vim.diagnostic.get(buf) == 0
  end, 50)
  truthy(gone, 'still reported: ' .. vim.inspect(vim.diagnostic.get(buf)))
end)

test(':checkhealth pi_session says the server starts, and what is on in session buffers', function()
  vim.cmd('checkhealth pi_session')
  local text = buffer_text(vim.api.nvim_get_current_buf())
  truthy(text:find('OK the server starts and answers initialize: pi-session-server', 1, true), text)
  truthy(text:find('codelens on, inlay_hints on, folding on', 1, true), text)
end)

test(':checkhealth pi_session names an install command that works when the server is missing', function()
  local options = require('pi_session.config').options
  local saved = options.cmd
  options.cmd = { work .. '/no/such/pi-session' }
  vim.cmd('checkhealth pi_session')
  local text = buffer_text(vim.api.nvim_get_current_buf())
  options.cmd = saved
  truthy(text:find('pip install /path/to/pi-session-server', 1, true), text)
  truthy(not text:find('pip install pi-session-server', 1, true), 'the install hint names a package no index has')
end)

-- :PiSessionOpen. Sessions pi keeps for a directory: <agent dir>/sessions/--<its path, / as ->--/
local function sessions_dir_of(dir)
  return ('%s/sessions/--%s--'):format(agent_dir, (dir:gsub('^[/\\]', ''):gsub('[/\\:]', '-')))
end

local function iso(t)
  return os.date('!%Y-%m-%dT%H:%M:%S.000Z', t)
end

--- A session of two messages in `dir`'s session folder, written at time t (named when `name` is given).
local function pi_session_of(dir, t, question, name)
  local id = ('0199e2e0-aaaa-7bbb-8ccc-%012d'):format(t % 1000000000000)
  local path = ('%s/%s_%s.jsonl'):format(sessions_dir_of(dir), iso(t):gsub('[:.]', '-'), id)
  local lines = {
    vim.json.encode({ type = 'session', version = 3, id = id, timestamp = iso(t), cwd = dir }),
    vim.json.encode({ type = 'message', id = 'q0000001', parentId = vim.NIL, timestamp = iso(t + 1), message = { role = 'user', content = question, timestamp = (t + 1) * 1000 } }),
    vim.json.encode({
      type = 'message', id = 'q0000002', parentId = 'q0000001', timestamp = iso(t + 2),
      message = { role = 'assistant', content = { { type = 'text', text = 'Answered' } }, api = 'anthropic-messages', provider = 'anthropic', model = 'm', stopReason = 'stop', timestamp = (t + 2) * 1000,
        usage = { input = 1, output = 1, cacheRead = 0, cacheWrite = 0, totalTokens = 2, cost = { input = 0, output = 0, cacheRead = 0, cacheWrite = 0, total = 0 } } },
    }),
  }
  if name then
    table.insert(lines, vim.json.encode({ type = 'session_info', id = 'q0000003', parentId = 'q0000002', timestamp = iso(t + 3), name = name }))
  end
  vim.fn.mkdir(sessions_dir_of(dir), 'p')
  vim.fn.writefile(lines, path)
  return path
end

local project = vim.fs.normalize(vim.fn.resolve(work)) .. '/project'
local other_project = vim.fs.normalize(vim.fn.resolve(work)) .. '/other-project'
vim.fn.mkdir(project, 'p')
local now = os.time()
local older_path = pi_session_of(project, 1767603600, 'An older   question\nfor the picker')
local newer_path = pi_session_of(project, now - 120, 'A newer question', 'Picker named session')
local other_path = pi_session_of(other_project, now - 3 * 86400 - 60, 'A question elsewhere')

--- vim.ui.select stubbed: records each call (items, their lines, the prompt) and answers with
--- choose(items, the call's number); restore() puts the real one back.
local function stub_select(choose)
  local calls = {}
  local real = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    local lines = vim.tbl_map(opts.format_item, items)
    table.insert(calls, { items = items, lines = lines, prompt = opts.prompt })
    on_choice(choose(items, #calls))
  end
  return calls, function()
    vim.ui.select = real
  end
end

local function wait_calls(calls, n, what)
  truthy(vim.wait(TIMEOUT, function()
    return #calls >= n
  end, 20), what or 'vim.ui.select was not called')
end

--- Stop every pi_session server, and wait until they are gone.
local function stop_servers()
  for _, client in ipairs(vim.lsp.get_clients({ name = 'pi_session' })) do
    client:stop(true)
  end
  truthy(vim.wait(TIMEOUT, function()
    return #vim.lsp.get_clients({ name = 'pi_session' }) == 0
  end, 20), 'the servers did not stop')
end

test(':PiSessionOpen lists the directory\'s sessions newest first, without a server running, and opens the one picked', function()
  stop_servers()
  vim.cmd('silent! %bwipeout!')
  vim.fn.chdir(project)
  local calls, restore = stub_select(function(items)
    return items[2]
  end)
  vim.cmd('PiSessionOpen')
  eq(#calls, 0, 'the picker waits for nothing: it shows when the listing comes')
  wait_calls(calls, 1)
  restore()
  local lines = calls[1].lines
  eq(#lines, 3, 'two sessions and "All sessions...": ' .. vim.inspect(lines))
  -- the title and the file's name first; what follows them, as far as the editor's width has room
  -- (80 columns: pi's name of 67 cells shortened to its time and its UUID's start and end)
  local short = require('pi_session.picker').short_name
  truthy(vim.startswith(lines[1], 'Picker named session  ' .. short(vim.fs.basename(newer_path))), lines[1])
  truthy(vim.startswith(lines[2], 'An older question') and vim.endswith(lines[2], '  ' .. short(vim.fs.basename(older_path))), lines[2])
  local whole = require('pi_session.picker').format(calls[1].items[2], os.time(), false)
  eq(whole, ('An older question for the picker  %s  (%s · 2 messages)  %s'):format(vim.fs.basename(older_path), os.date('%Y-%m-%d %H:%M', 1767603602), vim.fs.dirname(older_path)), 'the older session')
  eq(lines[3], 'All sessions...', 'the last item')
  eq(calls[1].prompt, 'Pi sessions of ' .. vim.fn.getcwd(), 'the prompt')
  truthy(vim.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_name(0) == older_path
  end, 20), 'the session picked is not the current buffer: ' .. vim.api.nvim_buf_get_name(0))
  eq(vim.bo.filetype, 'pi-session', 'its filetype')
  truthy(require('pi_session').wait_client(0, TIMEOUT), 'the server does not attach to it')
  eq(#vim.lsp.get_clients({ name = 'pi_session' }), 1, 'the server started for the picker serves the buffer')
end)

test(':PiSessionOpen! and "All sessions..." list the sessions of every directory', function()
  local calls, restore = stub_select(function(items, call)
    return call == 1 and items[#items] or nil -- "All sessions...", then cancel
  end)
  vim.cmd('PiSessionOpen')
  wait_calls(calls, 2, '"All sessions..." did not list them')
  vim.cmd('PiSessionOpen!')
  wait_calls(calls, 3)
  restore()
  for i = 2, 3 do
    local lines = calls[i].lines
    eq(#lines, 3, 'three sessions, no "All sessions..." item: ' .. vim.inspect(lines))
    local short = require('pi_session.picker').short_name
    truthy(vim.startswith(lines[1], 'Picker named session  ' .. short(vim.fs.basename(newer_path))), lines[1])
    truthy(vim.startswith(lines[2], 'A question elsewhere  ' .. short(vim.fs.basename(other_path))), lines[2])
    truthy(vim.startswith(lines[3], 'An older question') and vim.endswith(lines[3], '  ' .. short(vim.fs.basename(older_path))), lines[3])
    local whole = require('pi_session.picker').format(calls[i].items[2], os.time(), true)
    eq(whole, ('A question elsewhere  %s  (3 days ago · 2 messages · %s)  %s'):format(vim.fs.basename(other_path), other_project, vim.fs.dirname(other_path)), 'with its folder')
    eq(calls[i].prompt, 'Pi sessions of all folders', 'the prompt')
  end
end)

--- The text on the screen, a string per row, without trailing blanks.
local function screen_rows()
  local rows = {}
  for row = 1, vim.o.lines do
    local cells = {}
    for col = 1, vim.o.columns do
      table.insert(cells, vim.fn.screenstring(row, col))
    end
    table.insert(rows, (table.concat(cells):gsub('%s+$', '')))
  end
  return rows
end

--- The rows Neovim's own picker (inputlist) shows for :PiSessionOpen in an editor `columns` wide,
--- from its prompt on (answered with <Esc>: the screen is read as it was shown).
local function picker_rows(columns)
  vim.fn.chdir(project)
  local before = vim.o.columns
  vim.o.columns = columns
  local rows
  local real = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 't', false)
    real(items, opts, function(choice)
      rows = screen_rows()
      on_choice(choice)
    end)
  end
  vim.cmd('PiSessionOpen')
  local shown = vim.wait(TIMEOUT, function()
    return rows ~= nil
  end, 20)
  vim.ui.select = real
  vim.o.columns = before
  truthy(shown, 'no picker')
  for i, row in ipairs(rows) do
    if vim.startswith(row, 'Pi sessions of ') then
      return vim.list_slice(rows, i + 1, i + 3)
    end
  end
  error('no prompt on the screen:\n' .. table.concat(rows, '\n'))
end

test(':PiSessionOpen in a narrow editor: a row per session, its title and its file\'s name left whole', function()
  eq(picker_rows(100), {
    '1: Picker named session  ' .. vim.fs.basename(newer_path),
    -- cut to leave the file's name room
    '2: An older question for the…  ' .. vim.fs.basename(older_path),
    '3: All sessions...',
  }, 'the rows shown')
  local picker = require('pi_session.picker')
  local long = { firstMessage = ('word '):rep(60), textTruncated = true, modified = vim.NIL, messageCount = 1, path = '/s/session.jsonl' }
  eq(picker.format(long, os.time(), false, 20), ('word '):rep(4) .. 'wor…  session.jsonl', 'a title is cut no shorter than MIN_TITLE_CELLS')
end)

test(':PiSessionOpen in 80 columns: pi\'s file names as their time and their UUID\'s start and end, on a row each', function()
  local name = vim.fs.basename(newer_path) -- <time>_0199e2e0-aaaa-7bbb-8ccc-<12 digits>.jsonl
  local time, last = name:sub(1, 24), name:sub(-10, -7)
  eq(picker_rows(80), {
    ('1: Picker named session  %s_0199e2e0…%s'):format(time, last),
    '2: An older question for the picker  2026-01-05T09-00-00-000Z_0199e2e0…3600',
    '3: All sessions...',
  }, 'the rows shown')
  local picker = require('pi_session.picker')
  eq(picker.short_name('2026-01-05T09-00-00-000Z_0199E2E0-aaaa-7bbb-8ccc-0000000000a1.jsonl'), '2026-01-05T09-00-00-000Z_0199E2E0…00a1', 'upper-case digits')
  for _, whole in ipairs({ 'notes.jsonl', '2026-01-05T09-00-00-000Z_my-session.jsonl', '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.json',
    '2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl.bak', 'x2026-01-05T09-00-00-000Z_0199e2e0-aaaa-7bbb-8ccc-0000000000a1.jsonl' }) do
    eq(picker.short_name(whole), whole, 'not pi\'s naming: as it is')
  end
  -- a name that is not pi's is never shortened, however narrow
  local custom = { name = 'Mine', modified = vim.NIL, messageCount = 1, path = '/s/2026-01-05_my-own-session-file-with-a-long-name.jsonl' }
  eq(picker.format(custom, os.time(), false, 40), 'Mine  2026-01-05_my-own-session-file-with-a-long-name.jsonl', 'a name of its own')
end)

--- vim.notify stubbed: what it is told goes into the list returned; restore() puts the real one back.
local function capture_notify()
  local said = {}
  local notify = vim.notify
  vim.notify = function(message, level)
    table.insert(said, { message, level })
  end
  return said, function()
    vim.notify = notify
  end
end

-- What vim.notify was told while `command` ran, until the first message (or TIMEOUT); whether it came.
local function notified_by(command)
  local said, restore = capture_notify()
  vim.cmd(command)
  local answered = vim.wait(TIMEOUT, function()
    return #said > 0
  end, 20)
  restore()
  return said, answered
end

test(':PiSessionOpen in a directory without sessions says so', function()
  local empty = vim.fs.normalize(vim.fn.resolve(work)) .. '/no-sessions'
  vim.fn.mkdir(empty, 'p')
  vim.fn.chdir(empty)
  local calls, restore = stub_select(function() end)
  local said, answered = notified_by('PiSessionOpen')
  restore()
  truthy(answered, 'nothing said')
  eq(said, { { ('pi-session: pi has no sessions of %s yet (:PiSessionOpen! lists all)'):format(empty), vim.log.levels.INFO } }, 'the message')
  eq(#calls, 0, 'no picker')
end)

test(':PiSessionOpen says what the server answered when the listing fails', function()
  local failing = {
    initialized = true,
    is_stopped = function()
      return false
    end,
    request = function(_, _, _, handler)
      handler({ code = -32005, message = 'EACCES: permission denied, scandir' }, nil)
    end,
  }
  local get_clients = vim.lsp.get_clients
  vim.lsp.get_clients = function(filter)
    return filter and filter.name == 'pi_session' and { failing } or get_clients(filter)
  end
  local calls, restore = stub_select(function() end)
  local said, answered = notified_by('PiSessionOpen!')
  vim.lsp.get_clients = get_clients
  restore()
  truthy(answered, 'nothing said')
  eq(said, { { 'pi-session: could not list the sessions: EACCES: permission denied, scandir', vim.log.levels.ERROR } }, 'the message')
  eq(#calls, 0, 'no picker')
end)

test(':PiSessionOpen while a listing is on its way cancels that one: one picker, of the later', function()
  local sent, cancelled = {}, {}
  local slow = {
    initialized = true,
    is_stopped = function()
      return false
    end,
    request = function(_, method, _, handler)
      table.insert(sent, { method = method, handler = handler })
      return true, 100 + #sent
    end,
    cancel_request = function(_, id)
      table.insert(cancelled, id)
    end,
  }
  local get_clients = vim.lsp.get_clients
  vim.lsp.get_clients = function(filter)
    return filter and filter.name == 'pi_session' and { slow } or get_clients(filter)
  end
  local said, restore_notify = capture_notify()
  local calls, restore = stub_select(function() end)
  vim.cmd('PiSessionOpen')
  vim.cmd('PiSessionOpen!')
  eq(vim.tbl_map(function(r)
    return r.method
  end, sent), { 'pi/list', 'pi/listAll' }, 'the requests')
  eq(cancelled, { 101 }, 'the first listing is cancelled on the server')
  -- the server answers the cancelled one all the same (RequestCancelled), then the other
  sent[1].handler({ code = -32800, message = 'Request with id "101" is canceled' }, nil)
  sent[2].handler(nil, { { path = '/s/later.jsonl', name = 'The later listing', modified = vim.NIL, messageCount = 1 } })
  wait_calls(calls, 1)
  settle() -- (a picker of the cancelled listing would be scheduled by now)
  vim.lsp.get_clients = get_clients
  restore_notify()
  restore()
  eq(#calls, 1, 'one picker')
  eq(calls[1].prompt, 'Pi sessions of all folders', 'of the later listing')
  eq(said, {}, 'nothing said of the cancelled one')
end)

test(':PiSessionOpen lists where pi\'s command line keeps sessions (cliSessionDir, in the current directory)', function()
  local sent = {}
  local client = {
    initialized = true,
    is_stopped = function()
      return false
    end,
    request = function(_, method, params, handler)
      table.insert(sent, { method = method, params = params, handler = handler })
      return true, 200 + #sent
    end,
    cancel_request = function() end,
  }
  local get_clients = vim.lsp.get_clients
  vim.lsp.get_clients = function(filter)
    return filter and filter.name == 'pi_session' and { client } or get_clients(filter)
  end
  local _, restore_notify = capture_notify()
  local _, restore = stub_select(function() end)
  local cwd = vim.fn.getcwd()
  vim.cmd('PiSessionOpen')
  vim.cmd('PiSessionOpen!')
  vim.lsp.get_clients = get_clients
  restore_notify()
  restore()
  eq(vim.tbl_map(function(r)
    return { r.method, r.params }
  end, sent), {
    { 'pi/list', { cwd = cwd, environment = { cwd = cwd }, cliSessionDir = true, text = 'first', maxTextChars = 200 } },
    { 'pi/listAll', { environment = { cwd = cwd }, cliSessionDir = true, text = 'first', maxTextChars = 200 } },
  }, 'the requests')
end)

test('the picker\'s items: name or first message on one line, when, messages', function()
  local picker = require('pi_session.picker')
  local t = picker.epoch('2026-03-10T12:00:00.000Z')
  eq(t, 1773144000, 'epoch of an ISO date')
  eq(picker.when('2026-03-10T11:59:30.000Z', t), 'just now', 'seconds ago')
  eq(picker.when('2026-03-10T11:01:00.000Z', t), '59 minutes ago', 'minutes ago')
  eq(picker.when('2026-03-10T09:00:00.000Z', t), '3 hours ago', 'hours ago')
  eq(picker.when('2026-03-09T12:00:00.000Z', t), '1 day ago', 'a day ago')
  eq(picker.when('2026-03-01T12:00:00.000Z', t), os.date('%Y-%m-%d %H:%M', t - 9 * 86400), 'over a week ago')
  eq(picker.when(vim.NIL, t), 'unknown time', 'an invalid date')
  eq(picker.title({ firstMessage = 'cut', textTruncated = true }), 'cut…', 'a first message cut short')
  eq(picker.title({ name = '  ', firstMessage = '' }), '(no messages)', 'nothing to show')
  eq(picker.format({ firstMessage = 'hi', modified = '2026-03-10T11:00:00.000Z', messageCount = 1234, path = '/s/a.jsonl' }, t, false),
    'hi  a.jsonl  (1 hour ago · 1,234 messages)  /s', 'a line')
  eq(picker.format({ firstMessage = 'hi', modified = '2026-03-10T11:00:00.000Z', messageCount = 1234, path = '/s/a.jsonl' }, t, false, 42),
    'hi  a.jsonl  (1 hour ago · 1,234 messages)', 'as much as 42 cells hold')
  local real_home = vim.env.HOME
  vim.env.HOME = '/home/ann'
  local under_home = { firstMessage = 'hi', modified = '2026-03-10T11:00:00.000Z', messageCount = 1, cwd = '/home/ann/proj',
    path = '/home/ann/.pi/agent/sessions/--home-ann-proj--/s.jsonl' }
  local line = picker.format(under_home, t, true)
  local elsewhere = picker.format({ firstMessage = 'hi', modified = '2026-03-10T11:00:00.000Z', messageCount = 1, path = '/home/anna/s.jsonl' }, t, false)
  vim.env.HOME = real_home
  eq(line, 'hi  s.jsonl  (1 hour ago · 1 message · ~/proj)  ~/.pi/agent/sessions/--home-ann-proj--', 'a file and a folder under the home folder')
  eq(elsewhere, 'hi  s.jsonl  (1 hour ago · 1 message)  /home/anna', 'a path only sharing the home folder\'s first letters')
end)

test(':PiSessionContext, :PiSessionBranch and :PiSessionLabel wait for nothing: the server answers in the background', function()
  -- a session of its own: the branch and the labels stay out of the other tests' session
  local path = copy(fixtures .. '/broken-session.jsonl', work .. '/held/held-session.jsonl')
  vim.cmd('silent! %bwipeout!')
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local client = require('pi_session').wait_client(buf, TIMEOUT)
  truthy(client, 'the server did not attach')
  vim.api.nvim_win_set_cursor(0, { 3, 0 }) -- u0000001
  -- the server holds its answers back (a session of gigabytes being opened) until released
  local request, request_sync = client.request, client.request_sync
  local held, sync_calls = {}, 0
  client.request = function(self, method, params, handler, ...)
    if method:match('^pi/') then
      local rest = { ... }
      table.insert(held, function()
        request(self, method, params, handler, unpack(rest))
      end)
      return true, 0
    end
    return request(self, method, params, handler, ...)
  end
  client.request_sync = function(...)
    sync_calls = sync_calls + 1
    return request_sync(...)
  end
  local said, restore_notify = capture_notify()
  local ok, failure = pcall(function()
    vim.cmd('PiSessionContext')
    vim.cmd('PiSessionBranch')
    vim.cmd('PiSessionLabel held back')
    eq(vim.api.nvim_get_current_buf(), buf, 'nothing opened before the server answered')
    eq(#held, 3, 'one request each (the entry under the cursor), on their way')
    -- released: each asks its own request next, released in turn
    local rounds = 0
    while #held > 0 and rounds < 10 do
      local now = held
      held = {}
      for _, release in ipairs(now) do
        release()
      end
      vim.wait(TIMEOUT, function()
        return #held > 0 or #said > 0 and vim.fn.bufnr('pi-session-context://held-session.jsonl@u0000001.md') > 0
      end, 20)
      rounds = rounds + 1
    end
    truthy(vim.wait(TIMEOUT, function()
      return vim.fn.bufnr('pi-session-context://held-session.jsonl@u0000001.md') > 0 and #said > 0
    end, 20), 'the context and the branch did not come: ' .. vim.inspect(said))
  end)
  client.request, client.request_sync = request, request_sync
  restore_notify()
  truthy(ok, failure)
  eq(sync_calls, 0, 'synchronous requests')
  eq(said, { { 'pi-session: the leaf is now u0000001', nil } }, 'what was said')
  local file, last
  vim.wait(TIMEOUT, function()
    file = vim.fn.readfile(path)
    last = vim.json.decode(file[#file])
    return last.type == 'label'
  end, 20)
  eq({ last.type, last.targetId, last.label }, { 'label', 'u0000001', 'held back' }, 'the label appended')
  vim.cmd('close') -- the context's window: back to the session's
  eq(vim.api.nvim_get_current_buf(), buf, 'the session buffer')
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('PiSessionLabel!') -- cleared again
  truthy(vim.wait(TIMEOUT, function()
    local lines = vim.fn.readfile(path)
    return #lines == #file + 1
  end, 20), 'the label was not cleared')
end)

test('a server that crashed is said to have stopped, and :edit starts it again; a line pi skips is named as such', function()
  local path = copy(fixtures .. '/broken-session.jsonl', work .. '/crash/crash-session.jsonl')
  vim.cmd('silent! %bwipeout!')
  stop_servers()
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'the server did not attach')
  local server = vim.api.nvim_get_proc_children(vim.fn.getpid())
  eq(#server, 1, 'one server process')
  vim.uv.kill(server[1], 'sigkill')
  truthy(vim.wait(TIMEOUT, function()
    return require('pi_session').client(buf) == nil
  end, 20), 'the client did not notice')
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  local said = notified_by('PiSessionBranch')
  eq(said, { { 'pi-session: the pi-session language server stopped (:edit starts it again; see :checkhealth pi_session)', vim.log.levels.ERROR } }, 'what was said')
  vim.cmd('edit')
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'no server after :edit')
  local node = entry_at(buf, 2)
  eq(node and node.id, 'u0000001', 'the new server answers')
  -- line 8 is cut off (pi skips it): the message names it as one of the lines without an entry
  vim.api.nvim_win_set_cursor(0, { 8, 0 })
  said = notified_by('PiSessionBranch')
  eq(said, { { 'pi-session: line 8 holds no entry pi reads (the header, a blank line, or a line pi skips): put the cursor on an entry', vim.log.levels.ERROR } }, 'on a line pi skips')
  eq(#vim.api.nvim_get_autocmds({ group = 'pi_session_attach', buffer = buf, event = 'CursorHold' }), 1, 'the highlights set up once')
end)

test(':PiSessionTree of an empty session says it has no entries, not that the filter hides them', function()
  local path = work .. '/home/.pi/agent/sessions/--work-demo--/empty-session.jsonl'
  vim.fn.writefile({}, path)
  vim.cmd('silent! %bwipeout!')
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  eq(vim.bo[buf].filetype, 'pi-session', 'its filetype')
  truthy(require('pi_session').wait_client(buf, TIMEOUT), 'the server did not attach')
  vim.cmd('PiSessionTree')
  wait_lines(vim.api.nvim_get_current_buf(), function(lines)
    return lines[4] == '(the session has no entries yet)'
  end, 'the empty tree')
end)

test("a session read with its lines ending at carriage returns (fileformat=mac) is read again as pi's lines, and written back byte for byte", function()
  -- the header and the first entry hold lone CRs (JSON white space to pi): more "\r" than "\n" in
  -- the first lines, so 'fileformats' with "mac" reads the file as mac; it is found a session still
  local lines = {
    '{"type":"session",\r"version":3,\r"id":"0199e2e0-dddd-7eee-8fff-0000000000d1","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/work/demo"}',
    '{"type":"message",\r"id":"d0000001",\r"parentId":null,\r"timestamp":"2026-01-05T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1767607201000}}',
    '{"type":"message","id":"d0000002","parentId":"d0000001","timestamp":"2026-01-05T10:00:02.000Z","message":{"role":"user","content":"again","timestamp":1767607202000}}',
  }
  local bytes = table.concat(lines, '\n') .. '\n'
  local fileformats = vim.o.fileformats
  vim.o.fileformats = 'unix,dos,mac'
  local said, restore = capture_notify()
  local ok, err = pcall(function()
    for _, how in ipairs({ 'detected', 'forced' }) do
      local path = work .. '/mac/' .. how .. '-session.jsonl'
      vim.fn.mkdir(vim.fs.dirname(path), 'p')
      vim.fn.writefile(vim.split(bytes, '\n', { plain = true }), path, 'b')
      vim.o.fileformats = how == 'forced' and 'unix,dos' or 'unix,dos,mac'
      vim.cmd('silent! %bwipeout!')
      vim.cmd((how == 'forced' and 'edit ++ff=mac ' or 'edit ') .. vim.fn.fnameescape(path))
      local buf = vim.api.nvim_get_current_buf()
      eq(vim.bo[buf].filetype, 'pi-session', how .. ': its filetype')
      truthy(vim.wait(TIMEOUT, function()
        return vim.bo[buf].fileformat == 'unix'
      end, 20), how .. ': not read again as unix')
      eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), lines, how .. ": the buffer's lines are pi's")
      eq(said[#said], { 'pi-session: ' .. how .. '-session.jsonl read again with fileformat=unix: pi ends its lines at line feeds only, and a carriage return inside a line is part of it', vim.log.levels.INFO }, how .. ': what was said')
      vim.cmd('silent write')
      eq(table.concat(vim.fn.readfile(path, 'b'), '\n'), bytes, how .. ': the file as it was')
    end
  end)
  restore()
  vim.o.fileformats = fileformats
  vim.cmd('silent! %bwipeout!')
  truthy(ok, err)
end)

say(('%d passed, %d failed'):format(results.passed, results.failed))
vim.fn.delete(work, 'rf')
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop(true)
end
os.exit(results.failed == 0 and 0 or 1)
