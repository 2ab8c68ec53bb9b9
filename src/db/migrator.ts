/**
 * Applies the migrations in prisma/migrations with Prisma's own schema engine,
 * compiled to WebAssembly (@prisma/schema-engine-wasm), over @prisma/adapter-pg.
 * It writes the standard `_prisma_migrations` table, so `prisma migrate deploy`
 * run elsewhere sees the same history. No native engine binary is involved.
 */
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { Client, Pool, type ClientConfig } from 'pg';
import { bindMigrationAwareSqlAdapterFactory, ColumnTypeEnum, type SqlQueryable } from '@prisma/driver-adapter-utils';
import { PROJECT_ROOT } from '../project-root';
import type * as EngineBg from '@prisma/schema-engine-wasm/schema_engine_bg' with { 'resolution-mode': 'import' };

/** The slice of the WebAssembly API used here (Node has it; @types/node 20 does not declare it). */
declare const WebAssembly: {
  instantiate(
    bytes: Uint8Array,
    imports: Record<string, unknown>,
  ): Promise<{ instance: { exports: Record<string, unknown> } }>;
};

type SchemaEngine = EngineBg.SchemaEngine;
type MigrationList = Parameters<SchemaEngine['applyMigrations']>[0]['migrationsList'];

export const DEFAULT_MIGRATIONS_DIR = join(PROJECT_ROOT, 'prisma', 'migrations');
export const DEFAULT_SCHEMA_PATH = join(PROJECT_ROOT, 'prisma', 'schema.prisma');

let engineModule: Promise<typeof EngineBg> | undefined;

/**
 * The package's own entry imports the .wasm file as an ES module, which Node
 * cannot do; the wasm-bindgen glue (`schema_engine_bg`) is loaded instead and
 * the .wasm instantiated here by hand.
 */
function loadEngineModule(): Promise<typeof EngineBg> {
  engineModule ??= (async () => {
    // Node >= 20.19 loads this ES module through require().
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const bg = require('@prisma/schema-engine-wasm/schema_engine_bg') as typeof EngineBg & {
      __wbg_set_wasm(exports: Record<string, unknown>): void;
    };
    const wasmPath = join(
      resolve(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg'), '..'),
      'schema_engine_bg.wasm',
    );
    const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {
      './schema_engine_bg.js': withUnrefTimers(bg),
    });
    // The engine reports a Rust panic's message through this global before it throws.
    (globalThis as Record<string, unknown>).PRISMA_WASM_PANIC_REGISTRY ??= {
      set_message: (message: string) => process.stderr.write(`schema engine panic: ${message}\n`),
    };
    bg.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return bg;
  })();
  return engineModule;
}

/**
 * The engine arms timers (idle timeouts) that would keep a finished CLI
 * process alive for ~10 s; they are unref'd so they never hold the process.
 */
function withUnrefTimers(bg: Record<string, unknown>): Record<string, unknown> {
  const imports = { ...bg };
  for (const [name, fn] of Object.entries(bg)) {
    if (!name.startsWith('__wbg_setTimeout_') || typeof fn !== 'function') continue;
    imports[name] = (...args: unknown[]) => {
      const timer: unknown = (fn as (...a: unknown[]) => unknown)(...args);
      (timer as { unref?: () => void } | undefined)?.unref?.();
      return timer;
    };
  }
  return imports;
}

export interface MigrationOptions {
  /** Where the server is (DatabaseServer.clientConfig, or parseIntoClientConfig of a URL). */
  client: ClientConfig;
  migrationsDir?: string;
  schemaPath?: string;
  /** Stop after this migration directory (inclusive). */
  to?: string;
  log?: (message: string) => void;
}

export interface MigrationReport {
  applied: string[];
  available: string[];
}

export function listMigrationDirs(migrationsDir = DEFAULT_MIGRATIONS_DIR): string[] {
  return readdirSync(migrationsDir)
    .filter((d) => statSync(join(migrationsDir, d)).isDirectory())
    .filter((d) => existsSync(join(migrationsDir, d, 'migration.sql')))
    .sort();
}

function migrationList(migrationsDir: string, dirs: string[]): MigrationList {
  const lockPath = join(migrationsDir, 'migration_lock.toml');
  return {
    baseDir: migrationsDir,
    lockfile: {
      path: 'migration_lock.toml',
      content: existsSync(lockPath) ? readFileSync(lockPath, 'utf8') : null,
    },
    shadowDbInitScript: '',
    migrationDirectories: dirs.map((dir) => ({
      path: dir,
      migrationFile: {
        path: 'migration.sql',
        content: { tag: 'ok', value: readFileSync(join(migrationsDir, dir, 'migration.sql'), 'utf8') },
      },
    })),
  };
}

/**
 * adapter-pg's own factory, with a shadow database that is dropped after its
 * connections end (adapter-pg 7.10 drops it first, which Postgres refuses
 * while the shadow pool is still connected).
 */
function migrationAwareFactory(pool: Pool): PrismaPg {
  const base = new PrismaPg(pool);
  const clientConfig = pool.options;
  const connect = base.connect.bind(base);
  base.connect = async () => forMigrations(await connect());
  base.connectToShadowDb = async () => {
    const database = `prisma_migrate_shadow_db_${randomUUID()}`;
    await pool.query(`CREATE DATABASE "${database}"`);
    const shadow = await new PrismaPg(new Pool({ ...clientConfig, database, max: 2 }), {
      disposeExternalPool: true,
    }).connect();
    const dispose = shadow.dispose.bind(shadow);
    shadow.dispose = async () => {
      await dispose();
      await pool.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    };
    return forMigrations(shadow);
  };
  return base;
}

/** OIDs of Postgres's one-byte `"char"` type and of `text`. */
const CHAR_OID = 18;
const TEXT_OID = 25;

/**
 * Two repairs for the migration engine's connections:
 * The engine's schema describer reads catalog columns of Postgres's one-byte
 * `"char"` type (relkind, contype...), which adapter-pg 7.10 has no mapping
 * for ("Column type 'char' could not be deserialized"). Reported as text, they
 * read as the one-letter strings they are. Only the migration engine's
 * connections are wrapped; the application's are untouched.
 */
function forMigrations<A extends SqlQueryable>(adapter: A): A {
  type IO = (query: unknown) => Promise<{ fields: Array<{ dataTypeID: number }> }>;
  const target = adapter as unknown as {
    performIO: IO;
    executeScript(script: string): Promise<void>;
    client: { query(text: string): Promise<unknown> };
    onError(error: unknown): never;
  };
  // adapter-pg runs a script by splitting it on every ";", which breaks
  // function bodies and string literals. Postgres's simple query protocol
  // takes the whole script at once, and runs it in one implicit transaction
  // unless the script says otherwise, so a failing migration leaves nothing behind.
  target.executeScript = async (script) => {
    try {
      await target.client.query(script);
    } catch (error) {
      target.onError(error);
    }
  };
  const performIO = target.performIO.bind(adapter);
  // Columns of type "char": reported to adapter-pg as text so that it maps
  // them, then to the engine as Character, which is what it reads them as.
  const charColumns = new WeakMap<object, number[]>();
  target.performIO = async (query) => {
    const result = await performIO(query);
    const indices: number[] = [];
    result.fields.forEach((field, i) => {
      if (field.dataTypeID === CHAR_OID) {
        field.dataTypeID = TEXT_OID;
        indices.push(i);
      }
    });
    if (indices.length > 0) charColumns.set(query as object, indices);
    return result;
  };
  const queryRaw = adapter.queryRaw.bind(adapter);
  adapter.queryRaw = async (query) => {
    const result = await queryRaw(query);
    const indices = charColumns.get(query);
    if (!indices) return result;
    const columnTypes = [...result.columnTypes];
    for (const i of indices) columnTypes[i] = ColumnTypeEnum.Character;
    return { ...result, columnTypes };
  };
  return adapter;
}

async function withEngine<T>(opts: MigrationOptions, fn: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const bg = await loadEngineModule();
  const schemaPath = opts.schemaPath ?? DEFAULT_SCHEMA_PATH;
  const log = opts.log ?? (() => undefined);
  // Our own pool, so that it can be ended: the engine would otherwise keep the
  // process alive until idle connections time out. Discrete fields rather than
  // a connection string, because the adapter makes its shadow database by
  // overriding `database`, which a connection string would take precedence over.
  const pool = new Pool({ ...opts.client, max: 2 });
  const factory = bindMigrationAwareSqlAdapterFactory(migrationAwareFactory(pool));
  const engine = await bg.SchemaEngine.new(
    { datamodels: [[schemaPath, readFileSync(schemaPath, 'utf8')]] },
    (line: string) => log(line),
    factory,
  );
  try {
    return await fn(engine);
  } finally {
    engine.free();
    await pool.end();
  }
}

/** Arbitrary, fixed: the key of the session advisory lock that serialises migrators. */
const MIGRATION_LOCK_KEY = 727073690;

/**
 * Replicas starting together on one Postgres each try to migrate: the lock
 * makes them take turns, and the later ones find nothing left to apply.
 */
async function withMigrationLock<T>(config: ClientConfig, fn: () => Promise<T>): Promise<T> {
  const client = new Client(config);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    return await fn();
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/** Applies pending migrations (up to and including `to`, when given). */
export async function applyMigrations(opts: MigrationOptions): Promise<MigrationReport> {
  const migrationsDir = opts.migrationsDir ?? DEFAULT_MIGRATIONS_DIR;
  const all = listMigrationDirs(migrationsDir);
  let dirs = all;
  if (opts.to !== undefined) {
    const stop = all.indexOf(opts.to);
    if (stop < 0) {
      throw new Error(`Unknown migration "${opts.to}". Known: ${all.join(', ')}`);
    }
    dirs = all.slice(0, stop + 1);
  }
  const applied = await withMigrationLock(opts.client, () =>
    withEngine(opts, async (engine) => {
      const out = await engine.applyMigrations({
        migrationsList: migrationList(migrationsDir, dirs),
        filters: { externalTables: [], externalEnums: [] },
      });
      return out.appliedMigrationNames;
    }),
  );
  return { applied, available: dirs };
}

/**
 * The SQL that would bring a database migrated with every migration up to
 * schema.prisma: empty when the two agree. Uses a temporary shadow database.
 */
export async function diffMigrationsToSchema(opts: MigrationOptions): Promise<string> {
  const migrationsDir = opts.migrationsDir ?? DEFAULT_MIGRATIONS_DIR;
  const schemaPath = opts.schemaPath ?? DEFAULT_SCHEMA_PATH;
  return withEngine(opts, async (engine) => {
    const result = await engine.diff({
      from: { tag: 'migrations', ...migrationList(migrationsDir, listMigrationDirs(migrationsDir)) },
      to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: readFileSync(schemaPath, 'utf8') }] },
      script: true,
      exitCode: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    return result.stdout ?? '';
  });
}

/**
 * The SQL that would bring the connected database up to schema.prisma: empty
 * when they agree. Needs no shadow database.
 */
export async function diffDatabaseToSchema(opts: MigrationOptions): Promise<string> {
  const schemaPath = opts.schemaPath ?? DEFAULT_SCHEMA_PATH;
  const files = [{ path: schemaPath, content: readFileSync(schemaPath, 'utf8') }];
  return withEngine(opts, async (engine) => {
    const result = await engine.diff({
      from: { tag: 'schemaDatasource', files, configDir: PROJECT_ROOT },
      to: { tag: 'schemaDatamodel', files },
      script: true,
      exitCode: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    return result.stdout ?? '';
  });
}
