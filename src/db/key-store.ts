/**
 * The KeyStore port in SQL: API keys by id and by token hash, their
 * revocation, and the one-per-deployment bootstrap admin key.
 */
import type { KeyStore, NewKey, StoredKey } from '../core/ports';
import type { Pool } from 'pg';
import { prepared, translated } from './sql';

type KeyRow = {
  id: string;
  role: StoredKey['role'];
  subject: string;
  conversation_id: string | null;
  max_level: number | null;
  label: string | null;
  expires_at: Date | null;
  created_at: Date;
  created_by: string;
  revoked_at: Date | null;
};

const COLUMNS = 'id, role, subject, conversation_id, max_level, label, expires_at, created_at, created_by, revoked_at';
const K_COLUMNS = COLUMNS.split(', ')
  .map((c) => `k.${c}`)
  .join(', ');

function toKey(row: KeyRow): StoredKey {
  return {
    id: row.id,
    role: row.role,
    subject: row.subject,
    conversationId: row.conversation_id,
    maxLevel: row.max_level,
    label: row.label,
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
    createdAt: row.created_at.getTime(),
    createdBy: row.created_by,
    revokedAt: row.revoked_at ? row.revoked_at.getTime() : null,
  };
}

function valuesOf(key: NewKey): unknown[] {
  return [
    key.id,
    key.tokenHash,
    key.role,
    key.subject,
    key.conversationId,
    key.maxLevel,
    key.label,
    key.expiresAt === null ? null : new Date(key.expiresAt),
    key.createdBy,
  ];
}

const INSERT = `
  INSERT INTO api_keys (id, token_hash, role, subject, conversation_id, max_level, label, expires_at, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  RETURNING ${COLUMNS}`;

/**
 * Serialised across replicas by a transaction-scoped advisory lock, so two
 * replicas starting together on an empty database make one admin key.
 */
const FIRST_ADMIN_LOCK = 0x61646d6e; // 'admn'

export class SqlKeyStore implements KeyStore {
  constructor(private readonly pool: Pool) {}

  async insert(key: NewKey): Promise<StoredKey> {
    const { rows } = await prepared<KeyRow>(this.pool, 'key_insert', INSERT, valuesOf(key));
    return toKey(rows[0]!);
  }

  async findByHash(tokenHash: string): Promise<StoredKey | undefined> {
    const { rows } = await prepared<KeyRow>(
      this.pool,
      'key_by_hash',
      `SELECT ${COLUMNS} FROM api_keys WHERE token_hash = $1`,
      [tokenHash],
    );
    return rows[0] ? toKey(rows[0]) : undefined;
  }

  async get(id: string): Promise<(StoredKey & { conversationOwner: string | null }) | undefined> {
    const { rows } = await prepared<KeyRow & { conversation_owner: string | null }>(
      this.pool,
      'key_by_id',
      `SELECT ${K_COLUMNS}, c.owner AS conversation_owner
       FROM api_keys k LEFT JOIN conversations c ON c.id = k.conversation_id WHERE k.id = $1`,
      [id],
    );
    const row = rows[0];
    return row ? { ...toKey(row), conversationOwner: row.conversation_owner } : undefined;
  }

  async list(opts: { conversationOwner?: string; limit: number }): Promise<StoredKey[]> {
    const { rows } =
      opts.conversationOwner === undefined
        ? await prepared<KeyRow>(
            this.pool,
            'key_list_all',
            `SELECT ${COLUMNS} FROM api_keys ORDER BY created_at DESC, id DESC LIMIT $1`,
            [opts.limit],
          )
        : await prepared<KeyRow>(
            this.pool,
            'key_list_owner',
            `SELECT ${K_COLUMNS} FROM api_keys k JOIN conversations c ON c.id = k.conversation_id
             WHERE c.owner = $1 AND k.role = 'agent'
             ORDER BY k.created_at DESC, k.id DESC LIMIT $2`,
            [opts.conversationOwner, opts.limit],
          );
    return rows.map(toKey);
  }

  async revoke(id: string): Promise<string | undefined> {
    const { rows } = await prepared<{ token_hash: string }>(
      this.pool,
      'key_revoke',
      'UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING token_hash',
      [id],
    );
    return rows[0]?.token_hash;
  }

  async revokedWithin(seconds: number): Promise<string[]> {
    const { rows } = await prepared<{ token_hash: string }>(
      this.pool,
      'key_revoked_within',
      `SELECT token_hash FROM api_keys WHERE revoked_at > now() - make_interval(secs => $1)`,
      [seconds],
    );
    return rows.map((r) => r.token_hash);
  }

  async insertFirstAdmin(key: NewKey): Promise<boolean> {
    const client = await translated(this.pool.connect());
    let broken: Error | undefined;
    try {
      await translated(client.query('BEGIN'));
      try {
        await translated(client.query('SELECT pg_advisory_xact_lock($1)', [FIRST_ADMIN_LOCK]));
        const { rows } = await translated(
          client.query(
            `SELECT 1 FROM api_keys WHERE role = 'admin' AND revoked_at IS NULL
             AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`,
          ),
        );
        if (rows.length > 0) {
          await client.query('ROLLBACK');
          return false;
        }
        await translated(client.query(INSERT, valuesOf(key)));
        await translated(client.query('COMMIT'));
        return true;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
    } finally {
      client.release(broken);
    }
  }
}
