/**
 * Scoped permissions (seed 002): each tool has its own level in each
 * conversation. Effective level: the tool's explicit level if one was set;
 * else the conversation's M4 legacy level, if any; else 1 (read).
 * Every change is one transaction with its history row (PermissionStore).
 */
import { conversationNotFound } from './errors';
import type { PermissionEventView, PermissionStore } from './ports';

export type { LevelChange, PermissionEventView } from './ports';
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
  store: PermissionStore,
  conversationId: string,
  toolNames: readonly string[],
): Promise<PermissionsView> {
  const conv = await store.levels(conversationId);
  if (!conv) throw conversationNotFound(conversationId);
  const explicit = new Map(conv.explicit.map((p) => [p.tool, p]));
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

export async function permissionHistory(
  store: PermissionStore,
  conversationId: string,
): Promise<PermissionEventView[]> {
  const events = await store.history(conversationId);
  if (!events) throw conversationNotFound(conversationId);
  return events;
}
