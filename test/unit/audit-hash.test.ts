/**
 * The sealer's entry hash writes the entry's canonical JSON in a fixed key
 * order: it must be exactly what the contract's rule (SHA-256 of prevHash +
 * canonical JSON of the entry without `hash`) gives through canonicalJson.
 */
import { GENESIS_HASH, entryHash } from '../../src/core/audit';
import type { AuditEntry } from '../../src/core/ports';
import { canonicalJson, sha256Hex } from '../../src/core/canonical-json';

const full: Omit<AuditEntry, 'hash'> = {
  seq: 42,
  at: 1795351532824,
  conversationId: 'conv-1',
  actor: 'agent:key_abc',
  event: 'negotiate',
  tool: 'data-tool',
  action: 'update-resource',
  outcome: 'permission_required',
  status: 403,
  argsDigest: 'a'.repeat(64),
  approvalId: 'apr_1',
  requestId: 'req "quoted" \u2028 ünïcode',
  prevHash: GENESIS_HASH,
};

const byTheRule = (e: Omit<AuditEntry, 'hash'>): string => sha256Hex(e.prevHash + canonicalJson(e));

describe('entryHash', () => {
  it('equals SHA-256 of prevHash + canonical JSON, with every field', () => {
    expect(entryHash(full)).toBe(byTheRule(full));
  });

  it('equals it with the optional fields absent, one at a time and all at once', () => {
    const optional = ['tool', 'action', 'status', 'argsDigest', 'approvalId'] as const;
    for (const field of optional) {
      const e = { ...full };
      delete e[field];
      expect(entryHash(e)).toBe(byTheRule(e));
    }
    const bare = { ...full };
    for (const field of optional) delete bare[field];
    expect(entryHash(bare)).toBe(byTheRule(bare));
  });

  it('leaves `hash` itself out', () => {
    expect(entryHash({ ...full, hash: 'f'.repeat(64) })).toBe(byTheRule(full));
  });
});
