/**
 * What the domain needs from storage and from outside, declared here (every
 * port in this folder) and implemented in src/db and src/observability. The
 * domain never sees a driver: a transaction is an opaque handle that only the
 * adapter that made it can use, and no port carries SQL.
 */
import type { NegotiateRequest, NegotiationResult } from '../negotiation';
import type { RemoteActionInfo } from '../remote-action';
import type { IdempotencyStore } from './idempotency';
import type { ConversationStore, DecisionStore, KeyStore, PermissionStore, ResourceStore } from './stores';
import type { UnitsOfWork } from './units';

export type * from './approvals';
export type * from './audit';
export type * from './events';
export type * from './idempotency';
export type * from './stores';
export type * from './units';
export type * from './subscriptions';
export type * from './webhooks';

/** Every port, as src/db implements them for one database. */
export interface Stores {
  /** Kept outcomes of negotiate calls with an Idempotency-Key. */
  idempotency: IdempotencyStore;
  resources: ResourceStore;
  decisions: DecisionStore;
  permissions: PermissionStore;
  conversations: ConversationStore;
  keys: KeyStore;
  units: UnitsOfWork;
}

/**
 * Watches each negotiation from outside the domain (src/observability:
 * metrics and traces). `observe` runs `call` once, returns or throws what it
 * does, and records how it ended; it must add no database work of its own.
 */
export interface NegotiationObserver {
  observe(
    conversationId: string,
    req: NegotiateRequest,
    call: () => Promise<NegotiationResult>,
  ): Promise<NegotiationResult>;
  /**
   * Inside `call`, when it calls a participant's upstream: the negotiation's
   * span records where (`server.address`, `mcp.method.name`). No secret in it.
   */
  upstream?(remote: RemoteActionInfo): void;
}
