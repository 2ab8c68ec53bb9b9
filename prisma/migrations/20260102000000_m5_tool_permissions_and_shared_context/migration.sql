-- M5: per-tool permissions, their append-only history, and the shared context
-- (resources), all scoped to a conversation and deleted with it.
-- Generated from schema.prisma by the schema engine, plus the CHECK
-- constraints and the append-only trigger, which Prisma cannot express.

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN     "legacy_level" INTEGER,
ADD COLUMN     "metadata" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "policy" JSONB NOT NULL DEFAULT '{"deny": []}';

-- CreateTable
CREATE TABLE "tool_permissions" (
    "conversation_id" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "level" INTEGER NOT NULL,
    "upgraded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tool_permissions_pkey" PRIMARY KEY ("conversation_id","tool")
);

-- CreateTable
CREATE TABLE "permission_history" (
    "id" BIGSERIAL NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "from_level" INTEGER,
    "to_level" INTEGER NOT NULL,
    "actor" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "permission_history_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "resources" (
    "conversation_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "created_by" TEXT NOT NULL,
    "updated_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "version" INTEGER NOT NULL DEFAULT 1,

    CONSTRAINT "resources_pkey" PRIMARY KEY ("conversation_id","name")
);

-- CreateIndex
CREATE INDEX "permission_history_conversation_id_id_idx" ON "permission_history"("conversation_id", "id");

-- CreateIndex
CREATE INDEX "resources_conversation_id_created_by_name_idx" ON "resources"("conversation_id", "created_by", "name");

-- AddForeignKey
ALTER TABLE "tool_permissions" ADD CONSTRAINT "tool_permissions_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "permission_history" ADD CONSTRAINT "permission_history_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "resources" ADD CONSTRAINT "resources_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Levels are 1 (read), 2 (write), 3 (execute).
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_legacy_level_check" CHECK ("legacy_level" BETWEEN 1 AND 3);
ALTER TABLE "tool_permissions" ADD CONSTRAINT "tool_permissions_level_check" CHECK ("level" BETWEEN 1 AND 3);
ALTER TABLE "permission_history" ADD CONSTRAINT "permission_history_to_level_check" CHECK ("to_level" BETWEEN 1 AND 3);
ALTER TABLE "resources" ADD CONSTRAINT "resources_version_check" CHECK ("version" >= 1);

-- The permission history is append-only: no update ever, and no delete while
-- its conversation exists (deleting the conversation cascades to it).
CREATE FUNCTION "permission_history_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'permission_history is append-only';
  END IF;
  IF EXISTS (SELECT 1 FROM "conversations" WHERE "id" = OLD."conversation_id") THEN
    RAISE EXCEPTION 'permission_history rows are deleted only with their conversation';
  END IF;
  RETURN OLD;
END;
$$;

CREATE TRIGGER "permission_history_append_only"
BEFORE UPDATE OR DELETE ON "permission_history"
FOR EACH ROW EXECUTE FUNCTION "permission_history_append_only"();
