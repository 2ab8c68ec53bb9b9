/**
 * The M5 side of the M4 -> M5 migration (src/core/conversation-migration.ts):
 * a conversation rendered in the seed's M5 document form, what GET /state
 * answers. The SQL that migrates M4 rows is tested in test/db/migrations.test.ts.
 */
import { conversationState } from '../../src/core/conversation-migration';
import type { Resource } from '../../src/core/tool-interface';

const notes: Resource = {
  name: 'notes',
  data: { text: 'hello' },
  createdBy: 'data-tool',
  updatedBy: 'client',
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_500,
  version: 2,
};

describe('conversationState (the M5 document)', () => {
  it('keeps the M4 legacy level as currentLevel and lists each explicit level by tool, upgradedAt in epoch ms', () => {
    const state = conversationState(
      2,
      [
        { tool: 'transform-tool', level: 3, upgradedAt: new Date(1_700_000_001_000) },
        { tool: 'data-tool', level: 1, upgradedAt: new Date(1_700_000_002_000) },
      ],
      [notes],
    );
    expect(state).toEqual({
      currentLevel: 2,
      toolPermissions: {
        'data-tool': { level: 1, upgradedAt: 1_700_000_002_000 },
        'transform-tool': { level: 3, upgradedAt: 1_700_000_001_000 },
      },
      sharedContext: { resources: [notes] },
    });
  });

  it('writes toolPermissions in tool-name order whatever order the store gave, without reordering its input', () => {
    const permissions = [
      { tool: 'export-tool', level: 2, upgradedAt: new Date(3) },
      { tool: 'analytics-tool', level: 2, upgradedAt: new Date(1) },
      { tool: 'data-tool', level: 2, upgradedAt: new Date(2) },
    ];
    const state = conversationState(null, permissions, []);
    expect(JSON.stringify(Object.keys(state.toolPermissions))).toBe('["analytics-tool","data-tool","export-tool"]');
    expect(permissions.map((p) => p.tool)).toEqual(['export-tool', 'analytics-tool', 'data-tool']);
  });

  it('is the M4-free document for a conversation born in M5: currentLevel null, no permissions, no resources', () => {
    expect(conversationState(null, [], [])).toEqual({
      currentLevel: null,
      toolPermissions: {},
      sharedContext: { resources: [] },
    });
  });
});
