-- Participants (API.md, "Participants (remote tools)"): MCP servers and
-- OpenAPI services registered by an admin, each one tool of the registry.
--
-- Secret values (headers, env, per-owner credential headers) are stored only
-- sealed (AES-256-GCM, src/participants/secrets.ts): `secrets` and
-- `headers` hold the sealed text; `secret_names` lists the names, which are
-- not secret and are what responses show. `config` holds the rest of the
-- transport's settings (url; command, args, cwd; spec, specUrl, baseUrl).
-- `version` grows with every change a replica must pick up (another replica
-- reloads a participant whose version it has not seen).

-- CreateTable
CREATE TABLE "participants" (
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "transport" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "secrets" TEXT,
    "secret_names" JSONB NOT NULL DEFAULT '[]',
    "levels" JSONB NOT NULL DEFAULT '{}',
    "include" JSONB,
    "exclude" JSONB,
    "timeout_ms" INTEGER,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "status" TEXT NOT NULL DEFAULT 'connecting',
    "last_error" TEXT,
    "protocol_version" TEXT,
    "server_info" JSONB,
    "refreshed_at" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "participants_pkey" PRIMARY KEY ("name"),
    -- Not in schema.prisma (Prisma has no check constraints).
    CONSTRAINT "participants_transport_check" CHECK ("transport" IN ('mcp-http', 'mcp-stdio', 'openapi')),
    CONSTRAINT "participants_status_check" CHECK ("status" IN ('connecting', 'ready', 'failing', 'disabled'))
);

-- CreateTable
CREATE TABLE "participant_actions" (
    "participant" TEXT NOT NULL,
    "upstream_name" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "level" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "pinned_definition" JSONB,
    "pinned_digest" TEXT,
    "pending_definition" JSONB,
    "pending_digest" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "participant_actions_pkey" PRIMARY KEY ("participant", "upstream_name"),
    CONSTRAINT "participant_actions_status_check" CHECK ("status" IN ('active', 'quarantined')),
    CONSTRAINT "participant_actions_level_check" CHECK ("level" BETWEEN 1 AND 3)
);

-- CreateTable
CREATE TABLE "participant_credentials" (
    "participant" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "headers" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "participant_credentials_pkey" PRIMARY KEY ("participant", "owner")
);

-- CreateTable
CREATE TABLE "service_settings" (
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "service_settings_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "participant_actions_participant_action_key" ON "participant_actions"("participant", "action");

-- AddForeignKey
ALTER TABLE "participant_actions" ADD CONSTRAINT "participant_actions_participant_fkey" FOREIGN KEY ("participant") REFERENCES "participants"("name") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "participant_credentials" ADD CONSTRAINT "participant_credentials_participant_fkey" FOREIGN KEY ("participant") REFERENCES "participants"("name") ON DELETE CASCADE ON UPDATE CASCADE;
