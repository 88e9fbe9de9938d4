-- pi session files get the `pi-session` filetype, winning over the built-in `jsonl`:
--  * any .jsonl under a .pi/agent/sessions/ directory (pi's default place), and
--  * any other .jsonl whose first line is a pi session header ({"type":"session","id":"...",...}).
-- Ordinary .jsonl files fall through to `jsonl` (a pattern returning nil does not match).

local function is_header(line)
  if type(line) ~= 'string' or not line:match('^%s*{') or not line:find('"session"', 1, true) then
    return false
  end
  local ok, value = pcall(vim.json.decode, line)
  return ok and type(value) == 'table' and value.type == 'session' and type(value.id) == 'string'
end

vim.filetype.add({
  pattern = {
    ['.*/%.pi/agent/sessions/.*%.jsonl'] = 'pi-session',
    ['.*%.jsonl'] = {
      function(_, bufnr)
        local first = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1]
        if first == nil or first == '' then
          -- not read yet (e.g. :setfiletype from a BufNew): look at the file itself
          local name = vim.api.nvim_buf_get_name(bufnr)
          local ok, lines = pcall(vim.fn.readfile, name, '', 1)
          first = ok and lines[1] or nil
        end
        if is_header(first) then
          return 'pi-session'
        end
      end,
      -- above the extension rule for jsonl, below exact paths
      { priority = 10 },
    },
  },
})
