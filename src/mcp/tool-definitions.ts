/**
 * The conversation's tools as MCP `tools/list` entries: exactly the `mcp`
 * format of GET /tools/definitions (src/core/llm-definitions/), without what
 * the conversation's policy denies. Special actions (`list-tools`,
 * `upgrade:…`) are not actions of any tool, so they never appear.
 */
import { buildDefinitions, type McpToolDefinition } from '../core/llm-definitions';
import type { TPolicy } from '../core/policy';
import type { ToolSet } from '../core/tool-registry';

/** The set's tools in the mcp format, without what the policy denies. */
export function mcpToolDefinitions(set: ToolSet, policy: TPolicy): Array<McpToolDefinition & Record<string, unknown>> {
  return buildDefinitions(set, 'mcp', { policy }).tools.map((tool) => ({ ...tool }));
}
