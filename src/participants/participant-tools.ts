/**
 * A participant as a tool of the registry (API.md, "Participants"): one
 * LoadedTool named after the participant, one action per upstream tool it
 * keeps (include/exclude), each with its level (an override, else the
 * upstream's default), the upstream's JSON Schema as its input schema
 * (checked with ajv before the decision: 400 invalid_args naming the field)
 * and a run that calls the upstream through the participant's runtime.
 *
 * Built from what the store holds (the definitions pinned, or pending while
 * quarantined), never from a live listing: a participant's tool is there at
 * start, before its upstream answers, and is the same on every replica.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { compareNames, providerName, qualifiedName } from '../core/naming';
import { ParticipantCallError, type RunCall } from '../core/remote-action';
import type { LoadedAction, LoadedTool, ParseArgsResult } from '../core/tool-module';
import type { ToolLogger } from '../core/tool-interface';
import type { ActionRecord, Level, ParticipantRecord } from './participant-records';
import type { UpstreamCallResult, UpstreamTool } from './upstream';

/** What a participant's actions call: its runtime (circuit breaker, metrics, the connector). */
export interface ParticipantCaller {
  call(
    upstreamName: string,
    args: Record<string, unknown>,
    options: { timeoutMs: number; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<UpstreamCallResult>;
}

export interface ParticipantToolInput {
  record: ParticipantRecord;
  actions: readonly ActionRecord[];
  caller: ParticipantCaller;
  /** The owner's stored headers for this participant (mcp-http and openapi), or undefined. */
  credentials: (owner: string) => Promise<Record<string, string> | undefined>;
  /** TOOL_TIMEOUT_MS: a participant without timeoutMs uses it. */
  defaultTimeoutMs: number;
  logger: ToolLogger;
}

/** The upstream tool an action was built from: the pending definition while quarantined, else the pinned one. */
export function definitionOf(a: ActionRecord): UpstreamTool | undefined {
  const stored = a.status === 'quarantined' ? (a.pendingDefinition ?? a.pinnedDefinition) : a.pinnedDefinition;
  return (stored ?? undefined) as UpstreamTool | undefined;
}

/** Whether include/exclude keep the action (either may name the upstream name or the action). */
export function keeps(record: Pick<ParticipantRecord, 'include' | 'exclude'>, a: ActionRecord): boolean {
  const named = (list: string[] | null): boolean => list?.some((n) => n === a.action || n === a.upstreamName) ?? false;
  if (record.include !== null && !named(record.include)) return false;
  return !named(record.exclude);
}

/** The level an action runs at: the participant's override (by action or upstream name), else the upstream's default. */
export function levelOf(record: Pick<ParticipantRecord, 'levels'>, a: ActionRecord): Level {
  return record.levels[a.action] ?? record.levels[a.upstreamName] ?? a.level;
}

const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
addFormats(ajv);

/** A validator for an upstream schema; a schema ajv cannot compile checks only that the args are an object. */
function compile(schema: Record<string, unknown>, logger: ToolLogger, where: string): ValidateFunction | undefined {
  try {
    // A draft-07 `$schema` would make Ajv2020 refuse the schema: the keywords are what matter here.
    const { $schema: _ignored, ...rest } = schema;
    return ajv.compile(rest);
  } catch (err) {
    logger.warn({ action: where, err: (err as Error).message }, `Cannot compile the input schema of ${where}`);
    return undefined;
  }
}

function fieldOf(instancePath: string, missing: unknown): string {
  const path = instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  if (typeof missing === 'string') return path ? `${path}.${missing}` : missing;
  return path || 'args';
}

function parser(validate: ValidateFunction | undefined): (args: unknown) => ParseArgsResult {
  return (args) => {
    const value = args ?? {};
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, path: 'args', message: 'must be an object' };
    }
    if (validate && !validate(value)) {
      const first = validate.errors?.[0];
      const params = first?.params as { missingProperty?: unknown; additionalProperty?: unknown } | undefined;
      return {
        ok: false,
        path: fieldOf(first?.instancePath ?? '', params?.missingProperty ?? params?.additionalProperty),
        message: first?.message ?? 'is invalid',
      };
    }
    return { ok: true, value: value as Record<string, unknown> };
  };
}

/** Where the participant lives, for spans (`server.address`); none for stdio. */
function addressOf(record: ParticipantRecord): string | undefined {
  const url = record.transport === 'mcp-http' ? record.config.url : record.config.baseUrl;
  if (url === undefined) return undefined;
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

/** An upstream's error result, as the core answers it: tool_error with this (safe) message. */
export class UpstreamToolError extends ParticipantCallError {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamToolError';
  }
}

function makeAction(input: ParticipantToolInput, a: ActionRecord, def: UpstreamTool): LoadedAction {
  const { record, caller } = input;
  const tool = record.name;
  const timeoutMs = record.timeoutMs ?? input.defaultTimeoutMs;
  const usesCredentials = record.transport !== 'mcp-stdio';
  const address = addressOf(record);
  const run = async (
    args: Record<string, unknown>,
    _ctx: unknown,
    stop?: AbortSignal,
    call?: RunCall,
  ): Promise<unknown> => {
    const owner = call?.conversationOwner;
    const headers = usesCredentials && owner !== undefined ? await input.credentials(owner) : undefined;
    const result = await caller.call(def.upstreamName, args, {
      timeoutMs,
      ...(headers ? { headers } : {}),
      ...(stop ? { signal: stop } : {}),
    });
    if (result.isError) {
      throw new UpstreamToolError(result.errorMessage ?? `Participant ${tool} answered ${a.action} with an error`);
    }
    return result.output;
  };
  return Object.freeze({
    tool,
    name: a.action,
    qualifiedName: qualifiedName(tool, a.action),
    providerName: providerName(tool, a.action),
    description: def.title && !def.description ? def.title : def.description,
    level: levelOf(record, a),
    inputSchema: def.inputSchema,
    ...(def.outputSchema ? { outputSchema: def.outputSchema } : {}),
    parseArgs: parser(compile(def.inputSchema, input.logger, `${tool}/${a.action}`)),
    run,
    remote: Object.freeze({
      participant: tool,
      transport: record.transport,
      upstreamName: def.upstreamName,
      status: a.status,
      ...(address !== undefined ? { address } : {}),
      timeoutMs,
    }),
  });
}

/** The participant's tool; undefined when disabled or when it keeps no action. */
export function participantTool(input: ParticipantToolInput): LoadedTool | undefined {
  const { record } = input;
  if (!record.enabled) return undefined;
  const actions: LoadedAction[] = [];
  for (const a of input.actions) {
    const def = definitionOf(a);
    if (def && keeps(record, a)) actions.push(makeAction(input, a, def));
  }
  if (actions.length === 0) return undefined;
  actions.sort((x, y) => compareNames(x.name, y.name));
  return Object.freeze({
    name: record.name,
    version: typeof record.serverInfo?.version === 'string' ? record.serverInfo.version : '1',
    description: record.description || `Participant ${record.name} (${record.transport})`,
    actions: Object.freeze(actions),
    source: `participant:${record.name}`,
  });
}
