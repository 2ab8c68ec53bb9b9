/**
 * Scoped permissions (seed 002): each tool has its own level in each
 * conversation. Effective level: the tool's explicit level if one was set;
 * else the conversation's M4 legacy level, if any; else 1 (read).
 * Every change is one transaction with its history row.
 */
import type { PrismaClient } from '../generated/prisma/client';
import { AppError } from '../http/problem';
import type { Level } from './tool-interface';

export const LEVEL_NAMES: Record<Level, string> = { 1: 'read', 2: 'write', 3: 'execute' };

export type LevelSource = 'explicit' | 'legacy' | 'default';

export function effectiveLevel(
  explicit: number | null | undefined,
  legacy: number | null | undefined,
): { level: Level; source: LevelSource } {
  if (explicit != null) return { level: explicit as Level, source: 'explicit' };
  if (legacy != null) return { level: legacy as Level, source: 'legacy' };
  return { level: 1, source: 'default' };
}

export function isLevel(n: unknown): n is Level {
  return n === 1 || n === 2 || n === 3;
}

export interface LevelChange {
  tool: string;
  level: Level;
  previousLevel: Level;
}

/**
 * Sets `tool`'s level in the conversation (raising or lowering), creating the
 * conversation on first use. The conversation row is locked so concurrent
 * changes of one conversation apply one after the other and each history row
 * records the level it really replaced.
 */
export async function setToolLevel(
  prisma: PrismaClient,
  conversationId: string,
  tool: string,
  level: Level,
  actor: string,
): Promise<LevelChange> {
  return prisma.$transaction(async (tx) => {
    await tx.$executeRaw`INSERT INTO conversations (id) VALUES (${conversationId}) ON CONFLICT (id) DO NOTHING`;
    const [conv] = await tx.$queryRaw<Array<{ legacy_level: number | null }>>`
      SELECT legacy_level FROM conversations WHERE id = ${conversationId} FOR UPDATE`;
    const current = await tx.toolPermission.findUnique({
      where: { conversationId_tool: { conversationId, tool } },
      select: { level: true },
    });
    const previousLevel = effectiveLevel(current?.level, conv?.legacy_level).level;
    const now = new Date();
    await tx.toolPermission.upsert({
      where: { conversationId_tool: { conversationId, tool } },
      create: { conversationId, tool, level, upgradedAt: now },
      update: { level, upgradedAt: now },
    });
    await tx.permissionEvent.create({
      data: { conversationId, tool, fromLevel: previousLevel, toLevel: level, actor, at: now },
    });
    await tx.conversation.update({ where: { id: conversationId }, data: { updatedAt: now } });
    return { tool, level, previousLevel };
  });
}

export interface ToolPermissionView {
  tool: string;
  level: Level;
  source: LevelSource;
  upgradedAt: number | null;
}

export interface PermissionsView {
  conversationId: string;
  legacyLevel: number | null;
  tools: ToolPermissionView[];
}

/** One row per registered tool (an explicit level of a tool no longer registered stays stored, unlisted). */
export async function listPermissions(
  prisma: PrismaClient,
  conversationId: string,
  toolNames: readonly string[],
): Promise<PermissionsView> {
  const conv = await prisma.conversation.findUnique({
    where: { id: conversationId },
    select: { legacyLevel: true, permissions: { select: { tool: true, level: true, upgradedAt: true } } },
  });
  if (!conv) throw new AppError('not_found', `Conversation not found: ${conversationId}`);
  const explicit = new Map(conv.permissions.map((p) => [p.tool, p]));
  const names = [...toolNames].sort();
  return {
    conversationId,
    legacyLevel: conv.legacyLevel,
    tools: names.map((tool) => {
      const p = explicit.get(tool);
      const { level, source } = effectiveLevel(p?.level, conv.legacyLevel);
      return { tool, level, source, upgradedAt: p ? p.upgradedAt.getTime() : null };
    }),
  };
}

export interface PermissionEventView {
  tool: string;
  fromLevel: number | null;
  toLevel: number;
  at: number;
  actor: string;
}

export async function permissionHistory(prisma: PrismaClient, conversationId: string): Promise<PermissionEventView[]> {
  const conv = await prisma.conversation.findUnique({
    where: { id: conversationId },
    select: {
      history: {
        orderBy: { id: 'asc' },
        select: { tool: true, fromLevel: true, toLevel: true, at: true, actor: true },
      },
    },
  });
  if (!conv) throw new AppError('not_found', `Conversation not found: ${conversationId}`);
  return conv.history.map((e) => ({
    tool: e.tool,
    fromLevel: e.fromLevel,
    toLevel: e.toLevel,
    at: e.at.getTime(),
    actor: e.actor,
  }));
}
