/**
 * The core's ports in memory, for fast unit tests of its decisions (no
 * database, no HTTP): each adapter does in memory the steps its SQL
 * counterpart in src/db does in its statements (the same conditions, the
 * same "expired when lapsed" reading of approvals, the same settling on a
 * level change). A transaction keeps an undo log (rolled back in reverse)
 * and the audit entries that go with its COMMIT; a single-statement unit
 * refuses a second statement and writes its ahead entry only when its one
 * write changed a row (test/support/memory/). Tests run one call at a time: row locks and races,
 * which the database decides, are the HTTP and db suites' subject, not this.
 */
import { ApprovalService } from '../../src/core/approvals';
import { AuditService } from '../../src/core/audit';
import { ConversationAccess } from '../../src/core/access';
import { ConversationManager } from '../../src/core/conversation-manager';
import { PermissionService } from '../../src/core/permissions';
import { ResourceService } from '../../src/core/resource-service';
import { ToolCatalog } from '../../src/core/tool-catalog';
import type { ToolLogger } from '../../src/core/tool-interface';
import { ToolRegistry } from '../../src/core/tool-registry';
import { negotiationStatus } from '../../src/http/negotiate-status';
import { MemoryApprovalStore } from './memory/approvals';
import { MemoryAuditStore } from './memory/audit';
import { MemoryConversationStore, MemoryDecisionStore } from './memory/conversations';
import { MemoryDb, MemoryUnitsOfWork } from './memory/db';
import { MemoryPermissionStore } from './memory/permissions';
import { MemoryResourceStore } from './memory/resources';

export { MemoryApprovalStore, MemoryAuditStore, MemoryConversationStore, MemoryDecisionStore, MemoryDb };
export { MemoryPermissionStore, MemoryResourceStore, MemoryUnitsOfWork };

export const silentLogger: ToolLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export interface MemoryCore {
  db: MemoryDb;
  units: MemoryUnitsOfWork;
  auditStore: MemoryAuditStore;
  manager: ConversationManager;
  approvals: ApprovalService;
  permissions: PermissionService;
  audit: AuditService;
  catalog: ToolCatalog;
  registry: ToolRegistry;
}

/**
 * The domain services as src/bootstrap.ts wires them, over the stores above
 * and the bundled tools (a registry given is loaded once and shared: the
 * caller closes it).
 */
export async function memoryCore(
  opts: { approvalTtlSeconds?: number; toolTimeoutMs?: number; registry?: ToolRegistry } = {},
): Promise<MemoryCore> {
  const db = new MemoryDb();
  const registry = opts.registry ?? new ToolRegistry({ hotReload: false, logger: silentLogger });
  await registry.load();
  const catalog = new ToolCatalog(registry, 0.8);
  const units = new MemoryUnitsOfWork(db);
  const conversations = new MemoryConversationStore(db);
  const resourceStore = new MemoryResourceStore(db);
  const permissionStore = new MemoryPermissionStore(db);
  const access = new ConversationAccess(conversations);
  const auditStore = new MemoryAuditStore(db);
  const audit = new AuditService(auditStore, access, negotiationStatus, () => db.now());
  const resources = new ResourceService(resourceStore, conversations, 1_000_000, { access, audit });
  const permissions = new PermissionService({
    store: permissionStore,
    units,
    access,
    tools: () => catalog.snapshot().set.tools.map((t) => t.name),
    audit,
  });
  const approvals = new ApprovalService(
    new MemoryApprovalStore(db),
    conversations,
    { ttlSeconds: opts.approvalTtlSeconds ?? 600, logger: silentLogger },
    { levels: permissions, units, audit },
  );
  const manager = new ConversationManager({
    approvals,
    decisions: new MemoryDecisionStore(db),
    levels: permissions,
    conversations,
    units,
    resources,
    catalog,
    logger: silentLogger,
    exportDir: '/nonexistent-export-dir',
    toolTimeoutMs: opts.toolTimeoutMs ?? 5000,
    audit,
  });
  return { db, units, auditStore, manager, approvals, permissions, audit, catalog, registry };
}
