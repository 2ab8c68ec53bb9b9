/**
 * What a `tools/call` answers: negotiate's outcome as an MCP tool result, or
 * the JSON-RPC error of a call that names no tool of this server.
 *
 * Clients validate a result's `structuredContent` against the tool's listed
 * `outputSchema`, and the SDK 1.x client (so LangChain's adapters, and most
 * hosts of 2025) does so even on `isError` results: a refusal whose
 * structuredContent did not conform made `callTool` throw -32602, and the
 * model never saw why it was refused. So `structuredContent` is only ever a
 * successful output (checked against its schema first); a refusal carries
 * negotiate's result in `_meta` (the JSON REST's negotiate answers: code,
 * error, approval {id, status, expiresAt}, …) and says the code, and the
 * approval id when there is one, in its text, the one part every host shows
 * its model.
 */
import {
  type CallToolResult,
  fromJsonSchema,
  type JsonSchemaType,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { parseQualified } from '../core/naming';
import { fail, type NegotiationResult } from '../core/negotiation';
import { isSpecialAction } from '../core/special-actions';
import type { LoadedAction } from '../core/tool-module';
import type { ToolSet } from '../core/tool-registry';

/** Longer than any tool name (63), short enough not to echo a huge one back. */
const NAME_SHOWN = 256;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  // Any realm's Object.prototype: a TOOLS_DIR tool's output is rebuilt from its worker thread's message,
  // which under jest's vm sandbox is not the Object.prototype this module sees.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * The JSON-RPC error for a `tools/call` whose name is not a tool of this
 * server (-32602, as the MCP specification has it), or undefined when `name`
 * is exactly one of the set's `tool_action` names. Actions a policy denies or
 * an agent key's ceiling hides are tools all the same (negotiate refuses them,
 * with their code); negotiate's lenient routing is not applied here, since a
 * name an MCP client sends is one it was listed.
 */
export function unknownToolError(set: ToolSet, name: string): ProtocolError | undefined {
  const parsed = parseQualified(name);
  if (parsed?.form === 'provider' && set.byName.get(parsed.tool)?.actions.some((a) => a.name === parsed.action)) {
    return undefined;
  }
  const shown = name.length > NAME_SHOWN ? `${name.slice(0, NAME_SHOWN)}…` : name;
  const why = isSpecialAction(name)
    ? ' (upgrades and list-tools are not exposed over MCP: only the conversation owner upgrades or lists tools, over REST or negotiate)'
    : '';
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${shown}${why}`);
}

/**
 * What a successful output is handed out as: a participant's MCP tool result
 * passes through as the upstream gave it (its content, and its
 * structuredContent, which its listed outputSchema describes); any other
 * output is its JSON as text, and itself as structuredContent when an object.
 */
function shownOutput(loaded: LoadedAction | undefined, output: unknown): CallToolResult {
  if (
    loaded?.remote &&
    loaded.remote.transport !== 'openapi' &&
    isPlainObject(output) &&
    Array.isArray(output.content)
  ) {
    return {
      content: output.content as CallToolResult['content'],
      ...(isPlainObject(output.structuredContent) ? { structuredContent: output.structuredContent } : {}),
    };
  }
  return {
    content: [{ type: 'text', text: JSON.stringify(output) }],
    ...(isPlainObject(output) ? { structuredContent: output } : {}),
  };
}

/** A tool result from negotiate's outcome (`loaded`: the action it ran, when it ran one). */
export function toolResult(result: NegotiationResult, loaded?: LoadedAction): CallToolResult {
  if (result.success) return shownOutput(loaded, result.output ?? null);
  const code = result.code ?? 'tool_error';
  const message =
    code === 'permission_required' && result.approvalReason
      ? result.approval
        ? // Named so a host can show it, and the owner approve it (API.md, Approvals).
          `${result.approvalReason} Approval id: ${result.approval.id} (pending until ${new Date(result.approval.expiresAt).toISOString()}); ` +
          `once approved, call again with _meta.approvalId = "${result.approval.id}".`
        : result.approvalReason
      : (result.error ?? 'The action failed');
  return {
    isError: true,
    content: [{ type: 'text', text: `${message} [code: ${code}]` }],
    // Machine-readable for the host: the code, the approval, suggestions/candidates when negotiate gave them.
    _meta: { ...result, code },
  };
}

/** Validators of declared output schemas, per loaded action (a reload makes new actions, so none goes stale). */
const outputValidators = new WeakMap<LoadedAction, ReturnType<typeof fromJsonSchema>>();

/**
 * Why a successful output does not conform to its action's declared
 * `outputSchema`, or undefined when it does (or none is declared). A client
 * validates `structuredContent` against the listed schema, so a result
 * handed out must conform.
 */
async function outputIssue(
  loaded: LoadedAction | undefined,
  result: NegotiationResult,
  shown: CallToolResult,
): Promise<string | undefined> {
  if (!result.success || !result.routing || !loaded?.outputSchema) return undefined;
  const { tool, action } = result.routing;
  let validator = outputValidators.get(loaded);
  if (!validator) outputValidators.set(loaded, (validator = fromJsonSchema(loaded.outputSchema as JsonSchemaType)));
  // A participant's MCP result is checked as handed out (its structuredContent); any other output as it is.
  const checked = await validator['~standard'].validate(loaded.remote ? shown.structuredContent : result.output);
  if (!checked.issues) return undefined;
  const first = checked.issues[0];
  const path = (first?.path ?? []).map((p) => (typeof p === 'object' ? String(p.key) : String(p))).join('.');
  return `${tool}/${action} returned output that does not match its outputSchema${path ? ` at ${path}` : ''}: ${first?.message ?? 'invalid'}`;
}

/**
 * negotiate's outcome as the tool result to hand out, its output checked
 * against the action's `outputSchema` first; `onBroken` is told of an output
 * that breaks it (a bug of the tool's, answered as `tool_error`).
 */
export async function callResult(
  set: ToolSet,
  result: NegotiationResult,
  onBroken: (issue: string) => void,
): Promise<CallToolResult> {
  const routed = result.success ? result.routing : undefined;
  const loaded = routed && set.byName.get(routed.tool)?.actions.find((a) => a.name === routed.action);
  const shown = toolResult(result, loaded);
  const issue = await outputIssue(loaded, result, shown);
  if (!issue) return shown;
  onBroken(issue);
  return toolResult(fail('tool_error', issue, { routing: result.routing }));
}
