-- Webhooks (API.md, "Approvals inbox, events and webhooks"): a durable
-- outbox derived from "events". A dispatcher (src/core/webhook-outbox.ts)
-- locks each enabled hook (FOR UPDATE SKIP LOCKED: one replica at a time per
-- hook), turns the events past its cursor that its owner may see and that it
-- asked for into "webhook_deliveries" rows and moves the cursor, in one
-- transaction: a crash loses none and makes none twice. Deliveries are then
-- claimed with FOR UPDATE SKIP LOCKED and leased by moving next_attempt_at
-- past the request's timeout, so one replica sends each; a replica killed
-- mid-send leaves a lease that lapses and another attempt is made.

-- CreateTable
CREATE TABLE "webhooks" (
    "id" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "owner_role" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT[],
    "conversation_id" TEXT,
    "secret" TEXT NOT NULL,
    "cursor" BIGINT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "failing_since" TIMESTAMPTZ(3),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "webhook_id" TEXT NOT NULL,
    "event_id" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("webhook_id","event_id")
);

-- CreateTable
CREATE TABLE "webhook_attempts" (
    "id" BIGSERIAL NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event_id" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "response_status" INTEGER,
    "error" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "webhooks_owner_idx" ON "webhooks"("owner");

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_attempts_webhook_id_id_idx" ON "webhook_attempts"("webhook_id", "id");

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
