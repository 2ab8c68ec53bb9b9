/**
 * The ConversationStore port: Prisma for the REST endpoints, plain SQL for
 * the two checks on the resource paths; every call's errors translated
 * (src/db/sql.ts) like the SQL adapters'.
 */
import { readStoredPolicy, type TPolicy } from '../core/policy';
import type { ConversationStore, ConversationView } from '../core/ports';
import type { PrismaClient } from '../generated/prisma/client';
import { Prisma } from '../generated/prisma/client';
import { type Queryable, prepared, translateError, translated } from './sql';

type Row = {
  id: string;
  owner: string | null;
  metadata: unknown;
  policy: unknown;
  legacyLevel: number | null;
  createdAt: Date;
  updatedAt: Date;
};

function toView(row: Row): ConversationView {
  const metadata = row.metadata && typeof row.metadata === 'object' && !Array.isArray(row.metadata) ? row.metadata : {};
  return {
    id: row.id,
    owner: row.owner,
    metadata: metadata as Record<string, unknown>,
    // The stored policy is parsed by the domain's rule (src/core/policy.ts).
    policy: readStoredPolicy(row.policy).policy,
    legacyLevel: row.legacyLevel,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  };
}

/** Creates it unless a concurrent request just did, and reads its owner either way (one statement). */
const ENSURE = `
  WITH created AS (
    INSERT INTO conversations (id, owner) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING owner
  )
  SELECT owner, true AS created FROM created
  UNION ALL SELECT owner, false AS created FROM conversations WHERE id = $1 LIMIT 1`;

const SELECT = {
  id: true,
  owner: true,
  metadata: true,
  policy: true,
  legacyLevel: true,
  createdAt: true,
  updatedAt: true,
} as const;

export class PrismaConversationStore implements ConversationStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly pool: Queryable,
  ) {}

  async create(
    id: string,
    metadata: Record<string, unknown>,
    policy: TPolicy,
    owner: string | null,
  ): Promise<ConversationView | undefined> {
    try {
      const row = await this.prisma.conversation.create({
        data: { id, owner, metadata: metadata as Prisma.InputJsonObject, policy },
        select: SELECT,
      });
      return toView(row);
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return undefined;
      throw translateError(err);
    }
  }

  async get(id: string): Promise<ConversationView | undefined> {
    const row = await translated(this.prisma.conversation.findUnique({ where: { id }, select: SELECT }));
    return row ? toView(row) : undefined;
  }

  async list(opts: { owner?: string; after?: string; limit: number }): Promise<ConversationView[]> {
    const rows = await translated(
      this.prisma.conversation.findMany({
        where: {
          ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
          ...(opts.after !== undefined ? { id: { gt: opts.after } } : {}),
        },
        orderBy: { id: 'asc' },
        take: opts.limit,
        select: SELECT,
      }),
    );
    return rows.map(toView);
  }

  /** The agent keys are revoked in the same transaction: a later conversation with this id is someone else's. */
  async delete(id: string): Promise<boolean> {
    const [, { count }] = await translated(
      this.prisma.$transaction([
        this.prisma.apiKey.updateMany({
          where: { conversationId: id, revokedAt: null },
          data: { revokedAt: new Date() },
        }),
        this.prisma.conversation.deleteMany({ where: { id } }),
      ]),
    );
    return count > 0;
  }

  async owner(id: string): Promise<string | null | undefined> {
    const { rows } = await translated(
      prepared<{ owner: string | null }>(
        this.pool,
        'conversation_owner',
        'SELECT owner FROM conversations WHERE id = $1',
        [id],
      ),
    );
    return rows.length > 0 ? rows[0]!.owner : undefined;
  }

  async exists(id: string): Promise<boolean> {
    const { rows } = await translated(this.pool.query('SELECT 1 FROM conversations WHERE id = $1', [id]));
    return rows.length > 0;
  }

  async ensure(id: string, owner: string): Promise<{ owner: string | null; created: boolean }> {
    // When a concurrent request inserted the row and committed while this INSERT waited on it,
    // DO NOTHING returns no row and the statement's snapshot does not see that row either:
    // the statement is run again (its new snapshot sees the row, or inserts it if it is gone).
    for (let attempt = 1; ; attempt++) {
      const { rows } = await translated(
        prepared<{ owner: string | null; created: boolean }>(this.pool, 'conversation_ensure', ENSURE, [id, owner]),
      );
      if (rows.length > 0) return { owner: rows[0]!.owner, created: rows[0]!.created };
      if (attempt === 3) throw new Error(`Conversation ${id} could neither be created nor read`);
    }
  }
}
