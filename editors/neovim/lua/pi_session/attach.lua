-- What the plugin turns on in a session buffer when the pi-session server attaches (setup options
-- `codelens`, `inlay_hints`, `folding`, all on by default): the server's code lenses (entry counts,
-- branch points, the leaf), its inlay hints, and folding by its folding ranges.
local M = {}

local group = vim.api.nvim_create_augroup('pi_session_attach', { clear = true })

local function fold_by_lsp(win)
  vim.wo[win][0].foldmethod = 'expr'
  vim.wo[win][0].foldexpr = 'v:lua.vim.lsp.foldexpr()'
  vim.wo[win][0].foldlevel = 99 -- open: the folds are there to close (zc, zM)
end

---@param client vim.lsp.Client
---@param bufnr integer
function M.on_attach(client, bufnr)
  local options = require('pi_session.config').options
  if options.inlay_hints ~= false and client:supports_method('textDocument/inlayHint', bufnr) then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
  if options.codelens ~= false and client:supports_method('textDocument/codeLens', bufnr) then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'TextChanged' }, {
      group = group,
      buffer = bufnr,
      callback = function()
        vim.lsp.codelens.refresh({ bufnr = bufnr })
      end,
    })
  end
  if options.folding ~= false and client:supports_method('textDocument/foldingRange', bufnr) then
    for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
      fold_by_lsp(win)
    end
    vim.api.nvim_create_autocmd('BufWinEnter', {
      group = group,
      buffer = bufnr,
      callback = function()
        fold_by_lsp(vim.api.nvim_get_current_win())
      end,
    })
  end
end

return M
