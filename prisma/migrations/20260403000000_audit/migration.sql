-- Audit (API.md): a tamper-evident log of decisions and changes.
--
-- Entries are first written to "audit_pending" (by a write action's own
-- transaction, or in batches for read-only decisions and refusals); one
-- sealer at a time moves them to "audit_log", numbering them from
-- "audit_seq" in seal order and chaining them per conversation
-- (hash = SHA-256 of prev_hash + the entry's canonical JSON). "audit_heads"
-- keeps each chain's last entry, so removing the newest entries is detected.
-- No foreign key to "conversations": entries outlive their conversation.

-- CreateTable
CREATE TABLE "audit_pending" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "tool" TEXT,
    "action" TEXT,
    "outcome" TEXT NOT NULL,
    "status" INTEGER,
    "args_digest" TEXT,
    "approval_id" TEXT,
    "request_id" TEXT NOT NULL,

    CONSTRAINT "audit_pending_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_log" (
    "seq" BIGINT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "tool" TEXT,
    "action" TEXT,
    "outcome" TEXT NOT NULL,
    "status" INTEGER,
    "args_digest" TEXT,
    "approval_id" TEXT,
    "request_id" TEXT NOT NULL,
    "prev_hash" TEXT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "audit_heads" (
    "conversation_id" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_heads_pkey" PRIMARY KEY ("conversation_id")
);

-- CreateIndex
CREATE INDEX "audit_log_conversation_id_seq_idx" ON "audit_log"("conversation_id", "seq");

-- Not in schema.prisma (Prisma has no free-standing sequences): seq in seal order.
CREATE SEQUENCE "audit_seq" AS BIGINT;
