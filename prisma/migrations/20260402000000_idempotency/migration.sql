-- Idempotency (API.md): the kept outcome of a negotiate call made with an
-- Idempotency-Key, per conversation, principal and key.
--
-- The row is inserted (the claim, status and body still null) inside the
-- action's transaction and completed before it commits, so a committed row
-- always holds an outcome, and an action whose transaction rolls back leaves
-- no row. Rows older than 24 hours are ignored on lookup and purged. The
-- body is \`json\`, not \`jsonb\`: a replay answers the kept text as it was,
-- key order included.

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "conversation_id" TEXT NOT NULL,
    "principal" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "request_digest" TEXT NOT NULL,
    "status" INTEGER,
    "body" JSON,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("conversation_id","principal","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
