/** Decided approvals, newest first, across the conversations the person sees. */
import { useEffect, useState } from 'react';
import { type Approval, api, enc, message, when } from './api';
import { agentKeyId, useKeyLabels } from './approvals';
import { requester } from './Inbox';
import { Link } from './router';

const STATUSES = ['approved', 'rejected', 'used', 'expired', 'satisfied'] as const;

export function History() {
  const [status, setStatus] = useState('');
  const [approvals, setApprovals] = useState<Approval[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = (cursor: string | null) => {
    const q = new URLSearchParams({ limit: '100' });
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    api<{ approvals: Approval[]; nextCursor: string | null }>(`/approvals?${q.toString()}`)
      .then((page) => {
        const decided = page.approvals.filter((a) => a.status !== 'pending');
        setApprovals((prev) => (cursor && prev ? [...prev, ...decided] : decided));
        setNext(page.nextCursor);
      })
      .catch((err: unknown) => setError(message(err)));
  };
  useEffect(() => load(null), [status]);
  const keys = useKeyLabels((approvals ?? []).map((a) => agentKeyId(a.requestedBy)).filter((x): x is string => !!x));

  return (
    <>
      <h1>Decided approvals</h1>
      <label htmlFor="status-filter">Status</label>{' '}
      <select id="status-filter" value={status} onChange={(e) => setStatus(e.target.value)}>
        <option value="">all decided</option>
        {STATUSES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {approvals === null ? (
        <p>Loading…</p>
      ) : approvals.length === 0 ? (
        <p>No decided approvals.</p>
      ) : (
        <table>
          <caption className="visually-hidden">Decided approvals</caption>
          <thead>
            <tr>
              <th scope="col">Call</th>
              <th scope="col">Conversation</th>
              <th scope="col">Requested by</th>
              <th scope="col">Status</th>
              <th scope="col">Decided by</th>
              <th scope="col">Decided</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {approvals.map((a) => (
              <tr key={a.id}>
                <td>
                  <code>
                    {a.tool}/{a.action}
                  </code>
                </td>
                <td>
                  <Link to={`/conversations/${enc(a.conversationId)}`}>{a.conversationId}</Link>
                </td>
                <td>{requester(a, keys)}</td>
                <td>
                  {a.status}
                  {a.scope ? ` (${a.scope})` : ''}
                </td>
                <td>{a.decidedBy ?? '—'}</td>
                <td>{when(a.decidedAt)}</td>
                <td>{a.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <button type="button" onClick={() => load(next)}>
          More
        </button>
      )}
    </>
  );
}
