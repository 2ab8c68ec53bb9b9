/**
 * The approvals inbox (API.md, `GET /approvals`): the approval requests of
 * every conversation the caller owns (admins: all), newest first, a page at
 * a time. Agents never decide approvals, so they have no inbox (403).
 */
import { AppError } from './errors';
import type { Approval, ApprovalInboxStore, ApprovalStatus } from './ports';
import { type Principal, forbidden } from './principal';
import { isValidId } from './resource-names';

export interface InboxPage {
  approvals: Approval[];
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

/** The cursor names the page's last approval (its time and id): opaque to clients. */
function encodeCursor(a: Pick<Approval, 'createdAt' | 'id'>): string {
  return Buffer.from(`${a.createdAt}.${a.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const m = /^(\d{1,15})\.(.+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const before = m ? { createdAt: Number(m[1]), id: m[2]! } : undefined;
  if (!before || !isValidId(before.id) || encodeCursor(before) !== cursor) {
    throw new AppError('validation_failed', 'cursor is not one this API returned', [
      { path: 'cursor', message: 'invalid cursor' },
    ]);
  }
  return before;
}

export class ApprovalInbox {
  constructor(private readonly store: ApprovalInboxStore) {}

  async list(p: Principal, q: { status?: ApprovalStatus; limit: number; cursor?: string }): Promise<InboxPage> {
    if (p.role === 'agent') throw forbidden(p, 'read the approvals inbox (it lists approvals to decide)');
    const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    const rows = await this.store.inbox({
      ...(p.role === 'user' ? { owner: p.subject } : {}),
      ...(q.status !== undefined ? { status: q.status } : {}),
      ...(before ? { before } : {}),
      limit: q.limit + 1,
    });
    const approvals = rows.slice(0, q.limit);
    return { approvals, nextCursor: rows.length > q.limit ? encodeCursor(approvals[approvals.length - 1]!) : null };
  }
}
