/**
 * What the participant service keeps (API.md, "Participants"), as records,
 * and the store it keeps them in (src/db/participant-store.ts implements it).
 * Secret values appear here only sealed (`sealedSecrets`, credential
 * `sealedHeaders`); `secretNames` are the names, which are not secret.
 */
import type { ParticipantTransport } from './upstream';

export type Level = 1 | 2 | 3;
export type ParticipantStatus = 'connecting' | 'ready' | 'failing' | 'disabled';
export type ActionStatus = 'active' | 'quarantined';

/** The transport's settings that are not secret. */
export interface ParticipantConfig {
  url?: string;
  command?: string;
  args?: string[];
  cwd?: string;
  spec?: Record<string, unknown>;
  specUrl?: string;
  baseUrl?: string;
}

/** The secret maps, as they are before sealing. */
export interface ParticipantSecrets {
  headers: Record<string, string>;
  env: Record<string, string>;
}

export interface ParticipantRecord {
  name: string;
  description: string;
  transport: ParticipantTransport;
  config: ParticipantConfig;
  /** ParticipantSecrets as JSON, sealed (SecretBox); null when there are none. */
  sealedSecrets: string | null;
  /** `headers.NAME`, `env.NAME`, sorted. */
  secretNames: string[];
  levels: Record<string, Level>;
  include: string[] | null;
  exclude: string[] | null;
  timeoutMs: number | null;
  enabled: boolean;
  /** The last status a replica stored; a replica answers with its own live one. */
  status: ParticipantStatus;
  lastError: string | null;
  protocolVersion: string | null;
  serverInfo: Record<string, unknown> | null;
  refreshedAt: number | null;
  /** Grows with every change the replicas must pick up. */
  version: number;
  createdAt: number;
  updatedAt: number;
}

/** One upstream tool of a participant, with its pinned (and pending) definition. */
export interface ActionRecord {
  upstreamName: string;
  action: string;
  /** The upstream's default level (an override in ParticipantRecord.levels wins). */
  level: Level;
  status: ActionStatus;
  pinnedDefinition: Record<string, unknown> | null;
  pinnedDigest: string | null;
  pendingDefinition: Record<string, unknown> | null;
  pendingDigest: string | null;
}

export type NewParticipant = Omit<ParticipantRecord, 'version' | 'createdAt' | 'updatedAt' | 'refreshedAt'> & {
  refreshedAt: number | null;
};

/** What PATCH and the runtime may change (undefined: unchanged). */
export type ParticipantChanges = Partial<
  Omit<ParticipantRecord, 'name' | 'transport' | 'version' | 'createdAt' | 'updatedAt'>
>;

/** The upstream's state a refresh stored (it does not bump the version: no replica must reload for it). */
export interface UpstreamState {
  status: ParticipantStatus;
  lastError: string | null;
  protocolVersion?: string | null;
  serverInfo?: Record<string, unknown> | null;
  refreshedAt?: number;
}

export interface ParticipantStore {
  /** The secrets key's fingerprint stored first (by any replica), this one stored if none was. */
  fingerprint(candidate: string): Promise<string>;
  list(): Promise<ParticipantRecord[]>;
  get(name: string): Promise<ParticipantRecord | undefined>;
  /** Its version only (another replica's change is seen by comparing it). */
  versions(): Promise<Map<string, number>>;
  /** AppError conflict when the name is taken. */
  insert(p: NewParticipant, actions: ActionRecord[]): Promise<ParticipantRecord>;
  /** undefined when it does not exist. */
  update(name: string, changes: ParticipantChanges): Promise<ParticipantRecord | undefined>;
  /** Stores what a replica learnt of the upstream; never bumps the version. */
  recordState(name: string, state: UpstreamState): Promise<void>;
  delete(name: string): Promise<boolean>;
  actions(name: string): Promise<ActionRecord[]>;
  /**
   * Runs `decide` on the participant's current actions with the participant's row locked (replicas
   * refreshing together decide one after the other); writes what it returns and bumps the version
   * when anything changed. undefined when the participant is gone.
   */
  updateActions<T>(
    name: string,
    decide: (current: ActionRecord[]) => { actions: ActionRecord[]; changed: boolean; result: T },
  ): Promise<T | undefined>;
  credentials(name: string, owner: string): Promise<string | undefined>;
  setCredentials(name: string, owner: string, sealedHeaders: string): Promise<boolean>;
  deleteCredentials(name: string, owner: string): Promise<boolean>;
}
