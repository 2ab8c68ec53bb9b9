/**
 * The conversation's tools as MCP `tools/list` entries: exactly the `mcp`
 * format of GET /tools/definitions (src/core/llm-definitions/), without what
 * the conversation's policy denies (and, for an agent key with a ceiling,
 * what is above it). Special actions (`list-tools`,
 * `upgrade:…`) are not actions of any tool, so they never appear. The order
 * is the registry's (tools by name, actions in their declared order): the same
 * on every replica that loaded the same tool files.
 *
 * Built once per tool set and caller view (policy, ceiling), not per request:
 * a reload makes a new ToolSet, whose lists are built afresh.
 */
import type { Tool } from '@modelcontextprotocol/server';
import { buildDefinitions } from '../core/llm-definitions';
import type { TPolicy } from '../core/policy';
import type { ToolSet } from '../core/tool-registry';

/** Lists built per set, by view; a set with more views than this starts its cache over (policies are few). */
const MAX_VIEWS_PER_SET = 256;
/** A view whose policy is longer than this is built each time, not kept (the cache holds no outsized keys). */
const MAX_KEPT_VIEW = 4096;
const lists = new WeakMap<ToolSet, Map<string, readonly Tool[]>>();
const names = new WeakMap<ToolSet, ReadonlySet<string>>();

/** The set's tools in the mcp format, without what the policy denies or what is above `maxLevel`. */
export function mcpToolDefinitions(set: ToolSet, policy: TPolicy, maxLevel?: number): Tool[] {
  let views = lists.get(set);
  if (!views) lists.set(set, (views = new Map<string, readonly Tool[]>()));
  const key = JSON.stringify([policy, maxLevel ?? null]);
  let tools = views.get(key);
  if (!tools) {
    // The schemas are JSON Schema made by zod's toJSONSchema: plain JSON, which is what Tool's index types describe.
    tools = Object.freeze(
      buildDefinitions(set, 'mcp', { policy, maxLevel }).tools.map((tool) => ({ ...tool }) as Tool),
    );
    if (key.length <= MAX_KEPT_VIEW) {
      if (views.size >= MAX_VIEWS_PER_SET) views.clear();
      views.set(key, tools);
    }
  }
  // A new array each time (the SDK's encoding copies what it changes; the entries are shared, not written to).
  return [...tools];
}

/** The names tools/call takes exactly (every action's `tool_action`), per set. */
export function mcpToolNames(set: ToolSet): ReadonlySet<string> {
  let known = names.get(set);
  if (!known) names.set(set, (known = new Set(set.actions.map((a) => a.providerName))));
  return known;
}
