-- Resource TTL (API.md, "Shared context, M6", TTL): a write with ttlSeconds
-- sets "expires_at" (the database's clock: now() + ttl, so every replica
-- agrees); from that instant the resource reads as missing (every statement
-- of src/db/resource-store.ts says so in its WHERE clause), and the sweeper
-- (src/core/resource-expiry.ts) deletes it within 60 s.

-- AlterTable
ALTER TABLE "resources" ADD COLUMN "expires_at" TIMESTAMPTZ(3);

-- CreateIndex
-- The sweeper's scan: only the rows that expire at all, oldest expiry first.
CREATE INDEX "resources_expires_at_idx" ON "resources"("expires_at") WHERE "expires_at" IS NOT NULL;

-- Resource events (as in 20260407000000_events), told apart by expiry:
-- - a row deleted once it had expired is `resource.expired` (only the sweeper
--   deletes such a row: every other statement treats it as missing);
-- - a create over an expired row not yet swept replaces it in one statement
--   (ON CONFLICT DO UPDATE): `resource.expired` for the old row, then
--   `resource.created` for the new one, as if the sweeper had come first.
-- Subjects carry "expires_at" when the row has one.
CREATE FUNCTION events_resource_subject(r resources) RETURNS jsonb
LANGUAGE sql STABLE AS $fn$
  SELECT jsonb_build_object(
    'name', r.name, 'created_by', r.created_by, 'updated_by', r.updated_by,
    'created_at', r.created_at, 'updated_at', r.updated_at, 'version', r.version)
    || CASE WHEN r.expires_at IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('expires_at', r.expires_at) END
$fn$;

CREATE OR REPLACE FUNCTION events_on_resource() RETURNS trigger
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
    kind := CASE WHEN OLD.expires_at <= now() THEN 'resource.expired' ELSE 'resource.deleted' END;
  ELSIF TG_OP = 'UPDATE' AND OLD.expires_at <= now() THEN
    INSERT INTO event_pending (conversation_id, type, subject)
    VALUES (OLD.conversation_id, 'resource.expired', events_resource_subject(OLD));
    r := NEW;
    kind := 'resource.created';
  ELSE
    r := NEW;
    kind := CASE TG_OP WHEN 'INSERT' THEN 'resource.created' ELSE 'resource.updated' END;
  END IF;
  INSERT INTO event_pending (conversation_id, type, subject) VALUES (r.conversation_id, kind, events_resource_subject(r));
  RETURN NULL;
END
$fn$;

-- The audit entry of each expiry (API.md: actor `expiry`), written by the
-- database in the transaction that removes the expired row, whichever it is:
-- the sweeper's DELETE, or a create taking the name over. It lands in
-- "audit_pending" like any entry, and the sealer (migration 20260405000000)
-- chains it. The resource's name is its `action`; `expiry` its request id.
CREATE FUNCTION audit_on_resource_expiry() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF OLD.expires_at IS NULL OR OLD.expires_at > now() THEN
    RETURN NULL;
  END IF;
  -- A conversation's deletion takes its resources along: no entry of their own.
  IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = OLD.conversation_id) THEN
    RETURN NULL;
  END IF;
  INSERT INTO audit_pending (at, conversation_id, actor, event, action, outcome, request_id)
  VALUES (now(), OLD.conversation_id, 'expiry', 'resource.expired', OLD.name, 'success', 'expiry');
  RETURN NULL;
END
$fn$;

CREATE TRIGGER "resources_expiry_audit" AFTER UPDATE OR DELETE ON "resources"
  FOR EACH ROW EXECUTE FUNCTION audit_on_resource_expiry();
