/**
 * What the REST API shows of a participant (API.md, "Participants"): never a
 * secret value, only the secrets' names (`headers.Authorization`,
 * `env.API_KEY`). The status, last error and upstream info are this
 * replica's own, live, when it runs the participant.
 */
import type { ActionRecord, ParticipantRecord, ParticipantSecrets, ParticipantStatus } from './participant-records';
import { keeps, levelOf } from './participant-tools';
import type { TParticipantBody } from './participant-validation';
import type { UpstreamInfo } from './upstream';

export interface ParticipantActionView {
  name: string;
  upstreamName: string;
  level: number;
  status: 'active' | 'quarantined';
  /** The digest of the pinned definition (null for a new upstream tool not approved yet). */
  definitionDigest: string | null;
}

export interface ParticipantView {
  name: string;
  description: string;
  transport: 'mcp-http' | 'mcp-stdio' | 'openapi';
  url?: string;
  command?: string;
  args?: string[];
  baseUrl?: string;
  specUrl?: string;
  secrets: string[];
  status: ParticipantStatus;
  lastError: string | null;
  protocolVersion: string | null;
  /** What the upstream said of itself (MCP serverInfo; OpenAPI the document's info). */
  serverInfo: { [key: string]: unknown } | null;
  /** Epoch milliseconds of the last listing of the upstream's tools. */
  refreshedAt: number | null;
  actions: ParticipantActionView[];
  createdAt: number;
  updatedAt: number;
}

/** A definition as pinned: its SHA-256 digest (of canonical JSON) and the definition itself. */
export interface PinnedDefinition {
  digest: string;
  /** The upstream's definition: name, title, description, schemas, annotations (OpenAPI: the operation). */
  definition: { [key: string]: unknown };
}

export interface ActionDefinitionView {
  participant: string;
  name: string;
  upstreamName: string;
  level: number;
  status: 'active' | 'quarantined';
  /** Absent for a new upstream tool not approved yet. */
  pinned?: PinnedDefinition;
  /** The definition the upstream gives now, while it awaits approval. */
  pending?: PinnedDefinition;
}

/** This replica's live state of the participant, when it runs it. */
export interface LiveState {
  status: ParticipantStatus;
  lastError: string | null;
  info: UpstreamInfo;
}

export function secretNames(secrets: ParticipantSecrets): string[] {
  return [
    ...Object.keys(secrets.headers).map((k) => `headers.${k}`),
    ...Object.keys(secrets.env).map((k) => `env.${k}`),
  ].sort();
}

export function participantView(
  record: ParticipantRecord,
  actions: readonly ActionRecord[],
  live: LiveState | undefined,
): ParticipantView {
  const { config } = record;
  return {
    name: record.name,
    description: record.description,
    transport: record.transport,
    ...(config.url !== undefined ? { url: config.url } : {}),
    ...(config.command !== undefined ? { command: config.command, args: config.args ?? [] } : {}),
    ...(config.baseUrl !== undefined ? { baseUrl: config.baseUrl } : {}),
    ...(config.specUrl !== undefined ? { specUrl: config.specUrl } : {}),
    secrets: record.secretNames,
    status: !record.enabled ? 'disabled' : (live?.status ?? record.status),
    lastError: live ? live.lastError : record.lastError,
    protocolVersion: live?.info.protocolVersion ?? record.protocolVersion,
    serverInfo: live?.info.serverInfo ?? record.serverInfo,
    refreshedAt: record.refreshedAt,
    // Only what the participant serves: an upstream tool include/exclude leave out is no action of it (as in /tools).
    actions: actions
      .filter((a) => keeps(record, a))
      .map((a) => ({
        name: a.action,
        upstreamName: a.upstreamName,
        level: levelOf(record, a),
        status: a.status,
        definitionDigest: a.pinnedDigest,
      })),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

export function actionDefinitionView(record: ParticipantRecord, a: ActionRecord): ActionDefinitionView {
  const defOf = (stored: Record<string, unknown> | null): Record<string, unknown> =>
    (stored as { definition?: Record<string, unknown> } | null)?.definition ?? {};
  return {
    participant: record.name,
    name: a.action,
    upstreamName: a.upstreamName,
    level: levelOf(record, a),
    status: a.status,
    ...(a.pinnedDigest !== null ? { pinned: { digest: a.pinnedDigest, definition: defOf(a.pinnedDefinition) } } : {}),
    ...(a.pendingDigest !== null
      ? { pending: { digest: a.pendingDigest, definition: defOf(a.pendingDefinition) } }
      : {}),
  };
}

/** The stored participant as a registration body (secrets opened), for PATCH to merge onto. */
export function bodyOf(record: ParticipantRecord, secrets: ParticipantSecrets): TParticipantBody {
  const body: Record<string, unknown> = {
    name: record.name,
    description: record.description,
    transport: record.transport,
    ...record.config,
    levels: record.levels,
    enabled: record.enabled,
  };
  if (Object.keys(secrets.headers).length > 0) body.headers = secrets.headers;
  if (Object.keys(secrets.env).length > 0) body.env = secrets.env;
  if (record.include !== null) body.include = record.include;
  if (record.exclude !== null) body.exclude = record.exclude;
  if (record.timeoutMs !== null) body.timeoutMs = record.timeoutMs;
  return body as TParticipantBody;
}
