/**
 * What an MCP upstream's tools/list and tools/call give, in the shapes of the
 * participant contract (upstream.ts): a listed tool becomes an UpstreamTool,
 * a call result becomes an UpstreamCallResult whose error message is safe
 * (redaction.ts redacts what the participant sends).
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/client';
import { isRecord } from '../core/tool-module';
import type { UpstreamCallResult, UpstreamTool } from './upstream';
import { defaultMcpLevel } from './action-names';
import { type Redactor, redactDeep, truncate } from './redaction';

function objectSchema(schema: unknown): Record<string, unknown> {
  const s = isRecord(schema) ? { ...schema } : {};
  return { ...s, type: 'object' };
}

/** One listed tool as the participant service sees it; `definition` is what gets pinned, as the upstream gave it. */
export function upstreamToolOf(tool: Tool): UpstreamTool {
  const definition: Record<string, unknown> = {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    annotations: tool.annotations,
  };
  for (const key of Object.keys(definition)) if (definition[key] === undefined) delete definition[key];
  const mapped: UpstreamTool = {
    upstreamName: tool.name,
    description: tool.description ?? '',
    inputSchema: objectSchema(tool.inputSchema),
    defaultLevel: defaultMcpLevel(tool.annotations),
    definition,
  };
  if (tool.title !== undefined) mapped.title = tool.title;
  if (tool.outputSchema !== undefined) mapped.outputSchema = tool.outputSchema;
  return mapped;
}

/** How much of an upstream's own error text a message keeps. */
export const ERROR_TEXT_LIMIT = 500;

function firstText(content: CallToolResult['content']): string | undefined {
  for (const block of content ?? []) if (block.type === 'text' && typeof block.text === 'string') return block.text;
  return undefined;
}

/** A tools/call result: content and structuredContent as given (secrets redacted); an error result gets a safe message naming the participant. */
export function callResultOf(
  result: CallToolResult,
  where: { participant: string; tool: string; redact: Redactor },
): UpstreamCallResult {
  // As the upstream gave them, but for any secret the participant sends that they echo.
  const output: Record<string, unknown> = { content: redactDeep(result.content ?? [], where.redact) };
  if (result.structuredContent !== undefined)
    output.structuredContent = redactDeep(result.structuredContent, where.redact);
  if (result.isError !== true) return { output, isError: false };
  let errorMessage = `Participant ${where.participant}'s tool ${where.tool} returned an error`;
  const text = firstText(result.content);
  if (text !== undefined && text.trim() !== '') {
    errorMessage += `: ${truncate(where.redact(text), ERROR_TEXT_LIMIT)}`;
  }
  return { output, isError: true, errorMessage };
}
