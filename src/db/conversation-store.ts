/**
 * The ConversationStore port: Prisma for the REST endpoints, plain SQL for
 * the two checks on the resource paths; every call's errors translated
 * (src/db/sql.ts) like the SQL adapters'.
 */
import { readStoredPolicy, type TPolicy } from '../core/policy';
import type { ConversationStore, ConversationView } from '../core/ports';
import type { PrismaClient } from '../generated/prisma/client';
import { Prisma } from '../generated/prisma/client';
import { type Queryable, translateError, translated } from './sql';

type Row = {
  id: string;
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
    metadata: metadata as Record<string, unknown>,
    // The stored policy is parsed by the domain's rule (src/core/policy.ts).
    policy: readStoredPolicy(row.policy).policy,
    legacyLevel: row.legacyLevel,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  };
}

const SELECT = { id: true, metadata: true, policy: true, legacyLevel: true, createdAt: true, updatedAt: true } as const;

export class PrismaConversationStore implements ConversationStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly pool: Queryable,
  ) {}

  async create(id: string, metadata: Record<string, unknown>, policy: TPolicy): Promise<ConversationView | undefined> {
    try {
      const row = await this.prisma.conversation.create({
        data: { id, metadata: metadata as Prisma.InputJsonObject, policy },
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

  async delete(id: string): Promise<boolean> {
    const { count } = await translated(this.prisma.conversation.deleteMany({ where: { id } }));
    return count > 0;
  }

  async exists(id: string): Promise<boolean> {
    const { rows } = await translated(this.pool.query('SELECT 1 FROM conversations WHERE id = $1', [id]));
    return rows.length > 0;
  }

  async ensure(id: string): Promise<void> {
    await translated(this.pool.query('INSERT INTO conversations (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [id]));
  }
}
