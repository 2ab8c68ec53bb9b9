/**
 * Pinning's decisions (src/participants/participant-pinning.ts) on plain
 * listings: what the first listing pins, what a changed, new, reverted or
 * vanished upstream tool does, and what approving pins.
 */
import { definitionDigest } from '../../src/participants/action-names';
import { approve, pin } from '../../src/participants/participant-pinning';
import type { UpstreamTool } from '../../src/participants/upstream';

function tool(upstreamName: string, description: string, defaultLevel: 1 | 2 | 3 = 1): UpstreamTool {
  const inputSchema = { type: 'object', properties: {} };
  return {
    upstreamName,
    description,
    inputSchema,
    defaultLevel,
    definition: { name: upstreamName, description, inputSchema },
  };
}

describe('pin', () => {
  it('the first listing pins every tool, active', () => {
    const out = pin([], [tool('read_file', 'Reads'), tool('writeFile', 'Writes', 2)], true);
    expect(out.changed).toBe(true);
    expect(out.quarantined).toEqual([]);
    expect(out.actions.map((a) => [a.action, a.status, a.level])).toEqual([
      ['read-file', 'active', 1],
      ['write-file', 'active', 2],
    ]);
    expect(out.actions[0]!.pinnedDigest).toBe(definitionDigest(tool('read_file', 'Reads').definition));
  });

  it('the same listing again changes nothing', () => {
    const first = pin([], [tool('a', 'A')], true).actions;
    const again = pin(first, [tool('a', 'A')], false);
    expect(again.changed).toBe(false);
    expect(again.actions).toEqual(first);
  });

  it('a changed definition is quarantined, keeping the pinned one; back to it is active again', () => {
    const first = pin([], [tool('a', 'A')], true).actions;
    const changed = pin(first, [tool('a', 'A, but sneaky')], false);
    expect(changed.quarantined).toEqual(['a']);
    const [a] = changed.actions;
    expect(a).toMatchObject({ status: 'quarantined', pinnedDigest: first[0]!.pinnedDigest });
    expect(a!.pendingDigest).toBe(definitionDigest(tool('a', 'A, but sneaky').definition));
    // Listed again unchanged: still quarantined, not quarantined (nor audited) a second time.
    const still = pin(changed.actions, [tool('a', 'A, but sneaky')], false);
    expect(still).toMatchObject({ changed: false, quarantined: [] });
    const reverted = pin(changed.actions, [tool('a', 'A')], false);
    expect(reverted.actions[0]).toMatchObject({ status: 'active', pendingDigest: null });
  });

  it('a new tool is quarantined with nothing pinned; a vanished one is gone', () => {
    const first = pin([], [tool('a', 'A')], true).actions;
    const out = pin(first, [tool('b', 'B')], false);
    expect(out.removed).toEqual(['a']);
    expect(out.quarantined).toEqual(['b']);
    expect(out.actions).toEqual([expect.objectContaining({ action: 'b', status: 'quarantined', pinnedDigest: null })]);
  });

  it('approve pins the pending definition and its level', () => {
    const first = pin([], [tool('a', 'A', 1)], true).actions;
    const changed = pin(first, [tool('a', 'A deletes now', 3)], false).actions[0]!;
    const approved = approve(changed)!;
    expect(approved).toMatchObject({ status: 'active', level: 3, pendingDigest: null, pendingDefinition: null });
    expect(approved.pinnedDigest).toBe(changed.pendingDigest);
    expect(approve(approved)).toBeUndefined();
  });
});
