/** The inbox: what waits on the person, live, with the three decisions. */
import { type FormEvent, useId, useState } from 'react';
import { type Approval, type ApiKey, api, enc, levelName, message, when } from './api';
import { agentKeyId, timeLeft, useKeyLabels, useLiveApprovals, useNow } from './approvals';
import { Link } from './router';

export function requester(approval: Approval, keys: Map<string, ApiKey>): string {
  const id = agentKeyId(approval.requestedBy);
  if (!id) return approval.requestedBy;
  const label = keys.get(id)?.label;
  return label ? `${label} (agent key ${id})` : `agent key ${id}`;
}

function ApprovalCard({
  approval,
  keys,
  now,
  onDecided,
}: {
  approval: Approval;
  keys: Map<string, ApiKey>;
  now: number;
  onDecided: (a: Approval) => void;
}) {
  const uid = useId();
  const [expiry, setExpiry] = useState('');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const base = `/conversations/${enc(approval.conversationId)}/approvals/${enc(approval.id)}`;

  const decide = async (path: string, body: object) => {
    setBusy(true);
    setError(null);
    try {
      onDecided(await api<Approval>(`${base}/${path}`, { method: 'POST', body }));
    } catch (err) {
      setError(message(err));
      setBusy(false);
    }
  };
  const approveConversation = (e: FormEvent) => {
    e.preventDefault();
    const seconds = expiry.trim() === '' ? undefined : Number(expiry);
    void decide(
      'approve',
      seconds === undefined ? { scope: 'conversation' } : { scope: 'conversation', expiresInSeconds: seconds },
    );
  };
  const reject = (e: FormEvent) => {
    e.preventDefault();
    void decide('reject', reason.trim() === '' ? {} : { reason: reason.trim() });
  };
  const title = `${approval.tool}/${approval.action}`;
  return (
    <li className="card" aria-labelledby={`${uid}-title`} data-approval={approval.id}>
      <h2 id={`${uid}-title`}>
        <code>{title}</code>
      </h2>
      <dl className="facts">
        <dt>Conversation</dt>
        <dd>
          <Link to={`/conversations/${enc(approval.conversationId)}`}>{approval.conversationId}</Link>
        </dd>
        <dt>Requested by</dt>
        <dd data-testid="requester">{requester(approval, keys)}</dd>
        <dt>Level</dt>
        <dd>
          needs {levelName(approval.requiredLevel)}, has {levelName(approval.currentLevel)}
        </dd>
        <dt>Asked</dt>
        <dd>{when(approval.createdAt)}</dd>
        <dt>Time left</dt>
        <dd>{timeLeft(approval.expiresAt, now)}</dd>
      </dl>
      <h3 className="small">Arguments</h3>
      <pre className="json" tabIndex={0} aria-label={`Arguments of ${title}`}>
        {JSON.stringify(approval.args, null, 2)}
      </pre>
      <div className="actions">
        <button type="button" disabled={busy} onClick={() => void decide('approve', { scope: 'once' })}>
          Approve once
        </button>
        <form onSubmit={approveConversation} className="inline">
          <label htmlFor={`${uid}-expiry`}>Expires after (seconds, optional)</label>
          <input
            id={`${uid}-expiry`}
            type="number"
            min={1}
            max={31536000}
            inputMode="numeric"
            value={expiry}
            onChange={(e) => setExpiry(e.target.value)}
          />
          <button type="submit" disabled={busy}>
            Approve for the conversation
          </button>
        </form>
        <form onSubmit={reject} className="inline">
          <label htmlFor={`${uid}-reason`}>Reason</label>
          <input id={`${uid}-reason`} maxLength={1000} value={reason} onChange={(e) => setReason(e.target.value)} />
          <button type="submit" className="danger" disabled={busy}>
            Reject
          </button>
        </form>
      </div>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </li>
  );
}

export function Inbox() {
  const live = useLiveApprovals();
  const now = useNow();
  const keys = useKeyLabels(live.pending.map((a) => agentKeyId(a.requestedBy)).filter((x): x is string => !!x));
  return (
    <>
      <h1>Inbox</h1>
      <p className="status" role="status" data-testid="stream-state">
        {live.stream === 'live'
          ? 'Live: new requests appear here as they come.'
          : live.stream === 'down'
            ? 'Reconnecting…'
            : 'Connecting…'}{' '}
        {live.pending.length} pending.
      </p>
      {live.error && (
        <p role="alert" className="error">
          {live.error}
        </p>
      )}
      {live.pending.length === 0 ? (
        <p>Nothing waits on you.</p>
      ) : (
        <ul className="cards" aria-label="Pending approvals">
          {live.pending.map((a) => (
            <ApprovalCard key={a.id} approval={a} keys={keys} now={now} onDecided={live.apply} />
          ))}
        </ul>
      )}
    </>
  );
}
