/**
 * API keys (API.md, Identity and access): minted here, shown once, stored as
 * the SHA-256 of the token (a token is 256 random bits, so a fast hash is
 * the right one: nothing to guess, and the lookup stays one index probe).
 * Who may mint, list and revoke which keys is decided here.
 */
import { hash, randomBytes } from 'node:crypto';
import { ConversationAccess } from './access';
import { type AuditService, SYSTEM_CHAIN } from './audit';
import { AppError, conversationNotFound } from './errors';
import type { KeyStore, StoredKey } from './ports';
import { type Principal, actorOf, forbidden } from './principal';
import type { Level } from './tool-interface';

/** Every token this service mints starts so (secret scanners can recognise it); the rest is 43 base64url characters. */
export const TOKEN_PREFIX = 'tgw_';
export const TOKEN_RE = /^tgw_[A-Za-z0-9_-]{43}$/;

export function newToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

export function newKeyId(): string {
  return 'key_' + randomBytes(12).toString('base64url');
}

/** The subject of ADMIN_API_KEY's principal and of the first admin key (DATA_DIR/admin.key). */
export const BUILT_IN_ADMIN_SUBJECT = 'admin';

/** A subject: what `owner` and the permission history name (`user:SUBJECT`). */
export const SUBJECT_RE = /^[\x21-\x7e]{1,256}$/;
export const SUBJECT_RULE = 'must be 1 to 256 visible ASCII characters';

/** The key as the API shows it: never the token or its hash. */
export type KeyView = StoredKey;

/** A key just minted: the only time its token is shown. */
export type CreatedKey = KeyView & { token: string };

export interface KeyInput {
  label?: string;
  /** Epoch milliseconds, in the future. */
  expiresAt?: number;
}

const LIST_LIMIT = 1000;

/** 9999-12-31T23:59:59.999Z: the last instant a timestamp column (and an ISO date) can hold. */
export const MAX_EXPIRES_AT = 253402300799999;

function checkExpiry(expiresAt: number | undefined, now: number): number | null {
  if (expiresAt === undefined) return null;
  const problem = !Number.isSafeInteger(expiresAt)
    ? 'must be an integer (epoch milliseconds)'
    : expiresAt <= now
      ? 'must be in the future'
      : expiresAt > MAX_EXPIRES_AT
        ? `must be at most ${MAX_EXPIRES_AT} (9999-12-31)`
        : undefined;
  if (problem)
    throw new AppError('validation_failed', `expiresAt: ${problem}`, [{ path: 'expiresAt', message: problem }]);
  return expiresAt;
}

export class KeyService {
  constructor(
    private readonly keys: KeyStore,
    private readonly access: ConversationAccess,
    /** Each key's creation and revocation is audited (`key.created`, `key.revoked`); without it, not. */
    private readonly audit?: AuditService,
    private readonly now: () => number = Date.now,
  ) {}

  /** `POST /keys`: an admin mints an admin or user key. */
  async mint(
    p: Principal,
    input: KeyInput & { role: 'admin' | 'user'; subject: string },
    requestId = '-',
  ): Promise<CreatedKey> {
    if (p.role !== 'admin') throw forbidden(p, 'mint keys (only admins may)');
    if (!SUBJECT_RE.test(input.subject)) {
      throw new AppError('validation_failed', `subject: ${SUBJECT_RULE}`, [{ path: 'subject', message: SUBJECT_RULE }]);
    }
    if (input.role !== 'admin' && input.subject === BUILT_IN_ADMIN_SUBJECT) {
      // A user named like the built-in admin would own what that admin created.
      const message = `subject "${BUILT_IN_ADMIN_SUBJECT}" is the built-in admin's; choose another for a user`;
      throw new AppError('validation_failed', `subject: ${message}`, [{ path: 'subject', message }]);
    }
    const key = await this.insert({
      role: input.role,
      subject: input.subject,
      conversationId: null,
      maxLevel: null,
      label: input.label ?? null,
      expiresAt: checkExpiry(input.expiresAt, this.now()),
      createdBy: actorOf(p),
    });
    // Admin and user keys belong to no conversation: their events are the system chain's.
    await this.audit?.changed(p, 'key.created', SYSTEM_CHAIN, requestId, { action: key.id });
    return key;
  }

  /** `POST /conversations/{id}/agent-keys`: its owner or an admin mints a key for an agent in it. */
  async mintAgent(
    p: Principal,
    conversationId: string,
    input: KeyInput & { maxLevel?: Level },
    requestId = '-',
  ): Promise<CreatedKey> {
    await this.access.check(p, conversationId, 'manage', 'mint agent keys');
    const owner = await this.access.ownerOf(conversationId);
    if (owner === undefined) throw conversationNotFound(conversationId);
    const key = await this.insert({
      role: 'agent',
      // An agent acts for the conversation's owner (an admin's subject for an ownerless one).
      subject: owner ?? p.subject,
      conversationId,
      maxLevel: input.maxLevel ?? null,
      label: input.label ?? null,
      expiresAt: checkExpiry(input.expiresAt, this.now()),
      createdBy: actorOf(p),
    });
    await this.audit?.changed(p, 'key.created', conversationId, requestId, { action: key.id });
    return key;
  }

  /** `GET /keys`: admins see every key; users the agent keys of their conversations. */
  async list(p: Principal): Promise<KeyView[]> {
    if (p.role === 'agent') throw forbidden(p, 'list keys');
    return this.keys.list({ ...(p.role === 'user' ? { conversationOwner: p.subject } : {}), limit: LIST_LIMIT });
  }

  /**
   * `DELETE /keys/{id}`: a key the caller may not manage is, to it, a key
   * that does not exist. Returns the token hash of the key it revoked now
   * (audited as `key.revoked`, in its conversation's chain or the system's).
   */
  async revoke(p: Principal, id: string, requestId = '-'): Promise<string | undefined> {
    if (p.role === 'agent') throw forbidden(p, 'revoke keys');
    const key = await this.keys.get(id);
    const manages =
      key !== undefined &&
      (p.role === 'admin' ||
        (key.role === 'agent' && key.conversationOwner !== null && key.conversationOwner === p.subject));
    if (!key || !manages) throw new AppError('not_found', `Key not found: ${id.slice(0, 64)}`);
    if (key.revokedAt !== null) return undefined; // revoking twice is still "refused from then on"
    const hash = await this.keys.revoke(id);
    if (hash !== undefined) {
      await this.audit?.changed(p, 'key.revoked', key.conversationId ?? SYSTEM_CHAIN, requestId, { action: id });
    }
    return hash;
  }

  private async insert(key: Omit<StoredKey, 'id' | 'createdAt' | 'revokedAt'>): Promise<CreatedKey> {
    const token = newToken();
    const stored = await this.keys.insert({ ...key, id: newKeyId(), tokenHash: hashToken(token) });
    return { ...stored, token };
  }
}
