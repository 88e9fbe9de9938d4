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

-- the plugin, as a user's packpath/lazy.nvim would load it
vim.opt.runtimepath:prepend(plugin_root)
vim.cmd('filetype on')
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

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
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
  '<CR> jump  f filter  r refresh  c context  b branch  L label  q close',
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
test(':PiSessionTree draws the tree', function()
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('PiSessionTree')
  tree_buf = vim.api.nvim_get_current_buf()
  eq(vim.api.nvim_buf_get_lines(tree_buf, 0, -1, false), EXPECTED_TREE, 'tree buffer')
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
  local text = buffer_text(vim.api.nvim_get_current_buf())
  truthy(text:find('filter: all', 1, true), 'header names the filter')
  truthy(text:find('[model: claude-sonnet-4-5]', 1, true), 'model change row missing:\n' .. text)
  truthy(text:find('[label: scanner-try]', 1, true), 'label row missing:\n' .. text)
  vim.cmd('PiSessionTree default')
  eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), EXPECTED_TREE, 'back to the default filter')
end)

-- From here on the tree comes in pages of 3 nodes (the default is 50,000, the most one reply may
-- hold; a bigger tree asked for in one piece is refused with TooLarge): the 6-entry default tree takes
-- two pages, and the rest of the suite (context, branch, label, didChange) runs on pages too.
local tree_requests = {}
test('small pages (tree_page_size = 3): :PiSessionTree joins two pages into the same tree; entry lookup pages too', function()
  require('pi_session.config').options.tree_page_size = 3
  local request = client.request
  client.request = function(self, method, params, ...)
    if method == 'pi/getTree' then
      table.insert(tree_requests, { offset = params.offset, limit = params.limit, filter = params.filter or 'none' })
    end
    return request(self, method, params, ...)
  end
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('PiSessionTree')
  eq(vim.api.nvim_get_current_buf(), tree_buf, 'the tree buffer is reused')
  eq(vim.api.nvim_buf_get_lines(tree_buf, 0, -1, false), EXPECTED_TREE, 'tree buffer from pages')
  eq(tree_requests, {
    { offset = 0, limit = 3, filter = 'default' },
    { offset = 3, limit = 3, filter = 'default' },
  }, 'pi/getTree requests')
  -- the entry under the cursor: asked for by line, no tree pages
  tree_requests = {}
  local node = require('pi_session').entry_at_line(session_buf, 9) -- line 10: a0000003
  eq(node and node.id, 'a0000003', 'entry on line 10')
  eq(node and node.line, 9, 'its line')
  eq(#tree_requests, 0, 'no pi/getTree for the entry on a line')
  eq(require('pi_session').entry_at_line(session_buf, 0), nil, 'the header line has no entry')
  -- a server without pi/getEntryAtLine: filter "none" (all 8 entries) in pages of 3
  local request_sync = client.request_sync
  client.request_sync = function(self, method, params, ...)
    if method == 'pi/getEntryAtLine' then
      return { err = { code = -32601, message = 'Unhandled method pi/getEntryAtLine' } }
    end
    return request_sync(self, method, params, ...)
  end
  node = require('pi_session').entry_at_line(session_buf, 9)
  client.request_sync = request_sync
  eq(node and node.id, 'a0000003', 'entry on line 10, from the tree')
  eq(vim.tbl_map(function(r)
    return r.offset
  end, tree_requests), { 0, 3, 6 }, 'offsets of the lookup')
  local whole = require('pi_session').get_tree(session_buf, { filter = 'all' })
  local unpaged = require('pi_session').request_sync(session_buf, 'pi/getTree', { filter = 'all', form = 'flat' })
  eq(whole.nodes, unpaged.nodes, 'pages joined == the unpaged reply')
  eq(whole.leafId, unpaged.leafId, 'leafId')
  eq(whole.total, #unpaged.nodes, 'total')
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(tree_buf)[1])
end)

test(':PiSessionContext at the entry under the cursor', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 4, 0 }) -- a0000001
  vim.cmd('PiSessionContext')
  local buf = vim.api.nvim_get_current_buf()
  local text = buffer_text(buf)
  eq(vim.bo[buf].filetype, 'markdown', 'filetype')
  truthy(text:find('# Context of broken-session.jsonl at entry a0000001', 1, true), text)
  truthy(text:find('- messages: 2', 1, true), text)
  truthy(text:find('## 2. assistant (claude-sonnet-4-5)\n\nSure. Which module first?', 1, true), text)
  eq(vim.bo[buf].modifiable, false, 'read-only')
end)

test(':PiSessionContext leaf json', function()
  vim.api.nvim_set_current_win(session_win)
  vim.cmd('PiSessionContext leaf json')
  local decoded = vim.json.decode(buffer_text(vim.api.nvim_get_current_buf()))
  eq(#decoded.messages, 4, 'messages at the leaf')
  eq(decoded.messages[4].content[1].text, 'Loader refactored and tested', 'last message')
end)

test(':PiSessionBranch moves the leaf and the tree follows', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- a0000002
  vim.cmd('PiSessionBranch')
  local lines = vim.api.nvim_buf_get_lines(tree_buf, 0, -1, false)
  truthy(vim.tbl_contains(lines, '├─ * user: Start with the scanner  [scanner-try]'), vim.inspect(lines))
  truthy(vim.tbl_contains(lines, '│  * assistant: Scanner split into two functions  <- leaf'), vim.inspect(lines))
end)

test(':PiSessionLabel labels the entry (the server appends a label line)', function()
  vim.api.nvim_set_current_win(session_win)
  vim.api.nvim_win_set_cursor(0, { 3, 0 }) -- u0000001
  vim.cmd('PiSessionLabel start')
  local file = vim.fn.readfile(session_path)
  local last = vim.json.decode(file[#file])
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
  truthy(seen, 'the tree did not follow the outside append:\n' .. tree_text)
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
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = 1, character = 10 } }
  local reply = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, TIMEOUT)
  local text = ''
  for _, r in pairs(reply or {}) do
    truthy(not r.err, 'hover error: ' .. vim.inspect(r.err))
    text = text .. hover_text(r.result)
  end
  truthy(text:find('lone \u{FFFD} half', 1, true), 'hover: ' .. text)
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

test(':checkhealth pi_session says the server starts', function()
  vim.cmd('checkhealth pi_session')
  local text = buffer_text(vim.api.nvim_get_current_buf())
  truthy(text:find('OK the server starts and answers initialize: pi-session-server', 1, true), text)
end)

say(('%d passed, %d failed'):format(results.passed, results.failed))
vim.fn.delete(work, 'rf')
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop(true)
end
os.exit(results.failed == 0 and 0 or 1)
