/**
 * The database's sealer (audit_seal, migration 20260405000000) chains
 * entries exactly as the contract's rule computed in the service: for
 * entries with hard text (quotes, backslashes, control characters, non-ASCII,
 * characters JSON may or may not escape) and with optional fields absent,
 * every sealed hash equals SHA-256 of prevHash + the canonical JSON of the
 * entry, computed here through canonicalJson, and the chain verifies.
 */
import pino from 'pino';
import { ChainVerifier, GENESIS_HASH } from '../../src/core/audit';
import type { AuditEntry, PendingEntry } from '../../src/core/ports';
import { canonicalJson, sha256Hex } from '../../src/core/canonical-json';
import { SqlAuditStore } from '../../src/db/audit-store';
import { type Database, openDatabase } from '../../src/db/database';
import { type TestDatabase, createMigratedDatabase } from '../support/db-server';
import { uniqueId } from '../support/ids';

let database: TestDatabase;
let db: Database;
let store: SqlAuditStore;

beforeAll(async () => {
  database = await createMigratedDatabase();
  db = openDatabase({ client: database.client, poolSize: 4, sharedSession: database.embedded });
  // Long intervals: this test seals by hand.
  store = new SqlAuditStore(db.pool, pino({ level: 'silent' }), { flushMs: 60_000, flushMax: 10_000, sealMs: 60_000 });
});

afterAll(async () => {
  await store?.close();
  await db?.close();
  await database?.close();
});

const HARD = [
  'plain',
  'quote " and backslash \\ and slash /',
  'controls \u0000'.replace('\u0000', '') + '\u0001\u0007\b\t\n\u000b\f\r\u001b\u001f end',
  'non-ASCII é ü 日本 😀 and \u2028 \u2029 and DEL \u007f',
  "</script><!-- & ' `",
  '',
];

function entries(conversations: string[]): PendingEntry[] {
  const out: PendingEntry[] = [];
  HARD.forEach((text, i) => {
    for (const conversationId of conversations) {
      out.push({
        conversationId,
        actor: `user:${text}`,
        requestId: text || 'r',
        event: i % 2 === 0 ? 'negotiate' : 'approval.requested',
        outcome: i % 3 === 0 ? 'success' : text || 'x',
        at: 1795351532824 + i,
        // Optional fields present on some, absent on others.
        ...(i % 2 === 0 ? { tool: text, action: `${text}!` } : {}),
        ...(i % 3 === 1 ? { status: 400 + i } : {}),
        ...(i % 4 !== 3 ? { argsDigest: sha256Hex(text) } : {}),
        ...(i === 2 ? { approvalId: `apr_${text}` } : {}),
      });
    }
  });
  return out;
}

/** The contract's rule, independently of the sealer's fixed key order. */
function byTheRule(e: AuditEntry): string {
  const { hash: _hash, ...unsealed } = e;
  return sha256Hex(e.prevHash + canonicalJson(unsealed));
}

it('seals hard text with the hashes the contract rule gives, chained per conversation', async () => {
  const conversations = [uniqueId('seal-a'), uniqueId('seal-b')];
  // Interleaved across the two chains, one at a time (so pending ids follow this order).
  for (const e of entries(conversations)) await store.insert(e);
  await store.seal();
  for (const conversationId of conversations) {
    const sealed = await store.page(conversationId, 0, 1000);
    expect(sealed).toHaveLength(HARD.length);
    expect(sealed[0]!.prevHash).toBe(GENESIS_HASH);
    for (let i = 0; i < sealed.length; i++) {
      const e = sealed[i]!;
      expect(e.hash).toBe(byTheRule(e));
      if (i > 0) {
        expect(e.prevHash).toBe(sealed[i - 1]!.hash);
        expect(e.seq).toBeGreaterThan(sealed[i - 1]!.seq);
      }
      // The text came back as it went in.
      expect(e.actor).toBe(`user:${HARD[i]}`);
    }
    const verifier = new ChainVerifier();
    expect(verifier.add(sealed)).toBe(true);
    expect(verifier.result(await store.head(conversationId))).toMatchObject({ ok: true, entries: HARD.length });
  }
  // A second batch continues each chain from its head.
  const [first] = conversations;
  await store.insert({ ...entries([first!])[0]!, requestId: 'later' });
  await store.seal();
  const chain = await store.page(first!, 0, 1000);
  expect(chain).toHaveLength(HARD.length + 1);
  expect(chain[HARD.length]!.prevHash).toBe(chain[HARD.length - 1]!.hash);
  expect(chain[HARD.length]!.hash).toBe(byTheRule(chain[HARD.length]!));
});
