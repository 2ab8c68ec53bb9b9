// Examples for the OpenAPI spec, read by `tsoa spec` from the decorators that
// name them (@Example, @Response). Plain object literals only: tsoa evaluates
// the initializer itself, so no spreads, `as const` or computed values.
import type { LevelChange, PermissionHistory, Permissions } from '../responses';

export const permissionsExample: Permissions = {
  conversationId: 'support-42',
  legacyLevel: null,
  tools: [
    { tool: 'calculator', level: 1, source: 'default', upgradedAt: null },
    { tool: 'data-tool', level: 2, source: 'explicit', upgradedAt: 1795361870989 },
  ],
};
export const levelChangeExample: LevelChange = { tool: 'data-tool', level: 2, previousLevel: 1 };
export const permissionHistoryExample: PermissionHistory = {
  events: [{ tool: 'data-tool', fromLevel: 1, toLevel: 2, at: 1795361870989, actor: 'admin:admin' }],
};
