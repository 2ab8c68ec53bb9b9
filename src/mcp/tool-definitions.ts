/**
 * The conversation's tools as MCP `tools/list` entries: exactly the `mcp`
 * format of GET /tools/definitions (src/core/llm-definitions/), without what
 * the conversation's policy denies (and, for an agent key with a ceiling,
 * what is above it). Special actions (`list-tools`,
 * `upgrade:…`) are not actions of any tool, so they never appear. The order
 * is the registry's (tools by name, actions in their declared order): the same
 * on every replica that loaded the same tool files.
 */
import type { Tool } from '@modelcontextprotocol/server';
import { buildDefinitions } from '../core/llm-definitions';
import type { TPolicy } from '../core/policy';
import type { ToolSet } from '../core/tool-registry';

/** The set's tools in the mcp format, without what the policy denies or what is above `maxLevel`. */
export function mcpToolDefinitions(set: ToolSet, policy: TPolicy, maxLevel?: number): Tool[] {
  // The schemas are JSON Schema made by zod's toJSONSchema: plain JSON, which is what Tool's index types describe.
  return buildDefinitions(set, 'mcp', { policy, maxLevel }).tools.map((tool) => ({ ...tool }) as Tool);
}
