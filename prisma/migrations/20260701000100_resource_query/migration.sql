-- Queries over the shared context (API.md, "Shared context, M6", Queries):
-- the indexes that let a page of one conversation be read in order and
-- stop, under each sort, and let a SQL/JSON path equality filter find its
-- rows without reading the others (src/db/resource-query.ts).

-- The TTL column (migration 20260701000000_resource_ttl adds it too; listings
-- leave expired rows out). IF NOT EXISTS: whichever of the two runs second
-- changes nothing.
ALTER TABLE "resources" ADD COLUMN IF NOT EXISTS "expires_at" TIMESTAMPTZ(3);

-- Pages are ordered bytewise (COLLATE "C", whatever the database's default
-- collation), which the primary key's index (default collation) cannot
-- give in order: without these, every page sorted the whole conversation.
-- The name breaks ties of the time keys, so a cursor names one exact place.
CREATE INDEX "resources_conversation_id_name_c_idx"
  ON "resources" ("conversation_id", "name" COLLATE "C");
CREATE INDEX "resources_conversation_id_updated_at_name_idx"
  ON "resources" ("conversation_id", "updated_at", "name" COLLATE "C");
CREATE INDEX "resources_conversation_id_created_at_name_idx"
  ON "resources" ("conversation_id", "created_at", "name" COLLATE "C");

-- Filters: a GIN index over the data's paths and values (jsonb_path_ops
-- serves `@@` with equality predicates joined by && and ||), so an equality
-- filter finds its rows without reading the others.
CREATE INDEX "resources_data_idx" ON "resources" USING GIN ("data" jsonb_path_ops);
