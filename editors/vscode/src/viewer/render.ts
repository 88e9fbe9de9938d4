// HTML of the session viewer: one block per entry of the path, and the session totals. Everything
// that comes from the file is escaped (message text goes through markdown-it with raw HTML off; all
// other text through escapeHtml), so a session holding HTML or script tags shows them as text.
// No vscode import: unit-tested directly.
import MarkdownIt from 'markdown-it';
import { lineName } from '../lineBreaks';
import type { LoneCarriageReturnLine, PathItem, SessionStats } from '../protocol';

const markdown = new MarkdownIt({ html: false, linkify: true, breaks: false });

/** Text longer than this is cut in the viewer (the whole line is one click away: "line N"). */
export const MAX_TEXT = 20_000;
// codicon "git-branch" (MIT, microsoft/vscode-codicons) inline: a webview has no codicon font
const BRANCH_ICON =
  '<svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><path fill="currentColor" d="M13 4.5a2.5 2.5 0 1 0-3.26 2.38 2.5 2.5 0 0 1-2.24 1.62H6.5c-.58 0-1.13.13-1.62.36V6.9a2.5 2.5 0 1 0-1 0v2.2a2.5 2.5 0 1 0 1 0v-.1A2.5 2.5 0 0 1 6.5 9.5h1a3.5 3.5 0 0 0 3.24-2.18A2.5 2.5 0 0 0 13 4.5zm-10 0a1.5 1.5 0 1 1 3 0 1.5 1.5 0 0 1-3 0zm3 7a1.5 1.5 0 1 1-3 0 1.5 1.5 0 0 1 3 0zm4.5-5.5a1.5 1.5 0 1 1 0-3 1.5 1.5 0 0 1 0 3z"/></svg>';
const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp|bmp|svg\+xml)$/;
const BASE64 = /^[A-Za-z0-9+/=\r\n]*$/;

type Json = unknown;
type Obj = Record<string, Json>;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function isObj(v: Json): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: Json): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function num(v: Json): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function formatCost(cost: number): string {
  return `$${cost < 0.01 && cost > 0 ? cost.toFixed(4) : cost.toFixed(2)}`;
}

function cut(text: string): { text: string; more: number } {
  return text.length > MAX_TEXT ? { text: text.slice(0, MAX_TEXT), more: text.length - MAX_TEXT } : { text, more: 0 };
}

function moreNote(more: number): string {
  return more > 0 ? `<div class="cut">… ${formatCount(more)} more characters (open the line as text to read them)</div>` : '';
}

export function renderMarkdown(text: string): string {
  const { text: shown, more } = cut(text);
  return `<div class="md">${markdown.render(shown)}</div>${moreNote(more)}`;
}

function pre(text: string, cls = ''): string {
  const { text: shown, more } = cut(text);
  return `<pre class="${cls}">${escapeHtml(shown)}</pre>${moreNote(more)}`;
}

function json(value: Json): string {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value);
  }
  return pre(text, 'json');
}

function details(cls: string, summary: string, body: string, open = false): string {
  return `<details class="${cls}"${open ? ' open' : ''}><summary>${summary}</summary><div class="details-body">${body}</div></details>`;
}

function image(block: Obj): string {
  const mime = str(block.mimeType);
  const data = typeof block.data === 'string' ? block.data : '';
  if (!IMAGE_TYPES.test(mime) || !BASE64.test(data) || data.length === 0) {
    return `<div class="image-missing">[image ${escapeHtml(mime || 'of unknown type')}]</div>`;
  }
  const kb = Math.round((data.length * 3) / 4 / 1024);
  return `<figure class="image"><img alt="image (${escapeHtml(mime)})" src="data:${mime};base64,${escapeHtml(data.replace(/[\r\n]/g, ''))}"><figcaption>${escapeHtml(mime)} · ${formatCount(kb)} KB</figcaption></figure>`;
}

/** One-line summary of a tool call's arguments (the path or command it works on). */
export function toolCallSummary(args: Json): string {
  if (!isObj(args)) return str(args).slice(0, 120);
  for (const key of ['command', 'path', 'file_path', 'pattern', 'url', 'query']) {
    if (typeof args[key] === 'string') return (args[key] as string).split('\n')[0].slice(0, 160);
  }
  const keys = Object.keys(args);
  return keys.length ? keys.join(', ').slice(0, 120) : '';
}

function block(b: Json, toolNames: Map<string, string>): string {
  if (typeof b === 'string') return renderMarkdown(b);
  if (!isObj(b)) return json(b);
  switch (b.type) {
    case 'text':
      return renderMarkdown(str(b.text));
    case 'thinking': {
      const text = str(b.thinking);
      const redacted = b.redacted === true || (!text && b.thinkingSignature) ? ' (redacted)' : '';
      return details('thinking', `Thinking${redacted}`, renderMarkdown(text));
    }
    case 'toolCall': {
      const name = str(b.name) || 'tool';
      if (typeof b.id === 'string') toolNames.set(b.id, name);
      const summary = `<span class="tool-name">${escapeHtml(name)}</span> <span class="tool-args">${escapeHtml(toolCallSummary(b.arguments))}</span>`;
      return details('tool-call', `<span class="kind">tool call</span> ${summary}`, json(b.arguments ?? {}));
    }
    case 'image':
      return image(b);
    default:
      return details('unknown-block', `${escapeHtml(str(b.type) || 'block')}`, json(b));
  }
}

function content(value: Json, toolNames: Map<string, string>): string {
  if (typeof value === 'string') return renderMarkdown(value);
  if (Array.isArray(value)) return value.map((b) => block(b, toolNames)).join('');
  if (value === undefined || value === null) return '';
  return json(value);
}

/** Text of a content value, for tool output (shown preformatted). */
function plainContent(value: Json): { text: string; images: string } {
  if (typeof value === 'string') return { text: value, images: '' };
  if (!Array.isArray(value)) return { text: value === undefined ? '' : JSON.stringify(value, null, 2), images: '' };
  const texts: string[] = [];
  const images: string[] = [];
  for (const b of value) {
    if (isObj(b) && b.type === 'text') texts.push(str(b.text));
    else if (isObj(b) && b.type === 'image') images.push(image(b));
    else texts.push(typeof b === 'string' ? b : JSON.stringify(b, null, 2));
  }
  return { text: texts.join('\n'), images: images.join('') };
}

/** Model, tokens and cost of an assistant turn. */
export function turnFacts(message: Obj): string {
  const facts: string[] = [];
  const model = [message.provider, message.model].filter((p) => typeof p === 'string').join('/');
  if (model) facts.push(`<span class="model">${escapeHtml(model)}</span>`);
  const usage = isObj(message.usage) ? message.usage : undefined;
  if (usage) {
    const input = num(usage.input);
    const output = num(usage.output);
    const cacheRead = num(usage.cacheRead);
    const cacheWrite = num(usage.cacheWrite);
    if (input !== undefined) facts.push(`in ${formatCount(input)}`);
    if (output !== undefined) facts.push(`out ${formatCount(output)}`);
    if (cacheRead) facts.push(`cache read ${formatCount(cacheRead)}`);
    if (cacheWrite) facts.push(`cache write ${formatCount(cacheWrite)}`);
    const cost = isObj(usage.cost) ? num(usage.cost.total) : undefined;
    if (cost !== undefined) facts.push(`<span class="cost">${formatCost(cost)}</span>`);
  }
  const stop = str(message.stopReason);
  if (stop && stop !== 'stop' && stop !== 'toolUse') facts.push(`<span class="stop">${escapeHtml(stop)}</span>`);
  return facts.join(' · ');
}

function timeText(timestamp: Json): string {
  if (typeof timestamp !== 'string') return '';
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? timestamp : date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

interface EntryParts {
  cls: string;
  title: string;
  facts?: string;
  body: string;
  separator?: boolean;
}

function messageParts(message: Obj, toolNames: Map<string, string>): EntryParts {
  const role = str(message.role) || '?';
  switch (role) {
    case 'user':
      return { cls: 'user', title: 'User', body: content(message.content, toolNames) };
    case 'assistant': {
      let body = content(message.content, toolNames);
      if (message.errorMessage) body += `<div class="error">${escapeHtml(str(message.errorMessage))}</div>`;
      return { cls: 'assistant', title: 'Assistant', facts: turnFacts(message), body };
    }
    case 'toolResult': {
      const name = str(message.toolName) || toolNames.get(str(message.toolCallId)) || 'tool';
      const { text, images } = plainContent(message.content);
      const lines = text ? text.split('\n').length : 0;
      const error = message.isError === true;
      const summary = `<span class="kind">${error ? 'tool error' : 'tool result'}</span> <span class="tool-name">${escapeHtml(name)}</span> <span class="tool-args">${formatCount(lines)} line${lines === 1 ? '' : 's'}</span>`;
      return { cls: `tool-result${error ? ' error' : ''}`, title: '', body: details(`tool-result${error ? ' error' : ''}`, summary, pre(text) + images) };
    }
    case 'bashExecution': {
      const output = `$ ${str(message.command)}\n${str(message.output)}`;
      const exit = message.exitCode === undefined ? '' : ` · exit ${escapeHtml(str(message.exitCode))}`;
      const summary = `<span class="kind">bash</span> <span class="tool-args">${escapeHtml(str(message.command).split('\n')[0].slice(0, 160))}</span>${exit}`;
      return { cls: 'bash', title: '', body: details('bash', summary, pre(output)) };
    }
    case 'system':
      return { cls: 'system', title: '', body: details('system', '<span class="kind">system prompt</span>', content(message.content, toolNames)) };
    case 'branchSummary':
    case 'compactionSummary':
      return { cls: 'separator', title: role === 'branchSummary' ? 'Branch summary' : 'Compaction summary', body: renderMarkdown(str(message.summary)), separator: true };
    default: {
      const kind = message.customType ? `${role} · ${str(message.customType)}` : role;
      return { cls: 'custom', title: escapeHtml(kind), body: content(message.content, toolNames) };
    }
  }
}

function entryParts(entry: Obj, toolNames: Map<string, string>): EntryParts {
  switch (entry.type) {
    case 'message':
      return isObj(entry.message) ? messageParts(entry.message, toolNames) : { cls: 'unknown', title: 'message', body: json(entry.message) };
    case 'compaction': {
      const tokens = num(entry.tokensBefore);
      const title = `Compaction${tokens === undefined ? '' : ` · ${formatCount(tokens)} tokens before`}`;
      return { cls: 'separator compaction', title, body: details('summary', 'Summary', renderMarkdown(str(entry.summary))), separator: true };
    }
    case 'branch_summary':
      return {
        cls: 'separator branch-summary',
        title: `Branch summary${entry.fromId ? ` · from ${escapeHtml(str(entry.fromId))}` : ''}`,
        body: details('summary', 'Summary', renderMarkdown(str(entry.summary)), true),
        separator: true,
      };
    case 'context_edit': {
      const replacement = entry.replacement;
      const what = replacement === null ? 'left out of the context' : 'replaced in the context';
      const body = isObj(replacement) ? details('summary', 'Replacement', content(replacement.content, toolNames)) : '';
      return { cls: 'separator context-edit', title: `Context edit · ${escapeHtml(str(entry.targetId))} ${what}`, body, separator: true };
    }
    case 'model_change':
      return { cls: 'note', title: `Model → ${escapeHtml([entry.provider, entry.modelId].map(str).filter(Boolean).join('/'))}`, body: '' };
    case 'thinking_level_change':
      return { cls: 'note', title: `Thinking level → ${escapeHtml(str(entry.thinkingLevel))}`, body: '' };
    case 'label':
      return {
        cls: 'note',
        title: entry.label === undefined ? `Label cleared on ${escapeHtml(str(entry.targetId))}` : `Label “${escapeHtml(str(entry.label))}” on ${escapeHtml(str(entry.targetId))}`,
        body: '',
      };
    case 'session_info':
      return { cls: 'note', title: `Session name: ${escapeHtml(str(entry.name))}`, body: '' };
    case 'custom':
      return { cls: 'note', title: `Custom · ${escapeHtml(str(entry.customType))}`, body: entry.data === undefined ? '' : details('data', 'Data', json(entry.data)) };
    case 'custom_message':
      return { cls: 'custom', title: `${escapeHtml(str(entry.customType) || 'custom message')}`, body: content(entry.content, toolNames) };
    case 'usage':
      return { cls: 'note', title: `Usage · ${escapeHtml(str(entry.kind))}`, body: details('data', 'Usage', json(entry.usage)) };
    default:
      return { cls: 'unknown', title: escapeHtml(str(entry.type) || 'entry'), body: details('data', 'Entry', json(entry)) };
  }
}

/** The branch switcher shown above an entry whose parent has several children. */
function switcher(item: PathItem, index: number): string {
  const siblings = item.siblingIds ?? [];
  const position = siblings.findIndex((id) => sameJson(id, item.entry.id));
  const prev = position > 0 ? siblings[position - 1] : undefined;
  const next = position >= 0 && position < siblings.length - 1 ? siblings[position + 1] : undefined;
  const button = (label: string, title: string, target: unknown) =>
    target === undefined
      ? `<button disabled title="${title}">${label}</button>`
      : `<button data-action="switch" data-target="${escapeHtml(JSON.stringify(target))}" title="${title}">${label}</button>`;
  return `<div class="switcher" data-index="${index}">${BRANCH_ICON} branch ${position + 1} of ${siblings.length} ${button('◀', 'previous branch', prev)}${button('▶', 'next branch', next)} <button data-action="branches" data-index="${index}" title="list the branches">branches…</button></div>`;
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The HTML of one entry of the path at `index` (0 = the root). Its line is named as VS Code numbers
 * it (`breaks`: the file's lone CRs); its button carries pi's, which the extension reveals.
 */
export function renderItem(
  item: PathItem,
  index: number,
  toolNames: Map<string, string> = new Map(),
  breaks: readonly LoneCarriageReturnLine[] = [],
): string {
  const entry = isObj(item.entry) ? item.entry : {};
  const parts = entryParts(entry, toolNames);
  const id = JSON.stringify(entry.id ?? null);
  const label = item.label === undefined || item.label === null ? '' : `<span class="label">${escapeHtml(str(item.label))}</span>`;
  const line = typeof item.line === 'number' ? `<button class="link" data-action="reveal" data-line="${item.line}" title="open the session file at this line">${escapeHtml(lineName(item.line, breaks))}</button>` : '';
  const actions = `<span class="actions"><button class="link" data-action="context" title="the LLM context at this entry">context</button><button class="link" data-action="tree" title="select this entry in the session tree">tree</button></span>`;
  const branchNote = item.childIds.length > 1 ? `<span class="branch-point">${BRANCH_ICON} ${item.childIds.length} branches</span>` : '';
  const head = `<header><span class="title">${parts.title}</span>${parts.facts ? `<span class="facts">${parts.facts}</span>` : ''}${label}${branchNote}<span class="meta"><span class="time">${escapeHtml(timeText(entry.timestamp))}</span>${line}${actions}</span></header>`;
  const fork = item.siblingIds && item.siblingIds.length > 1 ? switcher(item, index) : '';
  return `${fork}<article class="entry ${parts.cls}" data-index="${index}" data-id="${escapeHtml(id)}">${head}${parts.body ? `<div class="body">${parts.body}</div>` : ''}</article>`;
}

/** The totals at the top of the viewer. */
export function renderStats(stats: SessionStats): string {
  const roles = stats.roles ?? {};
  const tokens = stats.tokens ?? {};
  const facts = [
    `${formatCount(stats.entryCount)} entries`,
    `${formatCount(roles.user ?? 0)} user · ${formatCount(roles.assistant ?? 0)} assistant · ${formatCount(roles.toolResult ?? 0)} tool results`,
    `${formatCount(stats.branchPoints)} branch point${stats.branchPoints === 1 ? '' : 's'} · ${formatCount(stats.leaves)} leaves`,
    `tokens: in ${formatCount(tokens.input ?? 0)} · out ${formatCount(tokens.output ?? 0)} · cache read ${formatCount(tokens.cacheRead ?? 0)} · cache write ${formatCount(tokens.cacheWrite ?? 0)}`,
    `cost <span class="cost">${formatCost(stats.cost ?? 0)}</span>`,
  ];
  const models = Object.entries(stats.models ?? {})
    .map(([name, m]) => `${escapeHtml(name)} (${formatCount(m.turns)} turns, ${formatCost(m.cost)})`)
    .join(', ');
  if (models) facts.push(`models: ${models}`);
  if (stats.firstTimestamp) facts.push(`${escapeHtml(timeText(stats.firstTimestamp))} → ${escapeHtml(timeText(stats.lastTimestamp ?? ''))}`);
  return facts.map((f) => `<span class="fact">${f}</span>`).join('');
}
