/**
 * How long an MCP `tools/call` needing approval is held (API.md, "Held
 * calls"): the request's `Prefer: wait=N` (clamped to
 * APPROVAL_MAX_WAIT_SECONDS), else MCP_APPROVAL_WAIT_SECONDS. A host that
 * cannot retry with `_meta.approvalId` then gets its result once the owner
 * approves. Undefined: no hold (the default, 0, answers at once as before).
 */
import type { Request, Response } from 'express';
import type { HoldRequest } from '../core/held-calls';
import { grantedWait } from '../http/prefer';
import type { Services } from '../services';

export function mcpHold(services: Services, req: Request, res: Response): HoldRequest | undefined {
  const { approvalMaxWaitSeconds, mcpApprovalWaitSeconds } = services.config;
  const prefer = req.headers.prefer;
  const seconds =
    (prefer === undefined ? undefined : grantedWait(prefer, approvalMaxWaitSeconds)) ?? mcpApprovalWaitSeconds;
  if (seconds <= 0) return undefined;
  // The client gone (its connection closed before the answer): the hold ends, its waiter with it.
  const gone = new AbortController();
  const onClose = (): void => {
    if (!res.writableEnded) gone.abort();
  };
  res.once('close', onClose);
  return { seconds, signal: gone.signal };
}
