// Render a pi/buildSessionContext result as a Markdown document. Pure: unit-tested directly.
import type { SessionContextResult } from './protocol';

type Json = unknown;

function isRecord(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fence(text: string, lang = ''): string {
  // A fence longer than any backtick run inside, so the content cannot close it.
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

function blockText(block: Json): string {
  if (typeof block === 'string') return block;
  if (!isRecord(block)) return fence(JSON.stringify(block, null, 2), 'json');
  switch (block.type) {
    case 'text':
      return String(block.text ?? '');
    case 'thinking':
      return `> *thinking:* ${String(block.thinking ?? '').replace(/\n/g, '\n> ')}`;
    case 'toolCall':
      return `**tool call** \`${String(block.name ?? '?')}\` (${String(block.id ?? '')})\n\n${fence(
        JSON.stringify(block.arguments ?? {}, null, 2),
        'json',
      )}`;
    case 'image':
      return `*[image ${String(block.mimeType ?? '')}]*`;
    default:
      return fence(JSON.stringify(block, null, 2), 'json');
  }
}

function contentText(content: Json): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(blockText).join('\n\n');
  if (content === undefined || content === null) return '';
  return fence(JSON.stringify(content, null, 2), 'json');
}

function messageHeading(message: Record<string, Json>, index: number): string {
  const role = String(message.role ?? '?');
  const extra: string[] = [];
  if (role === 'assistant' && message.model) extra.push(String(message.model));
  if (role === 'toolResult') {
    extra.push(String(message.toolName ?? 'tool'));
    if (message.isError) extra.push('error');
  }
  if (role === 'custom' && message.customType) extra.push(String(message.customType));
  return `## ${index + 1}. ${role}${extra.length ? ` (${extra.join(', ')})` : ''}`;
}

function messageBody(message: Record<string, Json>): string {
  switch (message.role) {
    case 'bashExecution':
      return `${fence(`$ ${String(message.command ?? '')}\n${String(message.output ?? '')}`, 'console')}\nexit code: ${String(
        message.exitCode,
      )}`;
    case 'compactionSummary':
    case 'branchSummary':
      return String(message.summary ?? '');
    case 'assistant': {
      const body = contentText(message.content);
      return message.errorMessage ? `${body}\n\n**error:** ${String(message.errorMessage)}` : body;
    }
    default:
      return contentText(message.content);
  }
}

export function renderContextMarkdown(result: SessionContextResult, title: string): string {
  const lines: string[] = [`# ${title}`, ''];
  const model = isRecord(result.model) ? `${result.model.provider ?? '?'}/${result.model.modelId ?? '?'}` : 'none';
  lines.push(`- model: ${model}`);
  lines.push(`- thinking level: ${result.thinkingLevel ?? 'off'}`);
  const messages = Array.isArray(result.messages) ? result.messages : [];
  lines.push(`- messages: ${messages.length}`, '');
  messages.forEach((message, index) => {
    if (!isRecord(message)) {
      lines.push(`## ${index + 1}. ?`, '', fence(JSON.stringify(message), 'json'), '');
      return;
    }
    lines.push(messageHeading(message, index), '', messageBody(message).trim() || '*(empty)*', '');
  });
  return lines.join('\n');
}
