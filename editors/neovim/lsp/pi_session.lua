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
  -- the pi release the server follows: setup{pi_version}, read when the server starts; and how
  -- the buffer's lines end: at "\n" only (a lone "\r" stays in its line, shown as ^M), as pi's
  -- do, where the LSP would end a line at a lone "\r" too and number the lines after it otherwise
  before_init = function(params)
    params.initializationOptions = vim.tbl_extend('force', params.initializationOptions or {}, {
      piVersion = require('pi_session.config').pi_version(),
      lineBreaks = 'newline',
    })
  end,
  -- (Neovim pulls the diagnostics of attached buffers; the server pushes only those of files no
  -- client opened, so each problem shows once without a filter.)
  commands = {
    -- a repair the server makes to the file on disk (a byte order mark Neovim hides in 'bomb', a
    -- file in UTF-16 Neovim decoded): the server does it, then the buffer, which has no unsaved
    -- change (else the server refuses), is read again from the file, which is UTF-8 now (a reload
    -- as :checktime makes keeps the 'fileencoding' the buffer had), or the server says why it did
    -- nothing
    ['pi.session.repairFile'] = function(command, ctx)
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if not client then
        return
      end
      local params = { command = command.command, arguments = command.arguments }
      client:request('workspace/executeCommand', params, function(err, result)
        if err then
          return vim.notify('pi-session: ' .. tostring(err.message), vim.log.levels.ERROR)
        end
        if type(result) == 'table' and result.applied and vim.api.nvim_buf_is_valid(ctx.bufnr) then
          vim.api.nvim_buf_call(ctx.bufnr, function()
            pcall(vim.cmd, 'silent edit ++enc=utf-8')
          end)
        end
      end, ctx.bufnr)
    end,
  },
  handlers = {
    -- Neovim asks for every line's hints after each change; the server answers one a later change
    -- overtook ContentModified (the hints of the new text are on their way), which Neovim's
    -- handler would log as an error at each keystroke
    ['textDocument/inlayHint'] = function(err, result, ctx, config)
      if err and err.code == vim.lsp.protocol.ErrorCodes.ContentModified then
        return
      end
      return vim.lsp.handlers['textDocument/inlayHint'](err, result, ctx, config)
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
