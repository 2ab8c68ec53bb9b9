/**
 * Migrations through the real CLI (`npm run db:migrate`), on databases of
 * their own: a fresh database, a second no-op run, `--to`, and the M4 -> M5
 * data migration with junk rows.
 */
import { Client } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { type UrlTestDatabase, createEmptyDatabase, runMigrateCli } from '../support/db-server';

const BASELINE = '20260101000000_m4_baseline';
const ALL = [
  BASELINE,
  '20260102000000_m5_tool_permissions_and_shared_context',
  '20260102000100_m5_migrate_m4_permissions',
  '20260301000000_identity',
  '20260401000000_approvals',
  '20260402000000_idempotency',
  '20260403000000_audit',
  '20260404000000_reserve_system_chain',
  '20260405000000_audit_seal_in_database',
  '20260406000000_approvals_per_principal',
  '20260407000000_events',
  '20260501000000_participants',
  '20260601000000_webhooks',
  '20260701000000_resource_ttl',
  '20260701000100_resource_query',
  '20260702000000_subscriptions',
];

async function query<T = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client(parseIntoClientConfig(url));
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('db:migrate', () => {
  let db: UrlTestDatabase;
  beforeEach(async () => {
    db = await createEmptyDatabase();
  });
  afterEach(async () => db?.close());

  it('migrates a fresh database, and a second run is a no-op', async () => {
    const first = await runMigrateCli(db.url);
    expect(first.status).toBe(0);
    expect(first.stdout.trim().split('\n')).toEqual(ALL.map((n) => `Applied ${n}`));

    const history = await query<{ migration_name: string; finished_at: Date | null }>(
      db.url,
      'SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name',
    );
    expect(history.map((r) => r.migration_name)).toEqual(ALL);
    expect(history.every((r) => r.finished_at !== null)).toBe(true);

    const second = await runMigrateCli(db.url);
    expect(second.status).toBe(0);
    expect(second.stdout).toContain('no migration applied');
    expect(await query(db.url, 'SELECT 1 FROM _prisma_migrations')).toHaveLength(ALL.length);

    const tables = await query<{ tablename: string }>(
      db.url,
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    );
    expect(tables.map((t) => t.tablename)).toEqual([
      '_prisma_migrations',
      'api_keys',
      'approvals',
      'audit_heads',
      'audit_log',
      'audit_pending',
      'conversations',
      'event_horizon',
      'event_pending',
      'events',
      'idempotency_keys',
      'participant_actions',
      'participant_credentials',
      'participants',
      'permission_history',
      'resources',
      'service_settings',
      'subscription_cursor',
      'subscription_deliveries',
      'tool_permissions',
      'webhook_attempts',
      'webhook_deliveries',
      'webhooks',
    ]);
  });

  it('stops after the directory named by --to, and refuses an unknown name', async () => {
    const partial = await runMigrateCli(db.url, ['--to', BASELINE]);
    expect(partial.status).toBe(0);
    expect(partial.stdout.trim()).toBe(`Applied ${BASELINE}`);
    const cols = await query<{ column_name: string }>(
      db.url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'conversations' ORDER BY ordinal_position",
    );
    expect(cols.map((c) => c.column_name)).toEqual(['id', 'state', 'created_at', 'updated_at']);

    const unknown = await runMigrateCli(db.url, ['--to', 'no_such_migration']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('Unknown migration "no_such_migration"');
  });

  it('migrates an M4 database: levels, explicit permissions and history; junk state migrates without a level', async () => {
    expect((await runMigrateCli(db.url, ['--to', BASELINE])).status).toBe(0);
    const m4Rows: Array<[string, string]> = [
      ['m4-writer', '{"currentLevel": 2, "identity": {"toolName": "example-tool"}}'],
      ['m4-exec', '{"currentLevel": 3, "identity": {"toolName": "data-tool"}}'],
      ['m4-level-only', '{"currentLevel": 1}'],
      ['m4-empty', '{}'],
      ['m4-string-state', '"high"'],
      ['m4-string-level', '{"currentLevel": "high", "identity": {"toolName": "data-tool"}}'],
      ['m4-identity-number', '{"currentLevel": 2, "identity": 7}'],
      ['m4-out-of-range', '{"currentLevel": 4, "identity": {"toolName": "data-tool"}}'],
      ['m4-fraction', '{"currentLevel": 1.5, "identity": {"toolName": "data-tool"}}'],
      ['m4-array', '[1, 2, 3]'],
      ['m4-null-level', '{"currentLevel": null, "identity": {"toolName": "x"}}'],
    ];
    for (const [id, state] of m4Rows) {
      await query(
        db.url,
        "INSERT INTO conversations (id, state, created_at, updated_at) VALUES ($1, $2::jsonb, '2025-01-01T00:00:00Z', '2025-06-01T12:00:00.123Z')",
        [id, state],
      );
    }

    const run = await runMigrateCli(db.url);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Applied 20260102000100_m5_migrate_m4_permissions');

    const convs = await query<{ id: string; legacy_level: number | null; state: unknown }>(
      db.url,
      'SELECT id, legacy_level, state FROM conversations ORDER BY id',
    );
    const levels = Object.fromEntries(convs.map((c) => [c.id, c.legacy_level]));
    expect(levels).toEqual({
      'm4-array': null,
      'm4-empty': null,
      'm4-exec': 3,
      'm4-fraction': null,
      'm4-identity-number': 2,
      'm4-level-only': 1,
      'm4-null-level': null,
      'm4-out-of-range': null,
      'm4-string-level': null,
      'm4-string-state': null,
      'm4-writer': 2,
    });
    // The M4 document stays in place.
    expect(convs.find((c) => c.id === 'm4-writer')?.state).toEqual({
      currentLevel: 2,
      identity: { toolName: 'example-tool' },
    });
    expect(convs.find((c) => c.id === 'm4-string-state')?.state).toBe('high');

    const perms = await query<{ conversation_id: string; tool: string; level: number; upgraded_at: Date }>(
      db.url,
      'SELECT conversation_id, tool, level, upgraded_at FROM tool_permissions ORDER BY conversation_id',
    );
    expect(perms.map((p) => [p.conversation_id, p.tool, p.level])).toEqual([
      ['m4-exec', 'data-tool', 3],
      ['m4-writer', 'example-tool', 2],
    ]);
    expect(perms.every((p) => p.upgraded_at.toISOString() === '2025-06-01T12:00:00.123Z')).toBe(true);

    const history = await query<{
      conversation_id: string;
      tool: string;
      from_level: number | null;
      to_level: number;
      actor: string;
      at: Date;
    }>(
      db.url,
      'SELECT conversation_id, tool, from_level, to_level, actor, at FROM permission_history ORDER BY conversation_id',
    );
    expect(
      history.map((h) => [h.conversation_id, h.tool, h.from_level, h.to_level, h.actor, h.at.toISOString()]),
    ).toEqual([
      ['m4-exec', 'data-tool', null, 3, 'm4-migration', '2025-06-01T12:00:00.123Z'],
      ['m4-writer', 'example-tool', null, 2, 'm4-migration', '2025-06-01T12:00:00.123Z'],
    ]);
  });

  it('keeps the permission history append-only while its conversation exists', async () => {
    expect((await runMigrateCli(db.url)).status).toBe(0);
    await query(db.url, "INSERT INTO conversations (id) VALUES ('c1')");
    await query(
      db.url,
      "INSERT INTO permission_history (conversation_id, tool, to_level, actor) VALUES ('c1', 'data-tool', 2, 'test')",
    );
    await expect(query(db.url, 'UPDATE permission_history SET to_level = 3')).rejects.toThrow(/append-only/);
    await expect(query(db.url, 'DELETE FROM permission_history')).rejects.toThrow(/only with their conversation/);
    await query(db.url, "DELETE FROM conversations WHERE id = 'c1'");
    expect(await query(db.url, 'SELECT 1 FROM permission_history')).toHaveLength(0);
  });
});

describe('db:diff', () => {
  it('finds prisma/schema.prisma and prisma/migrations in agreement', async () => {
    const r = await runMigrateCli(process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || '', [
      '--diff',
      '--check',
    ]);
    expect(r.stderr).not.toContain('disagree');
    expect(r.stdout.trim()).toBe('');
    expect(r.status).toBe(0);
  });
});
