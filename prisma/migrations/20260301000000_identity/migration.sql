-- Identity and access (API.md): conversation owners and API keys.
--
-- Conversations from before this migration (created anonymously, or migrated
-- from M4) get no owner: only admins reach them.

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN     "owner" TEXT;

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "conversation_id" TEXT,
    "max_level" INTEGER,
    "label" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id"),
    -- Not in schema.prisma (Prisma has no check constraints): the rules the
    -- service relies on, kept by the database too.
    CONSTRAINT "api_keys_role_check" CHECK ("role" IN ('admin', 'user', 'agent')),
    CONSTRAINT "api_keys_agent_conversation_check" CHECK (("role" = 'agent') = ("conversation_id" IS NOT NULL)),
    CONSTRAINT "api_keys_max_level_check" CHECK ("max_level" IS NULL OR ("role" = 'agent' AND "max_level" BETWEEN 1 AND 3))
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_token_hash_key" ON "api_keys"("token_hash");

-- CreateIndex
CREATE INDEX "api_keys_conversation_id_idx" ON "api_keys"("conversation_id");

-- CreateIndex
CREATE INDEX "api_keys_revoked_at_idx" ON "api_keys"("revoked_at");

-- CreateIndex
CREATE INDEX "conversations_owner_id_idx" ON "conversations"("owner", "id");
