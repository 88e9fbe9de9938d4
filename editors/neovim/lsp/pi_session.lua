-- Configuration of the pi-session language server for vim.lsp.config / vim.lsp.enable (Neovim 0.11+).
--
--   vim.lsp.enable('pi_session')                       -- the plugin does this unless
--                                                      -- vim.g.pi_session_auto_enable = false
--   vim.lsp.config('pi_session', { cmd = { '/path/to/pi-session', 'serve' } })   -- another command
--   require('pi_session').setup({ cmd = { '/venv/bin/python', '-m', 'pi_session_server' } })
--                                                      -- the same, without the `serve` subcommand
---@type vim.lsp.Config
return {
  -- a function so that setup{cmd} and vim.g.pi_session_cmd given after startup still count
  cmd = function(dispatchers)
    return vim.lsp.rpc.start(require('pi_session.config').server_cmd(), dispatchers)
  end,
  -- session files live outside projects: no root markers, one server for all of them
  filetypes = { 'pi-session' },
  handlers = {
    -- The server pushes diagnostics and also answers pulls, which Neovim 0.11 makes for attached
    -- buffers: keep the pulled ones only, or every problem shows twice.
    ['textDocument/publishDiagnostics'] = function(err, result, ctx)
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client and client.server_capabilities.diagnosticProvider and result and result.uri then
        local ok, fname = pcall(vim.uri_to_fname, result.uri)
        local bufnr = ok and vim.fn.bufnr(fname) or -1
        if bufnr ~= -1 and vim.lsp.buf_is_attached(bufnr, client.id) then
          return
        end
      end
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx)
    end,
    ['pi/didChange'] = function(_, params)
      require('pi_session.tree').on_did_change(params)
    end,
    ['pi/foreignWriter'] = function(_, params)
      vim.notify('pi-session: ' .. tostring(params and params.message or 'another program wrote the session file'), vim.log.levels.WARN)
    end,
    ['pi/largeFile'] = function(_, params)
      vim.notify('pi-session: ' .. tostring(params and params.message or 'large file'), vim.log.levels.INFO)
    end,
  },
}
