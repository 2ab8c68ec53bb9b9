-- Approvals per principal, and settled requests (API.md, Approvals).
--
-- One pending request per principal for a call: an admin's refused call and
-- an agent's identical one are two requests, each readable by the one who
-- asked and each listed for the owner with its own requested_by. Concurrent
-- refusals of one principal's call still meet in one row (INSERT … ON
-- CONFLICT). requested_by comes before args_digest so that negotiate's
-- "does this principal wait on a request for this action?" (the decision
-- statement, src/db/decision-store.ts) reads a prefix of the index.
-- Not in schema.prisma (Prisma has no partial indexes or check constraints).
DROP INDEX "approvals_pending_call_key";
CREATE UNIQUE INDEX "approvals_pending_call_key"
    ON "approvals"("conversation_id", "kind", "tool", "action", "requested_by", "args_digest")
    WHERE "status" = 'pending';

-- `satisfied`: a pending request nobody needs to decide any more, because
-- the tool's level was raised to the one it asked for (by hand, by an
-- approval for the conversation, by an agent's approved upgrade), or the
-- same principal's identical call ran.
ALTER TABLE "approvals" DROP CONSTRAINT "approvals_status_check";
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_status_check"
    CHECK ("status" IN ('pending', 'approved', 'rejected', 'expired', 'used', 'satisfied'));
