/**
 * An agent loop against a running service, offline: the "model" is a scripted
 * transcript of the tool calls an OpenAI-style model would emit. Each turn:
 *   (a) fetch the definitions in OpenAI format (what a real loop hands the model),
 *   (b) check the model only called tools it was offered,
 *   (c) route each call through POST /conversations/{id}/negotiate,
 *   (d) on `permission_required`, let the conversation's owner approve that
 *       exact call once (POST /conversations/{id}/approvals/{approvalId}/approve
 *       with scope "once") and retry it once with the approval's id,
 *   (e) feed each result back as a `tool` message.
 *
 * Every request carries `Authorization: Bearer TOKEN`. The token is the
 * conversation owner's (a user's or an admin's API key): the loop approves
 * calls itself, which an agent key may not do. Each negotiate attempt sends
 * an `Idempotency-Key` (a new one per attempt: the retry's body differs, it
 * carries the approvalId), so a network retry of one attempt never runs the
 * tool twice.
 *
 *   TOKEN=... npx tsx examples/agent-loop.ts --base-url http://localhost:3000 \
 *     --transcript examples/transcripts/pipeline.json [--conversation my-id]
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** A tool call as the model emits it; OpenAI sends `arguments` as a JSON string. */
export interface ScriptedCall {
  name: string;
  arguments: Record<string, unknown> | string;
}

/** One model turn: either tool calls or the final answer. */
export type ScriptedTurn = { tool_calls: ScriptedCall[] } | { content: string };

export interface Transcript {
  /** The user's request that starts the conversation. */
  user: string;
  turns: ScriptedTurn[];
}

/** The service's answer to negotiate (API.md, "Negotiate"). */
export interface NegotiationResult {
  success: boolean;
  output?: unknown;
  error?: string;
  code?: string;
  requiresApproval?: boolean;
  approvalReason?: string;
  /** On permission_required: the approval request recorded for exactly this call. */
  approval?: { id: string; status: 'pending'; expiresAt: number };
  alignment?: 'aligned' | 'agnostic' | 'contradiction';
  routing?: { tool: string; action: string; confidence: number; explicit: boolean };
}

/** An OpenAI chat message, reduced to what this loop writes. */
export type Message =
  | { role: 'user' | 'assistant'; content: string }
  | {
      role: 'assistant';
      content: null;
      tool_calls: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Every negotiate attempt, refused ones included. */
export interface ToolResult {
  callId: string;
  name: string;
  status: number;
  result: NegotiationResult;
}

/** An approval the owner gave: that one call, once. */
export interface Approval {
  id: string;
  tool: string;
  action: string;
  reason: string;
}

export interface AgentLoopOptions {
  baseUrl: string;
  /** The bearer token of every request: a user's or an admin's key (it approves upgrades as the owner). */
  token: string;
  conversationId: string;
  transcript: Transcript;
  log?: (line: string) => void;
  /** The owner's decision on a refused call; the default approves it (once). */
  approve?: (reason: string) => Promise<boolean>;
  /** With a limit, only the `limit` actions most relevant to the user's request are offered. */
  limit?: number;
}

interface OpenAiDefinitions {
  tools: { type: 'function'; function: { name: string; description: string; parameters: object } }[];
}

/** The bearer token from the environment's TOKEN; a clear error when it is not set. */
export function tokenFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const token = env.TOKEN?.trim();
  if (!token) {
    throw new Error(
      'Set TOKEN to an API key of the service (a user or admin key; a local `npm start` writes its admin key ' +
        'to DATA_DIR/admin.key unless ADMIN_API_KEY is set): every request needs Authorization: Bearer TOKEN',
    );
  }
  return token;
}

async function http<T>(
  method: string,
  url: string,
  token: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const auth = { authorization: `Bearer ${token}`, ...extraHeaders };
  const res = await fetch(url, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

export async function fetchDefinitions(
  baseUrl: string,
  token: string,
  format: 'openai' | 'anthropic' | 'mcp' | 'canonical',
  query?: string,
  limit?: number,
): Promise<unknown> {
  const params = new URLSearchParams({ format });
  if (query !== undefined && limit !== undefined) {
    params.set('query', query);
    params.set('limit', String(limit));
  }
  const res = await http<unknown>('GET', `${baseUrl}/tools/definitions?${params.toString()}`, token);
  if (res.status !== 200) throw new Error(`GET /tools/definitions answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

export function negotiate(
  baseUrl: string,
  token: string,
  conversationId: string,
  action: string,
  args: Record<string, unknown>,
  approvalId?: string,
) {
  const url = `${baseUrl}/conversations/${encodeURIComponent(conversationId)}/negotiate`;
  const body = approvalId === undefined ? { action, args } : { action, args, approvalId };
  // One key per attempt: resending this very request (after a timeout, say) replays its outcome.
  return http<NegotiationResult>('POST', url, token, body, { 'Idempotency-Key': randomUUID() });
}

export async function runAgentLoop(options: AgentLoopOptions) {
  const { baseUrl, token, conversationId, transcript, log = () => {}, approve = async () => true } = options;
  const messages: Message[] = [{ role: 'user', content: transcript.user }];
  const toolResults: ToolResult[] = [];
  const approvals: Approval[] = [];
  let callCount = 0;
  log(`user: ${transcript.user}`);

  for (const turn of transcript.turns) {
    // (a) A real loop sends these definitions with the messages to the model.
    const { tools } = (await fetchDefinitions(
      baseUrl,
      token,
      'openai',
      transcript.user,
      options.limit,
    )) as OpenAiDefinitions;
    const offered = new Set(tools.map((t) => t.function.name));

    if ('content' in turn) {
      messages.push({ role: 'assistant', content: turn.content });
      log(`assistant: ${turn.content}`);
      break;
    }
    const calls = turn.tool_calls.map((call) => {
      callCount += 1;
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
      return { id: `call_${callCount}`, type: 'function' as const, function: { name: call.name, arguments: args } };
    });
    messages.push({ role: 'assistant', content: null, tool_calls: calls });

    for (const call of calls) {
      const { name } = call.function;
      // (b) Models sometimes invent tools: never forward a name that was not offered.
      if (!offered.has(name)) throw new Error(`The model called ${name}, which is not among the definitions`);
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      log(`assistant → ${name} ${call.function.arguments}`);

      // (c) negotiate routes `tool_action` to the tool and enforces permissions.
      let res = await negotiate(baseUrl, token, conversationId, name, args);
      toolResults.push({ callId: call.id, name, status: res.status, result: res.body });

      // (d) Only the conversation's owner may approve: the model cannot. The approval covers
      // exactly this call (tool, action, args), once; the tool's level stays as it was.
      const pending = res.body.code === 'permission_required' ? res.body.approval : undefined;
      if (pending && res.body.routing) {
        const reason = res.body.approvalReason ?? res.body.error ?? '';
        log(`service: ${reason} (approval ${pending.id})`);
        if (await approve(reason)) {
          const url = `${baseUrl}/conversations/${encodeURIComponent(conversationId)}/approvals/${pending.id}/approve`;
          const decided = await http<{ status: string }>('POST', url, token, { scope: 'once' });
          if (decided.status !== 200) throw new Error(`Approval failed (${decided.status})`);
          const { tool, action } = res.body.routing;
          approvals.push({ id: pending.id, tool, action, reason });
          log(`owner: approved ${tool}/${action} once (${pending.id}); retrying`);
          res = await negotiate(baseUrl, token, conversationId, name, args, pending.id);
          toolResults.push({ callId: call.id, name, status: res.status, result: res.body });
        }
      }

      // (e) The model sees the final result, success or error, as a tool message.
      const content = JSON.stringify(res.body);
      messages.push({ role: 'tool', tool_call_id: call.id, content });
      log(`tool ← ${res.status} ${content}`);
    }
  }
  return { messages, toolResults, approvals };
}

async function main(): Promise<void> {
  const token = tokenFromEnv();
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string', default: 'http://localhost:3000' },
      transcript: { type: 'string', default: 'examples/transcripts/pipeline.json' },
      conversation: { type: 'string', default: `agent-loop-${Date.now()}` },
    },
  });
  const transcript = JSON.parse(readFileSync(values.transcript, 'utf8')) as Transcript;
  await runAgentLoop({
    baseUrl: values['base-url'].replace(/\/$/, ''),
    token,
    conversationId: values.conversation,
    transcript,
    log: (line) => console.log(line),
  });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
