/**
 * Canonical JSON and the digests built on it: the one home of "equal values
 * give equal text" for the audit hash chain (src/core/audit.ts), an approval's
 * args digest (src/core/approvals.ts) and an idempotent request's digest
 * (src/core/idempotency.ts).
 *
 * The text is what JSON.stringify writes, with object keys sorted
 * (recursively, by UTF-16 code unit) and no whitespace: members whose value is
 * undefined or a function are left out, array slots holding them are `null`.
 * The audit hash contract pins it byte for byte (test/unit/audit-hash.test.ts,
 * and the database sealer of migration 20260405000000 writes the same text).
 */
import { hash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const members = Object.keys(obj)
    .sort()
    .filter((k) => obj[k] !== undefined && typeof obj[k] !== 'function')
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`);
  return `{${members.join(',')}}`;
}

export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** SHA-256 hex of a call's args as canonical JSON (absent args are `{}`): what an approval covers and an audit entry keeps instead of the args. */
export function argsDigest(args: Record<string, unknown> | undefined): string {
  return sha256Hex(canonicalJson(args ?? {}));
}
