/**
 * POST /conversations/{id}/transactions (API.md, "Shared context, M6"): a
 * client's operations on the shared context, all committed together in one
 * database transaction with their audit entry, or none. Who may: whoever may
 * write resources over REST (`manage`; a user's conversation is created on
 * first use, as with PUT). The resources are written by `client`.
 */
import type { ConversationAccess } from './access';
import { type AuditService } from './audit';
import { argsDigest } from './canonical-json';
import { openOnFirstUse } from './conversations';
import { TransactionAbortedError } from './errors';
import { inOwnTransaction } from './in-transaction';
import type { ConversationStore, UnitsOfWork } from './ports';
import { type Principal, actorOf } from './principal';
import { applyOperations, checkOperations } from './resource-batch';
import type { ResourceService } from './resource-service';
import type { Resource } from './tool-interface';
import type { CheckedOperation } from './transaction-operations';

/**
 * Runs of one transaction aborted by a deadlock (creates of the same new names
 * in opposite orders; existing rows are locked in one order) before the
 * abort is answered.
 */
const MAX_ATTEMPTS = 5;

export interface TransactionServiceDeps {
  resources: ResourceService;
  conversations: ConversationStore;
  units: UnitsOfWork;
  access: ConversationAccess;
  audit: AuditService;
}

export interface ClientTransaction {
  conversationId: string;
  /** As the body has them: checked here (checkOperations). */
  operations: unknown;
  /** The request's X-Request-Id, for the audit entry. */
  requestId: string;
}

export class TransactionService {
  constructor(private readonly deps: TransactionServiceDeps) {}

  /**
   * The results, one per operation (null for a delete). A failing operation
   * throws a ToolError whose `index` names it (the transport's problem has
   * `errors: [{ path: "/operations/K" }]`); nothing is written then.
   */
  async applyAs(p: Principal, t: ClientTransaction): Promise<(Resource | null)[]> {
    const { conversationId, requestId } = t;
    const what = 'write resources over REST';
    await openOnFirstUse(this.deps, p, { conversationId, right: 'manage', what, requestId });
    const operations = checkOperations(t.operations);
    // As PUT: an admin's write creates the conversation on first use too.
    await this.deps.conversations.ensure(conversationId, p.subject);
    // What this replica queued before (a refusal just answered) is written first: never sealed after this.
    await this.deps.audit.flushQueued();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(p, { conversationId, requestId, operations });
      } catch (err) {
        // Postgres broke a deadlock by aborting this run: nothing of it committed, so it runs again.
        if (!(err instanceof TransactionAbortedError) || attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }

  /** One run: the operations and the audit entry (ops, names, versions; never data) in one transaction. */
  private once(
    p: Principal,
    t: Omit<ClientTransaction, 'operations'> & { operations: CheckedOperation[] },
  ): Promise<(Resource | null)[]> {
    const { resources, audit } = this.deps;
    const batch = { conversationId: t.conversationId, by: 'client', operations: t.operations };
    return inOwnTransaction(this.deps.units, async (tx) => {
      const applied = await applyOperations({ store: resources.store, encode: (d) => resources.encode(d) }, batch, tx);
      const fields = {
        conversationId: t.conversationId,
        actor: actorOf(p),
        requestId: t.requestId,
        action: applied.trail,
        outcome: 'success',
        status: 200,
        argsDigest: argsDigest({ operations: t.operations }),
      };
      await audit.record('resources.transaction', fields, tx);
      return applied.results;
    });
  }
}
