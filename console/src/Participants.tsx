/** Participants (admins): status, actions and levels; a quarantined definition as a diff, to approve. */
import { useCallback, useEffect, useState } from 'react';
import { api, enc, message, when } from './api';
import { lineDiff } from './diff';

interface ParticipantAction {
  name: string;
  upstreamName: string;
  level: number;
  status: 'active' | 'quarantined';
  definitionDigest: string | null;
}

interface Participant {
  name: string;
  description: string;
  transport: string;
  status: string;
  lastError: string | null;
  refreshedAt: number | null;
  actions: ParticipantAction[];
}

interface Pinned {
  digest: string;
  definition: Record<string, unknown>;
}

interface ActionDefinition {
  participant: string;
  name: string;
  status: string;
  pinned?: Pinned;
  pending?: Pinned;
}

function Quarantined({
  participant,
  action,
  onApproved,
}: {
  participant: string;
  action: string;
  onApproved: () => void;
}) {
  const [view, setView] = useState<ActionDefinition | null>(null);
  const [error, setError] = useState<string | null>(null);
  const path = `/participants/${enc(participant)}/actions/${enc(action)}`;
  useEffect(() => {
    api<ActionDefinition>(path)
      .then(setView)
      .catch((err: unknown) => setError(message(err)));
  }, [path]);
  const approve = async () => {
    try {
      await api(`${path}/approve`, { method: 'POST' });
      onApproved();
    } catch (err) {
      setError(message(err));
    }
  };
  if (error)
    return (
      <p role="alert" className="error">
        {error}
      </p>
    );
  if (!view) return <p>Loading the definition…</p>;
  const before = view.pinned ? JSON.stringify(view.pinned.definition, null, 2) : '';
  const after = view.pending ? JSON.stringify(view.pending.definition, null, 2) : '';
  return (
    <div className="quarantine">
      <p>{view.pinned ? 'The upstream changed this definition:' : 'A new upstream tool, not approved yet:'}</p>
      <pre className="diff" tabIndex={0} aria-label={`Definition changes of ${participant}/${action}`}>
        {lineDiff(before, after).map((l, i) => (
          <span key={i} className={l.kind}>
            {l.kind === 'added' ? '+ ' : l.kind === 'removed' ? '- ' : '  '}
            {l.text}
            {'\n'}
          </span>
        ))}
      </pre>
      <button type="button" onClick={() => void approve()}>
        Approve {participant}/{action}
      </button>
    </div>
  );
}

export function Participants() {
  const [list, setList] = useState<Participant[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    api<{ participants: Participant[] }>('/participants')
      .then((p) => setList(p.participants))
      .catch((err: unknown) => setError(message(err)));
  }, []);
  useEffect(load, [load]);
  return (
    <>
      <h1>Participants</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {list && list.length === 0 && <p>No participants registered.</p>}
      {list?.map((p) => (
        <section key={p.name} className="card" aria-labelledby={`p-${p.name}`}>
          <h2 id={`p-${p.name}`}>{p.name}</h2>
          <p>{p.description}</p>
          <dl className="facts">
            <dt>Transport</dt>
            <dd>{p.transport}</dd>
            <dt>Status</dt>
            <dd>{p.status}</dd>
            <dt>Last listing</dt>
            <dd>{when(p.refreshedAt)}</dd>
            {p.lastError && (
              <>
                <dt>Last error</dt>
                <dd>{p.lastError}</dd>
              </>
            )}
          </dl>
          <table>
            <caption>Actions of {p.name}</caption>
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Upstream</th>
                <th scope="col">Level</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {p.actions.map((a) => (
                <tr key={a.name}>
                  <td>{a.name}</td>
                  <td>{a.upstreamName}</td>
                  <td>{a.level}</td>
                  <td>{a.status}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {p.actions
            .filter((a) => a.status === 'quarantined')
            .map((a) => (
              <Quarantined key={a.name} participant={p.name} action={a.name} onApproved={load} />
            ))}
        </section>
      ))}
    </>
  );
}
