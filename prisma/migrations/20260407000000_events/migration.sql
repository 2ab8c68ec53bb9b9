-- Events (API.md, Approvals inbox, events and webhooks): every approval
-- request and decision, permission change and resource change, as a stream
-- with global ids that any replica can resume from.
--
-- Triggers record each change into "event_pending" inside the transaction
-- that makes it: no statement of the service's own, so negotiate's hot path
-- keeps its round trips (a write pays one row more, in the same message).
-- One sealer at a time (any replica's poller, under an advisory lock) moves
-- committed pending rows into "events", numbered from "events_seq" in seal
-- order: since sealers run one after the other and each numbers only rows
-- committed before it, a reader that has seen id N never later sees a
-- smaller one appear. The conversation's owner is read at sealing, off the
-- hot path ("known" is false when the conversation was gone by then: only
-- admins see such an event).
--
-- Approvals notify the channel "gateway_events" (one notification per
-- approval change), so every replica fetches them at once; the sealer
-- notifies after each batch it sealed. Everything else is found by the
-- replicas' poll (src/db/event-log.ts).

-- CreateTable
CREATE TABLE "event_pending" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "conversation_id" TEXT,
    "type" TEXT NOT NULL,
    "subject" JSONB NOT NULL,

    CONSTRAINT "event_pending_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "id" BIGINT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "conversation_id" TEXT,
    "owner" TEXT,
    "known" BOOLEAN NOT NULL,
    "type" TEXT NOT NULL,
    "subject" JSONB NOT NULL,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event_horizon" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "purged_through" BIGINT NOT NULL,

    CONSTRAINT "event_horizon_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "events_conversation_id_id_idx" ON "events"("conversation_id", "id");
CREATE INDEX "events_owner_id_idx" ON "events"("owner", "id");
CREATE INDEX "events_at_idx" ON "events"("at");
-- The inbox across conversations, newest first (GET /approvals).
CREATE INDEX "approvals_created_at_id_idx" ON "approvals"("created_at", "id");

-- Not in schema.prisma (Prisma has no free-standing sequences, functions or triggers).
CREATE SEQUENCE "events_seq" AS BIGINT;
INSERT INTO "event_horizon" ("id", "purged_through") VALUES (1, 0);
ALTER TABLE "event_horizon" ADD CONSTRAINT "event_horizon_single_row" CHECK ("id" = 1);

-- Resources: the row without its data (the subject of a resource event).
CREATE FUNCTION events_on_resource() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  r resources;
  kind text;
BEGIN
  IF TG_OP = 'DELETE' THEN
    -- A conversation's deletion takes its resources along (the foreign key's
    -- cascade): that is no resource event of its own.
    IF NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = OLD.conversation_id) THEN
      RETURN NULL;
    END IF;
    r := OLD;
    kind := 'resource.deleted';
  ELSE
    r := NEW;
    kind := CASE TG_OP WHEN 'INSERT' THEN 'resource.created' ELSE 'resource.updated' END;
  END IF;
  INSERT INTO event_pending (conversation_id, type, subject)
  VALUES (r.conversation_id, kind, jsonb_build_object(
    'name', r.name, 'created_by', r.created_by, 'updated_by', r.updated_by,
    'created_at', r.created_at, 'updated_at', r.updated_at, 'version', r.version));
  RETURN NULL;
END
$fn$;

CREATE TRIGGER "resources_events" AFTER INSERT OR UPDATE OR DELETE ON "resources"
  FOR EACH ROW EXECUTE FUNCTION events_on_resource();

-- Approvals: a new request, and each change of status but `used` (the retry
-- that consumed a `once` approval is the call's own business).
CREATE FUNCTION events_on_approval() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  kind text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    kind := 'approval.requested';
  ELSIF NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NULL;
  ELSIF NEW.status = 'expired' THEN
    kind := 'approval.expired';
  ELSIF NEW.status IN ('approved', 'rejected', 'satisfied') THEN
    kind := 'approval.decided';
  ELSE
    RETURN NULL;
  END IF;
  INSERT INTO event_pending (conversation_id, type, subject) VALUES (NEW.conversation_id, kind, to_jsonb(NEW));
  PERFORM pg_notify('gateway_events', 'pending');
  RETURN NULL;
END
$fn$;

CREATE TRIGGER "approvals_events" AFTER INSERT OR UPDATE OF "status" ON "approvals"
  FOR EACH ROW EXECUTE FUNCTION events_on_approval();

-- Permission changes: each history row, whatever its cause.
CREATE FUNCTION events_on_permission() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO event_pending (conversation_id, type, subject)
  VALUES (NEW.conversation_id, 'permission.changed', jsonb_build_object(
    'tool', NEW.tool, 'from_level', NEW.from_level, 'to_level', NEW.to_level, 'at', NEW.at, 'actor', NEW.actor));
  RETURN NULL;
END
$fn$;

CREATE TRIGGER "permission_history_events" AFTER INSERT ON "permission_history"
  FOR EACH ROW EXECUTE FUNCTION events_on_permission();

-- Moves up to max_rows committed pending rows into "events", numbered in
-- pending-id order; the caller holds the sealing lock. Returns how many.
CREATE FUNCTION events_seal(max_rows integer) RETURNS integer
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
  INSERT INTO events (id, at, conversation_id, owner, known, type, subject)
  SELECT seqs[r.rn], p.at, p.conversation_id, c.owner, p.conversation_id IS NULL OR c.id IS NOT NULL, p.type, p.subject
    FROM unnest(ids) WITH ORDINALITY AS r(id, rn)
    JOIN event_pending p ON p.id = r.id
    -- A conversation created after the event is another one of the same id (deleted and created again).
    LEFT JOIN conversations c ON c.id = p.conversation_id AND c.created_at <= p.at;
  DELETE FROM event_pending WHERE id = ANY (ids);
  PERFORM pg_notify('gateway_events', 'sealed');
  RETURN cardinality(ids);
END
$fn$;

-- One poll of a replica, one round trip: seals what is pending when no other
-- replica is sealing, then returns the events after after_id.
CREATE FUNCTION events_poll(after_id bigint, max_rows integer)
RETURNS TABLE (id bigint, at timestamptz, conversation_id text, owner text, known boolean, type text, subject jsonb)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  IF EXISTS (SELECT 1 FROM event_pending) AND pg_try_advisory_xact_lock(1702261875) THEN -- 'evts'
    PERFORM events_seal(2000);
  END IF;
  RETURN QUERY
    SELECT e.id, e.at, e.conversation_id, e.owner, e.known, e.type, e.subject
      FROM events e WHERE e.id > after_id ORDER BY e.id LIMIT max_rows;
END
$fn$;

-- Forgets events older than `keep` (one replica at a time); the horizon says
-- up to which id a resuming client may have missed some.
CREATE FUNCTION events_purge(keep interval) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  last_id bigint;
  n integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1702261872) THEN -- 'evtp'
    RETURN 0;
  END IF;
  SELECT max(e.id) INTO last_id FROM events e WHERE e.at < now() - keep;
  IF last_id IS NULL THEN
    RETURN 0;
  END IF;
  DELETE FROM events WHERE id <= last_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE event_horizon SET purged_through = greatest(purged_through, last_id) WHERE id = 1;
  RETURN n;
END
$fn$;
