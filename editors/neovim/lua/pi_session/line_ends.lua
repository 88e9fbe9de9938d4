-- pi ends a line at "\n" only: a "\r" inside a line is JSON white space, part of pi's line. Neovim
-- reads a file in 'fileformat' mac when told to (++ff=mac) or when 'fileformats' holds "mac" and
-- the first lines hold more "\r" than "\n": its lines then end at "\r", so they are not pi's (a
-- line break typed there writes a "\r", which pi reads as part of the line), and a write adds a
-- "\r" at the end of the file. A session buffer read so is read again as unix: its lines are pi's, a
-- lone "\r" shows as ^M, and a write gives the file back byte for byte ('fileformat' dos strips only
-- the "\r" of each "\r\n", and writes it back).
local M = {}

---@param bufnr integer
local function shown_name(bufnr)
  return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t')
end

--- Read the session buffer `bufnr` again as unix if it was read in 'fileformat' mac; a buffer
--- changed since it was read is left as it is, with a warning (reading it again loses the changes).
---@param bufnr integer
function M.read_as_pi_lines(bufnr)
  if vim.bo[bufnr].fileformat ~= 'mac' then
    return
  end
  if vim.bo[bufnr].modified or vim.fn.filereadable(vim.api.nvim_buf_get_name(bufnr)) == 0 then
    vim.notify(
      ('pi-session: %s is read with its lines ending at carriage returns (fileformat=mac); pi ends its lines at line feeds only: :edit! ++ff=unix reads it again as pi reads it (dropping the changes)'):format(
        shown_name(bufnr)
      ),
      vim.log.levels.WARN
    )
    return
  end
  -- (after the read under way, whose autocommands this runs in, has ended)
  vim.schedule(function()
    if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].fileformat ~= 'mac' or vim.bo[bufnr].modified then
      return
    end
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd('silent edit ++ff=unix')
    end)
    vim.notify(
      ('pi-session: %s read again with fileformat=unix: pi ends its lines at line feeds only, and a carriage return inside a line is part of it'):format(
        shown_name(bufnr)
      ),
      vim.log.levels.INFO
    )
  end)
end

return M
