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
-- serves `@@` with equality predicates joined by && and ||). Where the
-- btree_gin extension can be installed (PostgreSQL's contrib, trusted since
-- PostgreSQL 13, so a database owner may create it) the conversation id is a
-- key of the same index, so a filter reads only its own conversation's
-- matches; otherwise (the embedded PGlite database, which loads no
-- extension; a server without contrib) the index is over the data alone and
-- the conversation is checked on each match. The index's name is the same
-- either way.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin') THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS btree_gin;
    EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
      RAISE NOTICE 'btree_gin could not be installed (%); the data index leaves the conversation out', SQLERRM;
    END;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
    CREATE INDEX "resources_data_idx" ON "resources" USING GIN ("conversation_id", "data" jsonb_path_ops);
  ELSE
    CREATE INDEX "resources_data_idx" ON "resources" USING GIN ("data" jsonb_path_ops);
  END IF;
END
$$;
