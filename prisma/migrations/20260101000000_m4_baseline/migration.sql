-- M4 baseline: the shape of a database written by M4. One document per
-- conversation, {"currentLevel": N, "identity": {"toolName": "T"}}.
CREATE TABLE "conversations" (
    "id" TEXT NOT NULL,
    "state" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "conversations_pkey" PRIMARY KEY ("id")
);
