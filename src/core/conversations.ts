/**
 * Conversations: created explicitly (POST) or on first use (negotiate, PUT of
 * a resource or a permission); deleted with everything they own.
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../generated/prisma/client';
import { Prisma } from '../generated/prisma/client';
import { AppError } from '../http/problem';
import { conversationState, type M5State } from './conversation-migration';
import { readStoredPolicy, type TPolicy } from './policy';
import type { Queryable } from './shared-context';
import { prepared, resourceSql, toResource, type ResourceRow } from './shared-context';
import type { Resource, ToolLogger } from './tool-interface';

export interface ConversationView {
  id: string;
  metadata: Record<string, unknown>;
  policy: TPolicy;
  legacyLevel: number | null;
  createdAt: number;
  updatedAt: number;
}

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
    // Shown as it applies (unreadable: deny everything); negotiate logs why.
    policy: readStoredPolicy(row.policy).policy,
    legacyLevel: row.legacyLevel,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  };
}

const SELECT = { id: true, metadata: true, policy: true, legacyLevel: true, createdAt: true, updatedAt: true } as const;

export async function createConversation(
  prisma: PrismaClient,
  input: { id?: string; metadata?: Record<string, unknown>; policy?: TPolicy },
): Promise<ConversationView> {
  const id = input.id ?? randomUUID();
  try {
    const row = await prisma.conversation.create({
      data: {
        id,
        metadata: (input.metadata ?? {}) as Prisma.InputJsonObject,
        policy: input.policy ?? { deny: [] },
      },
      select: SELECT,
    });
    return toView(row);
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') {
      throw new AppError('conflict', `Conversation already exists: ${id}`);
    }
    throw err;
  }
}

export async function getConversation(prisma: PrismaClient, id: string): Promise<ConversationView> {
  const row = await prisma.conversation.findUnique({ where: { id }, select: SELECT });
  if (!row) throw new AppError('not_found', `Conversation not found: ${id}`);
  return toView(row);
}

/** Deletes the conversation; its resources, permissions and history go with it (ON DELETE CASCADE). */
export async function deleteConversation(prisma: PrismaClient, id: string): Promise<void> {
  const { count } = await prisma.conversation.deleteMany({ where: { id } });
  if (count === 0) throw new AppError('not_found', `Conversation not found: ${id}`);
}

export async function assertConversationExists(db: Queryable, id: string): Promise<void> {
  const { rows } = await db.query('SELECT 1 FROM conversations WHERE id = $1', [id]);
  if (rows.length === 0) throw new AppError('not_found', `Conversation not found: ${id}`);
}

export async function ensureConversation(db: Queryable, id: string): Promise<void> {
  await db.query('INSERT INTO conversations (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [id]);
}

/** The conversation in the seed's M5 JSON document form. */
export async function getConversationState(prisma: PrismaClient, db: Queryable, id: string): Promise<M5State> {
  const row = await prisma.conversation.findUnique({
    where: { id },
    select: { legacyLevel: true, permissions: { select: { tool: true, level: true, upgradedAt: true } } },
  });
  if (!row) throw new AppError('not_found', `Conversation not found: ${id}`);
  const resources = await resourceSql.list(db, id, {});
  return conversationState(row.legacyLevel, row.permissions, resources);
}

const DECISION_SELECT = `
  SELECT c.legacy_level, c.policy, p.level
  FROM conversations c LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = $2
  WHERE c.id = $1`;

/** The same, plus the one resource a read action declared it will read. */
const DECISION_SELECT_PREFETCH = `
  SELECT c.legacy_level, c.policy, p.level,
         r.name, r.data, r.created_by, r.updated_by, r.created_at, r.updated_at, r.version
  FROM conversations c
  LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = $2
  LEFT JOIN resources r ON r.conversation_id = c.id AND r.name = $3
  WHERE c.id = $1`;

/** Creates the conversation unless a concurrent request just did, and reads it either way. */
const DECISION_CREATE = `
  WITH created AS (
    INSERT INTO conversations (id) VALUES ($1) ON CONFLICT (id) DO NOTHING
    RETURNING id, legacy_level, policy
  ), conv AS (
    SELECT id, legacy_level, policy FROM created
    UNION ALL
    SELECT id, legacy_level, policy FROM conversations WHERE id = $1
  )
  SELECT conv.legacy_level, conv.policy, p.level
  FROM conv LEFT JOIN tool_permissions p ON p.conversation_id = conv.id AND p.tool = $2
  LIMIT 1`;

type DecisionRow = { legacy_level: number | null; policy: unknown; level: number | null } & Partial<
  Record<keyof ResourceRow, unknown>
>;

export interface DecisionContext {
  exists: boolean;
  legacyLevel: number | null;
  policy: TPolicy;
  explicitLevel: number | null;
  /** With `prefetch`: the resource as read in the same statement, or null when it does not exist. */
  prefetched?: { name: string; resource: Resource | null };
}

/**
 * What negotiate needs to decide, in one round trip for a known
 * conversation: its policy and legacy level and the tool's explicit level,
 * and (`prefetch`) the one resource a read action declared. With `create`, a
 * conversation never seen before is created (one more round trip, once per
 * conversation; it has no resources yet). A stored policy that cannot be
 * read comes back as UNREADABLE_POLICY (deny everything), and `logger` is
 * told why.
 */
export async function loadDecisionContext(
  db: Queryable,
  conversationId: string,
  tool: string,
  create: boolean,
  prefetch?: string,
  logger?: Pick<ToolLogger, 'warn'>,
): Promise<DecisionContext> {
  const first =
    prefetch === undefined
      ? await prepared<DecisionRow>(db, 'decision_select', DECISION_SELECT, [conversationId, tool])
      : await prepared<DecisionRow>(db, 'decision_prefetch', DECISION_SELECT_PREFETCH, [
          conversationId,
          tool,
          prefetch,
        ]);
  let row = first.rows[0];
  // Only a row of the prefetching statement says whether the resource exists.
  const prefetched =
    row && prefetch !== undefined
      ? { name: prefetch, resource: row.name == null ? null : toResource(row as unknown as ResourceRow) }
      : undefined;
  if (!row && create) {
    row = (await prepared<DecisionRow>(db, 'decision_create', DECISION_CREATE, [conversationId, tool])).rows[0];
  }
  if (!row) return { exists: false, legacyLevel: null, policy: { deny: [] }, explicitLevel: null };
  const { policy, problem } = readStoredPolicy(row.policy);
  if (problem) logger?.warn({ conversationId, problem }, 'stored policy unreadable: denying every action');
  return {
    exists: true,
    legacyLevel: row.legacy_level,
    policy,
    explicitLevel: row.level,
    ...(prefetched ? { prefetched } : {}),
  };
}
