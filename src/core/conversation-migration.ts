/**
 * M4 -> M5 (seed 002, "Migration from M4"). The SQL migration
 * (prisma/migrations/*_m5_migrate_m4_permissions) turns each M4 document into
 * a legacy level plus an explicit permission; this module reads M4 documents
 * the same way (for code paths and tests) and renders a conversation in the
 * seed's M5 document form:
 *
 *   { currentLevel, toolPermissions: { TOOL: { level, upgradedAt } },
 *     sharedContext: { resources: Resource[] } }
 */
import type { Level, Resource } from './tool-interface';

export interface M5State {
  /** The M4 legacy level, kept for fallback; null when there was none. */
  currentLevel: number | null;
  toolPermissions: Record<string, { level: number; upgradedAt: number }>;
  sharedContext: { resources: Resource[] };
}

/** The M4 document's level when it is an integer 1..3, else null (junk migrates without a level). */
export function legacyLevelOf(state: unknown): Level | null {
  if (!state || typeof state !== 'object' || Array.isArray(state)) return null;
  const level = (state as { currentLevel?: unknown }).currentLevel;
  return level === 1 || level === 2 || level === 3 ? level : null;
}

/** The M4 tool that held the level, when the document names one and has a valid level. */
export function legacyToolOf(state: unknown): string | null {
  if (legacyLevelOf(state) === null) return null;
  const identity = (state as { identity?: unknown }).identity;
  if (!identity || typeof identity !== 'object' || Array.isArray(identity)) return null;
  const name = (identity as { toolName?: unknown }).toolName;
  return typeof name === 'string' && name.length > 0 ? name : null;
}

export function conversationState(
  legacyLevel: number | null,
  permissions: ReadonlyArray<{ tool: string; level: number; upgradedAt: Date }>,
  resources: Resource[],
): M5State {
  const toolPermissions: M5State['toolPermissions'] = {};
  for (const p of [...permissions].sort((a, b) => a.tool.localeCompare(b.tool))) {
    toolPermissions[p.tool] = { level: p.level, upgradedAt: p.upgradedAt.getTime() };
  }
  return { currentLevel: legacyLevel, toolPermissions, sharedContext: { resources } };
}
