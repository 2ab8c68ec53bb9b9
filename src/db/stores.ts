/** The domain's ports (src/core/ports/) on one database. */
import type { Stores } from '../core/ports';
import { PrismaConversationStore } from './conversation-store';
import type { Database } from './database';
import { SqlDecisionStore } from './decision-store';
import { SqlIdempotencyStore } from './idempotency-store';
import { SqlKeyStore } from './key-store';
import { PrismaPermissionStore } from './permission-store';
import { SqlResourceQueries } from './resource-query';
import { SqlResourceStore } from './resource-store';
import { PoolUnitsOfWork } from './unit-of-work';

/** QUERY_TIMEOUT_MS's default (src/config.ts), for callers that give none. */
const QUERY_TIMEOUT_DEFAULT_MS = 2000;

/** `queryTimeoutMs`: QUERY_TIMEOUT_MS, the bound of a filtered resource query. */
export function openStores(
  db: Pick<Database, 'pool' | 'prisma' | 'sharedSession'>,
  opts: { queryTimeoutMs?: number } = {},
): Stores {
  return {
    resources: new SqlResourceStore(
      db.pool,
      new SqlResourceQueries(db.pool, opts.queryTimeoutMs ?? QUERY_TIMEOUT_DEFAULT_MS, db.sharedSession),
    ),
    decisions: new SqlDecisionStore(db.pool),
    permissions: new PrismaPermissionStore(db.prisma),
    conversations: new PrismaConversationStore(db.prisma, db.pool),
    keys: new SqlKeyStore(db.pool),
    units: new PoolUnitsOfWork(db.pool),
    idempotency: new SqlIdempotencyStore(db.pool),
  };
}
