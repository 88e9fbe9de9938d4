-- What the plugin turns on in a session buffer when the pi-session server attaches (setup options
-- `codelens`, `inlay_hints`, `folding`, `highlights`, `completion`, all on by default): the
-- server's code lenses (entry counts, branch points, the leaf), its inlay hints, folding by its
-- folding ranges, the highlights of the entry under the cursor and the ids naming it (on
-- CursorHold), and completion of ids and entry types as `"` is typed (vim.lsp.completion).
local M = {}

local group = vim.api.nvim_create_augroup('pi_session_attach', { clear = true })

--- Ask the server for the code lenses of a session buffer and show them. Their titles carry
--- codicons ("$(git-branch) 2 branches", drawn by VS Code), shown here as plain glyphs
--- (config.icons); vim.lsp.codelens.refresh() would show them as text.
---@param bufnr integer
function M.refresh_lenses(bufnr)
  local client = require('pi_session').client(bufnr)
  if not client or not client:supports_method('textDocument/codeLens', bufnr) then
    return
  end
  local plain = require('pi_session.config').plain_icons
  local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
  client:request('textDocument/codeLens', params, function(err, result, ctx)
    if err and err.code == vim.lsp.protocol.ErrorCodes.ContentModified then
      return -- a later change overtook it: the lenses are asked for again (TextChanged, InsertLeave)
    end
    for _, lens in ipairs(type(result) == 'table' and result or {}) do
      if lens.command and type(lens.command.title) == 'string' then
        lens.command.title = plain(lens.command.title)
      end
    end
    vim.lsp.codelens.on_codelens(err, result, ctx)
  end, bufnr)
end

local function fold_by_lsp(win)
  vim.wo[win][0].foldmethod = 'expr'
  vim.wo[win][0].foldexpr = 'v:lua.vim.lsp.foldexpr()'
  vim.wo[win][0].foldlevel = 99 -- open: the folds are there to close (zc, zM)
end

---@param client vim.lsp.Client
---@param bufnr integer
function M.on_attach(client, bufnr)
  vim.b[bufnr].pi_session_server_stopped = nil
  local options = require('pi_session.config').options
  if options.inlay_hints ~= false and client:supports_method('textDocument/inlayHint', bufnr) then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
  if options.codelens ~= false and client:supports_method('textDocument/codeLens', bufnr) then
    M.refresh_lenses(bufnr)
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'TextChanged' }, {
      group = group,
      buffer = bufnr,
      callback = function()
        M.refresh_lenses(bufnr)
      end,
    })
  end
  if options.highlights ~= false and client:supports_method('textDocument/documentHighlight', bufnr) then
    vim.api.nvim_create_autocmd({ 'CursorHold', 'CursorHoldI' }, {
      group = group,
      buffer = bufnr,
      callback = vim.lsp.buf.document_highlight,
    })
    vim.api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI', 'BufLeave' }, {
      group = group,
      buffer = bufnr,
      callback = vim.lsp.buf.clear_references,
    })
  end
  if options.completion ~= false and client:supports_method('textDocument/completion', bufnr) then
    vim.lsp.completion.enable(true, client.id, bufnr, { autotrigger = true })
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

--- The server left the buffer: its autocommands go with it (a server attaching again sets up its
--- own). When the server stopped (it exited, crashed, or was stopped) the buffer keeps that, so a
--- command says the server stopped, not that none was ever attached.
---@param client vim.lsp.Client
---@param bufnr integer
function M.on_detach(client, bufnr)
  vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.b[bufnr].pi_session_server_stopped = client:is_stopped() or nil
  end
end

return M
