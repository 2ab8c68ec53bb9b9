/**
 * The PermissionStore port with Prisma: levels, their history, and the one
 * transaction that changes a level and records it. Every call's errors are
 * translated (src/db/sql.ts) like the SQL adapters'.
 */
import { effectiveLevel, type LevelChange, type PermissionEventView } from '../core/permissions';
import type { PermissionStore, StoredLevels } from '../core/ports';
import type { Level } from '../core/tool-interface';
import type { PrismaClient } from '../generated/prisma/client';
import { SETTLE_BY_LEVEL } from './approval-store';
import { translated } from './sql';
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from '../core/errors';

export class PrismaPermissionStore implements PermissionStore {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * The conversation row is locked so concurrent changes of one conversation
   * apply one after the other and each history row records the level it
   * really replaced. Pending approval requests of the tool that the new
   * level makes unnecessary are settled in the same transaction.
   */
  async setLevel(
    conversationId: string,
    tool: string,
    level: Level,
    actor: string,
    as: { createOwner: string; requiredOwner?: string },
  ): Promise<LevelChange & { conversationCreated: boolean }> {
    // The database refuses the reserved id too, but Prisma's error drops the constraint's name.
    if (conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
    return translated(
      this.prisma.$transaction(async (tx) => {
        const inserted =
          await tx.$executeRaw`INSERT INTO conversations (id, owner) VALUES (${conversationId}, ${as.createOwner})
          ON CONFLICT (id) DO NOTHING`;
        const [conv] = await tx.$queryRaw<Array<{ legacy_level: number | null; owner: string | null }>>`
        SELECT legacy_level, owner FROM conversations WHERE id = ${conversationId} FOR UPDATE`;
        if (as.requiredOwner !== undefined && conv?.owner !== as.requiredOwner) {
          throw conversationNotFound(conversationId);
        }
        const current = await tx.toolPermission.findUnique({
          where: { conversationId_tool: { conversationId, tool } },
          select: { level: true, expiresAt: true, revertTo: true },
        });
        const previousLevel = effectiveLevel(explicitLevelOf(current), conv?.legacy_level).level;
        const now = new Date();
        await tx.toolPermission.upsert({
          where: { conversationId_tool: { conversationId, tool } },
          create: { conversationId, tool, level, upgradedAt: now },
          // A level set by hand replaces any time-limited grant (approvals): it holds until changed.
          update: { level, upgradedAt: now, expiresAt: null, revertTo: null },
        });
        await tx.permissionEvent.create({
          data: { conversationId, tool, fromLevel: previousLevel, toLevel: level, actor, at: now },
        });
        await tx.conversation.update({ where: { id: conversationId }, data: { updatedAt: now } });
        // The pending approval requests this level makes unnecessary are settled with it (`satisfied`).
        await tx.$executeRawUnsafe(SETTLE_BY_LEVEL, conversationId, tool, level, actor, null);
        return { tool, level, previousLevel, conversationCreated: inserted === 1 };
      }),
    );
  }

  async levels(conversationId: string): Promise<StoredLevels | undefined> {
    const conv = await translated(
      this.prisma.conversation.findUnique({
        where: { id: conversationId },
        select: {
          legacyLevel: true,
          permissions: { select: { tool: true, level: true, upgradedAt: true, expiresAt: true, revertTo: true } },
        },
      }),
    );
    if (!conv) return undefined;
    const explicit = conv.permissions.flatMap((p) => {
      const level = explicitLevelOf(p);
      return level === null ? [] : [{ tool: p.tool, level, upgradedAt: p.upgradedAt }];
    });
    return { legacyLevel: conv.legacyLevel, explicit };
  }

  async history(conversationId: string): Promise<PermissionEventView[] | undefined> {
    const conv = await translated(
      this.prisma.conversation.findUnique({
        where: { id: conversationId },
        select: {
          history: {
            orderBy: { id: 'asc' },
            select: { tool: true, fromLevel: true, toLevel: true, at: true, actor: true },
          },
        },
      }),
    );
    return conv?.history.map((e) => ({
      tool: e.tool,
      fromLevel: e.fromLevel,
      toLevel: e.toLevel,
      at: e.at.getTime(),
      actor: e.actor,
    }));
  }
}

/** The explicit level as negotiate's decision sees it: a time-limited grant past its end is its previous level. */
function explicitLevelOf(
  p: { level: number; expiresAt: Date | null; revertTo: number | null } | null | undefined,
): number | null {
  if (!p) return null;
  return p.expiresAt !== null && p.expiresAt.getTime() <= Date.now() ? p.revertTo : p.level;
}
