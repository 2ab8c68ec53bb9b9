/**
 * negotiate's special actions, answered by the service itself rather than
 * by a tool: `list-tools` and `upgrade:TOOL:level-N`. Parsed here only, for
 * negotiate (which runs them) and MCP (which must never expose them).
 */
export type SpecialAction = { kind: 'list-tools' } | { kind: 'upgrade'; tool: string; levelText: string };

const UPGRADE_RE = /^upgrade:([^:]*):level-(.*)$/;

/** The special action `action` names exactly, or undefined for a tool's action. */
export function parseSpecialAction(action: string): SpecialAction | undefined {
  if (action === 'list-tools') return { kind: 'list-tools' };
  const upgrade = UPGRADE_RE.exec(action);
  return upgrade ? { kind: 'upgrade', tool: upgrade[1]!, levelText: upgrade[2]! } : undefined;
}

/**
 * Whether a name is, or looks like, a special action: broader than the
 * parse (any case, spaces around), so a transport that refuses them refuses
 * every spelling.
 */
export function isSpecialAction(name: string): boolean {
  const n = name.trim().toLowerCase();
  return n === 'list-tools' || n.startsWith('upgrade:');
}
