/**
 * The participant store in SQL (tables of migration 20260501000000_participants):
 * participants, their actions with pinned definitions, per-owner credentials
 * (sealed), and the secrets key's fingerprint in `service_settings`.
 */
import type { Pool, PoolClient } from 'pg';
import { AppError } from '../core/errors';
import type {
  ActionRecord,
  NewParticipant,
  ParticipantChanges,
  ParticipantRecord,
  ParticipantStore,
  UpstreamState,
} from '../participants/participant-records';
import { translated } from './sql';

type Row = {
  name: string;
  description: string;
  transport: ParticipantRecord['transport'];
  config: ParticipantRecord['config'];
  secrets: string | null;
  secret_names: string[];
  levels: ParticipantRecord['levels'];
  include: string[] | null;
  exclude: string[] | null;
  timeout_ms: number | null;
  enabled: boolean;
  status: ParticipantRecord['status'];
  last_error: string | null;
  protocol_version: string | null;
  server_info: Record<string, unknown> | null;
  refreshed_at: Date | null;
  version: number;
  created_at: Date;
  updated_at: Date;
};

type ActionRow = {
  upstream_name: string;
  action: string;
  level: ActionRecord['level'];
  status: ActionRecord['status'];
  pinned_definition: Record<string, unknown> | null;
  pinned_digest: string | null;
  pending_definition: Record<string, unknown> | null;
  pending_digest: string | null;
};

function toRecord(r: Row): ParticipantRecord {
  return {
    name: r.name,
    description: r.description,
    transport: r.transport,
    config: r.config,
    sealedSecrets: r.secrets,
    secretNames: r.secret_names,
    levels: r.levels,
    include: r.include,
    exclude: r.exclude,
    timeoutMs: r.timeout_ms,
    enabled: r.enabled,
    status: r.status,
    lastError: r.last_error,
    protocolVersion: r.protocol_version,
    serverInfo: r.server_info,
    refreshedAt: r.refreshed_at ? r.refreshed_at.getTime() : null,
    version: r.version,
    createdAt: r.created_at.getTime(),
    updatedAt: r.updated_at.getTime(),
  };
}

function toAction(r: ActionRow): ActionRecord {
  return {
    upstreamName: r.upstream_name,
    action: r.action,
    level: r.level,
    status: r.status,
    pinnedDefinition: r.pinned_definition,
    pinnedDigest: r.pinned_digest,
    pendingDefinition: r.pending_definition,
    pendingDigest: r.pending_digest,
  };
}

/** Record fields → columns, for inserts and updates (JSON columns as text). */
const COLUMN_OF: Record<string, [column: string, toDb: (v: unknown) => unknown]> = {
  description: ['description', (v) => v],
  config: ['config', (v) => JSON.stringify(v)],
  sealedSecrets: ['secrets', (v) => v],
  secretNames: ['secret_names', (v) => JSON.stringify(v)],
  levels: ['levels', (v) => JSON.stringify(v)],
  include: ['include', (v) => (v === null ? null : JSON.stringify(v))],
  exclude: ['exclude', (v) => (v === null ? null : JSON.stringify(v))],
  timeoutMs: ['timeout_ms', (v) => v],
  enabled: ['enabled', (v) => v],
  status: ['status', (v) => v],
  lastError: ['last_error', (v) => v],
  protocolVersion: ['protocol_version', (v) => v],
  serverInfo: ['server_info', (v) => (v === null ? null : JSON.stringify(v))],
  refreshedAt: ['refreshed_at', (v) => (v === null ? null : new Date(v as number))],
};

function assignments(changes: object, first: number): { sql: string[]; values: unknown[] } {
  const sql: string[] = [];
  const values: unknown[] = [];
  for (const [field, value] of Object.entries(changes)) {
    const column = COLUMN_OF[field];
    if (!column || value === undefined) continue;
    values.push(column[1](value));
    sql.push(`${column[0]} = $${first + values.length - 1}`);
  }
  return { sql, values };
}

const ACTION_COLUMNS =
  'upstream_name, action, level, status, pinned_definition, pinned_digest, pending_definition, pending_digest';

function actionValues(name: string, a: ActionRecord): unknown[] {
  return [
    name,
    a.upstreamName,
    a.action,
    a.level,
    a.status,
    a.pinnedDefinition === null ? null : JSON.stringify(a.pinnedDefinition),
    a.pinnedDigest,
    a.pendingDefinition === null ? null : JSON.stringify(a.pendingDefinition),
    a.pendingDigest,
  ];
}

const INSERT_ACTION = `INSERT INTO participant_actions (participant, ${ACTION_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

const FINGERPRINT_KEY = 'secrets_key_fingerprint';

export class SqlParticipantStore implements ParticipantStore {
  constructor(private readonly pool: Pool) {}

  async fingerprint(candidate: string): Promise<string> {
    // The first replica's key wins; every later one reads it back and compares.
    await translated(
      this.pool.query('INSERT INTO service_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
        FINGERPRINT_KEY,
        candidate,
      ]),
    );
    const { rows } = await translated(
      this.pool.query<{ value: string }>('SELECT value FROM service_settings WHERE key = $1', [FINGERPRINT_KEY]),
    );
    return rows[0]!.value;
  }

  async list(): Promise<ParticipantRecord[]> {
    const { rows } = await translated(this.pool.query<Row>('SELECT * FROM participants ORDER BY name'));
    return rows.map(toRecord);
  }

  async get(name: string): Promise<ParticipantRecord | undefined> {
    const { rows } = await translated(this.pool.query<Row>('SELECT * FROM participants WHERE name = $1', [name]));
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async versions(): Promise<Map<string, number>> {
    const { rows } = await translated(
      this.pool.query<{ name: string; version: number }>('SELECT name, version FROM participants'),
    );
    return new Map(rows.map((r) => [r.name, r.version]));
  }

  async insert(p: NewParticipant, actions: ActionRecord[]): Promise<ParticipantRecord> {
    return this.transaction(async (client) => {
      const { name, transport, ...rest } = p;
      const { sql, values } = assignments(rest, 3);
      const columns = ['name', 'transport', ...sql.map((s) => s.split(' = ')[0]!)];
      const params = columns.map((_c, i) => `$${i + 1}`);
      const inserted = await client.query<Row>(
        `INSERT INTO participants (${columns.join(', ')}) VALUES (${params.join(', ')})
         ON CONFLICT (name) DO NOTHING RETURNING *`,
        [name, transport, ...values],
      );
      if (!inserted.rows[0]) throw new AppError('conflict', `A participant named ${name} already exists`);
      for (const a of actions) await client.query(INSERT_ACTION, actionValues(name, a));
      return toRecord(inserted.rows[0]);
    });
  }

  async update(name: string, changes: ParticipantChanges): Promise<ParticipantRecord | undefined> {
    const { sql, values } = assignments(changes, 2);
    const { rows } = await translated(
      this.pool.query<Row>(
        `UPDATE participants SET ${[...sql, 'version = version + 1', 'updated_at = now()'].join(', ')}
         WHERE name = $1 RETURNING *`,
        [name, ...values],
      ),
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async recordState(name: string, state: UpstreamState): Promise<void> {
    const { sql, values } = assignments(state, 2);
    if (sql.length === 0) return;
    await translated(this.pool.query(`UPDATE participants SET ${sql.join(', ')} WHERE name = $1`, [name, ...values]));
  }

  async delete(name: string): Promise<boolean> {
    const { rowCount } = await translated(this.pool.query('DELETE FROM participants WHERE name = $1', [name]));
    return (rowCount ?? 0) > 0;
  }

  async actions(name: string): Promise<ActionRecord[]> {
    const { rows } = await translated(
      this.pool.query<ActionRow>(
        `SELECT ${ACTION_COLUMNS} FROM participant_actions WHERE participant = $1 ORDER BY action`,
        [name],
      ),
    );
    return rows.map(toAction);
  }

  async updateActions<T>(
    name: string,
    decide: (current: ActionRecord[]) => { actions: ActionRecord[]; changed: boolean; result: T },
  ): Promise<T | undefined> {
    return this.transaction(async (client) => {
      const locked = await client.query('SELECT 1 FROM participants WHERE name = $1 FOR UPDATE', [name]);
      if (locked.rowCount === 0) return undefined;
      const current = await client.query<ActionRow>(
        `SELECT ${ACTION_COLUMNS} FROM participant_actions WHERE participant = $1`,
        [name],
      );
      const { actions, changed, result } = decide(current.rows.map(toAction));
      if (!changed) return result;
      await client.query('DELETE FROM participant_actions WHERE participant = $1', [name]);
      for (const a of actions) await client.query(INSERT_ACTION, actionValues(name, a));
      await client.query('UPDATE participants SET version = version + 1, updated_at = now() WHERE name = $1', [name]);
      return result;
    });
  }

  async credentials(name: string, owner: string): Promise<string | undefined> {
    const { rows } = await translated(
      this.pool.query<{ headers: string }>(
        'SELECT headers FROM participant_credentials WHERE participant = $1 AND owner = $2',
        [name, owner],
      ),
    );
    return rows[0]?.headers;
  }

  async setCredentials(name: string, owner: string, sealedHeaders: string): Promise<boolean> {
    const { rowCount } = await translated(
      this.pool.query(
        `INSERT INTO participant_credentials (participant, owner, headers)
         SELECT name, $2, $3 FROM participants WHERE name = $1
         ON CONFLICT (participant, owner) DO UPDATE SET headers = EXCLUDED.headers, updated_at = now()`,
        [name, owner, sealedHeaders],
      ),
    );
    return (rowCount ?? 0) > 0;
  }

  async deleteCredentials(name: string, owner: string): Promise<boolean> {
    const { rowCount } = await translated(
      this.pool.query('DELETE FROM participant_credentials WHERE participant = $1 AND owner = $2', [name, owner]),
    );
    return (rowCount ?? 0) > 0;
  }

  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await translated(this.pool.connect());
    let broken: Error | undefined;
    try {
      await translated(client.query('BEGIN'));
      try {
        const result = await translated(work(client));
        await translated(client.query('COMMIT'));
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
    } finally {
      client.release(broken);
    }
  }
}
