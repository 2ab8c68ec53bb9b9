-- Subscriptions (API.md, "Shared context, M6"): tools' handlers for the
-- resource events of a conversation, run after commit from a durable outbox
-- derived from "events", as the webhooks' is (migration 20260601000000).
--
-- A fan-out (one replica at a time: the cursor row is locked FOR UPDATE SKIP
-- LOCKED) turns the resource events past the cursor into one delivery per
-- (event, subscribed tool whose level suffices then) and moves the cursor, in
-- one transaction. A delivery runs only when it is its conversation's first
-- pending one (commit order per conversation); it is claimed with FOR UPDATE
-- SKIP LOCKED and leased by moving next_attempt_at past the handler's
-- timeout, so one replica runs it; the handler's writes commit together
-- with the delivery's `done`, fenced on its attempt number, so a replica
-- whose lease lapsed (killed, or too slow) commits nothing.
--
-- Depth: a handler's transaction sets the transaction-local setting
-- gateway.event_depth to its delivery's depth + 1; each event row it raises
-- records it (the column default), so a chain of handlers is counted and cut
-- past 8.

-- AlterTable
ALTER TABLE "event_pending" ADD COLUMN "depth" INTEGER NOT NULL DEFAULT coalesce(nullif(current_setting('gateway.event_depth', true), '')::integer, 0);

-- AlterTable
ALTER TABLE "events" ADD COLUMN "depth" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "subscription_cursor" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "cursor" BIGINT NOT NULL,

    CONSTRAINT "subscription_cursor_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription_deliveries" (
    "event_id" BIGINT NOT NULL,
    "tool" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "subject" JSONB NOT NULL,
    "depth" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "settled_at" TIMESTAMPTZ(3),

    CONSTRAINT "subscription_deliveries_pkey" PRIMARY KEY ("event_id","tool")
);

-- CreateIndex
CREATE INDEX "subscription_deliveries_status_conversation_id_event_id_idx" ON "subscription_deliveries"("status", "conversation_id", "event_id");

-- CreateIndex
CREATE INDEX "subscription_deliveries_conversation_id_event_id_idx" ON "subscription_deliveries"("conversation_id", "event_id");

-- AddForeignKey
ALTER TABLE "subscription_deliveries" ADD CONSTRAINT "subscription_deliveries_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Not in schema.prisma: the single row, and the sealer that now carries each event's depth.
-- Subscriptions start with the events numbered after this migration.
INSERT INTO "subscription_cursor" ("id", "cursor")
  SELECT 1, greatest(coalesce((SELECT max(id) FROM events), 0), (SELECT purged_through FROM event_horizon WHERE id = 1));
ALTER TABLE "subscription_cursor" ADD CONSTRAINT "subscription_cursor_single_row" CHECK ("id" = 1);

CREATE OR REPLACE FUNCTION events_seal(max_rows integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  ids bigint[];
  seqs bigint[];
BEGIN
  SELECT array_agg(p.id ORDER BY p.id) INTO ids
    FROM (SELECT id FROM event_pending ORDER BY id LIMIT max_rows) p;
  IF ids IS NULL THEN
    RETURN 0;
  END IF;
  -- The n-th pending row gets the n-th number.
  SELECT array_agg(q.v ORDER BY q.v) INTO seqs
    FROM (SELECT nextval('events_seq') AS v FROM generate_series(1, cardinality(ids))) q;
  INSERT INTO events (id, at, conversation_id, owner, known, type, subject, depth)
  SELECT seqs[r.rn], p.at, p.conversation_id, c.owner, p.conversation_id IS NULL OR c.id IS NOT NULL, p.type, p.subject, p.depth
    FROM unnest(ids) WITH ORDINALITY AS r(id, rn)
    JOIN event_pending p ON p.id = r.id
    -- A conversation created after the event is another one of the same id (deleted and created again).
    LEFT JOIN conversations c ON c.id = p.conversation_id AND c.created_at <= p.at;
  DELETE FROM event_pending WHERE id = ANY (ids);
  PERFORM pg_notify('gateway_events', 'sealed');
  RETURN cardinality(ids);
END
$fn$;
