-- pi_session: user commands and LSP enablement for pi coding-agent session files.
if vim.g.loaded_pi_session then
  return
end
vim.g.loaded_pi_session = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('pi_session needs Neovim 0.11 or newer', vim.log.levels.WARN)
  return
end

local function complete(options)
  return function(lead)
    return vim.tbl_filter(function(o)
      return o:find(lead, 1, true) == 1
    end, options)
  end
end

vim.api.nvim_create_user_command('PiSessionTree', function(args)
  require('pi_session.tree').open(args.args)
end, {
  nargs = '?',
  complete = complete(require('pi_session.config').filters),
  desc = 'Show the session tree (filter: default, no-tools, user-only, labeled-only, all)',
})

vim.api.nvim_create_user_command('PiSessionContext', function(args)
  local opts = {}
  for _, word in ipairs(args.fargs) do
    if word == 'leaf' then
      opts.leaf = true
    elseif word == 'json' or word == 'markdown' then
      opts.format = word
    else
      return vim.notify('pi-session: :PiSessionContext [leaf] [json|markdown]', vim.log.levels.ERROR)
    end
  end
  require('pi_session.context').show(opts)
end, {
  nargs = '*',
  complete = complete({ 'leaf', 'json', 'markdown' }),
  desc = 'Show the LLM context at the entry under the cursor (or at the leaf)',
})

vim.api.nvim_create_user_command('PiSessionView', function(args)
  require('pi_session.view').open(args.args ~= '' and args.args or nil)
end, {
  nargs = '?',
  desc = 'Show the session as a conversation (the path to the leaf, or to the entry id given)',
})

vim.api.nvim_create_user_command('PiSessionOpen', function(args)
  require('pi_session.picker').open(args.bang)
end, { bang = true, desc = "Pick one of pi's sessions of the current directory (! all of them) and open it" })

vim.api.nvim_create_user_command('PiSessionBranch', function()
  require('pi_session').branch()
end, { desc = 'Make the entry under the cursor the leaf' })

vim.api.nvim_create_user_command('PiSessionLabel', function(args)
  require('pi_session').label(args.bang and '' or (args.args ~= '' and args.args or nil))
end, { nargs = '?', bang = true, desc = 'Label the entry under the cursor (:PiSessionLabel! clears)' })

-- JSON highlighting by tree-sitter too, for whoever has a JSON parser installed
vim.treesitter.language.register('json', 'pi-session')

local lsp_group = vim.api.nvim_create_augroup('pi_session_lsp_attach', { clear = true })
for event, handler in pairs({ LspAttach = 'on_attach', LspDetach = 'on_detach' }) do
  vim.api.nvim_create_autocmd(event, {
    group = lsp_group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == 'pi_session' then
        require('pi_session.attach')[handler](client, args.buf)
      end
    end,
  })
end

if vim.g.pi_session_auto_enable ~= false then
  vim.lsp.enable('pi_session')
end
