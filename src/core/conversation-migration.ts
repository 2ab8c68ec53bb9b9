/**
 * M4 -> M5 (seed 002, "Migration from M4"). The migration itself is SQL
 * (prisma/migrations/*_m5_migrate_m4_permissions, tested on junk M4 rows in
 * test/db/migrations.test.ts): it turns each M4 document into a legacy level
 * plus an explicit permission. What stays here is the other side: a
 * conversation rendered in the seed's M5 document form (GET /state):
 *
 *   { currentLevel, toolPermissions: { TOOL: { level, upgradedAt } },
 *     sharedContext: { resources: Resource[] } }
 */
import type { Resource } from './tool-interface';

export interface M5State {
  /** The M4 legacy level, kept for fallback; null when there was none. */
  currentLevel: number | null;
  toolPermissions: Record<string, { level: number; upgradedAt: number }>;
  sharedContext: { resources: Resource[] };
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
