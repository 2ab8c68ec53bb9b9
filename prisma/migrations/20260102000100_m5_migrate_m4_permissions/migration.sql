-- M4 -> M5 data migration.
--
-- M4 kept one document per conversation in "state":
--   {"currentLevel": N, "identity": {"toolName": "T"}}
-- For each conversation:
--   * legacy_level = currentLevel when it is an integer 1..3, else NULL;
--   * when identity.toolName is a string and the level is valid, that tool
--     gets an explicit permission at that level (upgraded_at = the row's
--     updated_at) and a history row with actor 'm4-migration';
--   * "state" stays in place (M5 keeps currentLevel for fallback).
-- Junk state ({}, "high", identity: 7, arrays, fractions) migrates without
-- error and without a level: every access below is type-checked first.

UPDATE "conversations"
SET "legacy_level" = CASE
  WHEN jsonb_typeof("state") = 'object'
   AND jsonb_typeof("state" -> 'currentLevel') = 'number'
   AND ("state" ->> 'currentLevel')::numeric IN (1, 2, 3)
  THEN ("state" ->> 'currentLevel')::numeric::integer
  ELSE NULL
END;

CREATE TEMPORARY TABLE "m4_tool_levels" ON COMMIT DROP AS
SELECT "id" AS "conversation_id",
       "state" -> 'identity' ->> 'toolName' AS "tool",
       "legacy_level" AS "level",
       "updated_at"
FROM "conversations"
WHERE "legacy_level" IS NOT NULL
  AND jsonb_typeof("state" -> 'identity') = 'object'
  AND jsonb_typeof("state" -> 'identity' -> 'toolName') = 'string'
  AND length("state" -> 'identity' ->> 'toolName') > 0;

INSERT INTO "tool_permissions" ("conversation_id", "tool", "level", "upgraded_at")
SELECT "conversation_id", "tool", "level", "updated_at" FROM "m4_tool_levels"
ON CONFLICT ("conversation_id", "tool") DO NOTHING;

INSERT INTO "permission_history" ("conversation_id", "tool", "from_level", "to_level", "actor", "at")
SELECT "conversation_id", "tool", NULL, "level", 'm4-migration', "updated_at" FROM "m4_tool_levels"
ORDER BY "conversation_id";

DROP TABLE "m4_tool_levels";
