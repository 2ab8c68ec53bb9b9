/** A conversation's audit log, with the hash chain's verification (GET …/audit/verify). */
import { useCallback, useEffect, useState } from 'react';
import { type AuditEntry, type AuditVerification, api, enc, message, when } from './api';

export function AuditLog({ id }: { id: string }) {
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  const [next, setNext] = useState<number | null>(null);
  const [verification, setVerification] = useState<AuditVerification | null>(null);
  const [error, setError] = useState<string | null>(null);
  const base = `/conversations/${enc(id)}/audit`;

  const load = useCallback(
    (after: number | null) => {
      const q = new URLSearchParams({ limit: '100' });
      if (after !== null) q.set('after', String(after));
      api<{ entries: AuditEntry[]; nextCursor: number | null }>(`${base}?${q.toString()}`)
        .then((page) => {
          setEntries((prev) => (after !== null && prev ? [...prev, ...page.entries] : page.entries));
          setNext(page.nextCursor);
        })
        .catch((err: unknown) => setError(message(err)));
    },
    [base],
  );
  const verify = useCallback(() => {
    setVerification(null);
    api<AuditVerification>(`${base}/verify`)
      .then(setVerification)
      .catch((err: unknown) => setError(message(err)));
  }, [base]);
  useEffect(() => {
    load(null);
    verify();
  }, [load, verify]);

  return (
    <section aria-labelledby="audit-h">
      <h2 id="audit-h">Audit log</h2>
      <p role="status" data-testid="audit-verification" className={verification && !verification.ok ? 'error' : ''}>
        {verification === null
          ? 'Verifying the chain…'
          : verification.ok
            ? `Chain verified: ${verification.entries} entries, head ${verification.head?.slice(0, 16) ?? ''}…`
            : `Chain BROKEN at entry ${verification.brokenAt ?? '?'} (${verification.entries} checked)`}
      </p>
      <button type="button" onClick={verify}>
        Verify again
      </button>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {entries && entries.length === 0 && <p>No entries yet (entries are sealed within a moment).</p>}
      {entries && entries.length > 0 && (
        <table>
          <caption className="visually-hidden">Audit entries</caption>
          <thead>
            <tr>
              <th scope="col">Seq</th>
              <th scope="col">At</th>
              <th scope="col">Actor</th>
              <th scope="col">Event</th>
              <th scope="col">Tool/action</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.seq}>
                <td>{e.seq}</td>
                <td>{when(e.at)}</td>
                <td>
                  <code>{e.actor}</code>
                </td>
                <td>{e.event}</td>
                <td>{e.tool ? `${e.tool}/${e.action ?? ''}` : ''}</td>
                <td>{e.outcome ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next !== null && (
        <button type="button" onClick={() => load(next)}>
          More entries
        </button>
      )}
    </section>
  );
}
