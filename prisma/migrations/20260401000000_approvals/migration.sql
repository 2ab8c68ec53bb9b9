-- Approvals (API.md, Approvals): a request for exactly one refused call, and
-- the time limit of a level granted by a `conversation`-scoped approval.

-- A level granted until `expires_at`: past it the level is `revert_to` (null:
-- no explicit level, so the legacy or default one). negotiate's decision
-- honours the expiry at once; each replica's sweep then makes it so, with a
-- history row by `expiry`.
-- AlterTable
ALTER TABLE "tool_permissions" ADD COLUMN     "expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "revert_to" INTEGER;

-- CreateTable
CREATE TABLE "approvals" (
    "id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "args" JSONB NOT NULL,
    "args_digest" TEXT NOT NULL,
    "required_level" INTEGER NOT NULL,
    "current_level" INTEGER NOT NULL,
    "requested_by" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "decided_by" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "scope" TEXT,
    "reason" TEXT,
    "used_at" TIMESTAMPTZ(3),

    CONSTRAINT "approvals_pkey" PRIMARY KEY ("id"),
    -- Not in schema.prisma (Prisma has no check constraints or partial indexes).
    CONSTRAINT "approvals_kind_check" CHECK ("kind" IN ('call', 'upgrade')),
    CONSTRAINT "approvals_status_check" CHECK ("status" IN ('pending', 'approved', 'rejected', 'expired', 'used')),
    CONSTRAINT "approvals_scope_check" CHECK ("scope" IS NULL OR "scope" IN ('once', 'conversation')),
    CONSTRAINT "approvals_levels_check" CHECK ("required_level" BETWEEN 1 AND 3 AND "current_level" BETWEEN 1 AND 3)
);

-- CreateIndex
CREATE INDEX "approvals_conversation_id_created_at_idx" ON "approvals"("conversation_id", "created_at");

-- One pending request per call: concurrent refusals of the same call meet
-- here (INSERT … ON CONFLICT), so an identical request is reused, never doubled.
CREATE UNIQUE INDEX "approvals_pending_call_key" ON "approvals"("conversation_id", "kind", "tool", "action", "args_digest")
    WHERE "status" = 'pending';

-- What the sweep looks for: pending (and approved `once`) requests past their expiry, grants past theirs.
CREATE INDEX "approvals_open_expires_at_idx" ON "approvals"("expires_at") WHERE "status" IN ('pending', 'approved');
CREATE INDEX "tool_permissions_expires_at_idx" ON "tool_permissions"("expires_at") WHERE "expires_at" IS NOT NULL;

-- AddForeignKey
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
