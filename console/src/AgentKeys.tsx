/** A conversation's agent keys: minted with label, ceiling and expiry (the token shown once), and revoked. */
import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { type ApiKey, type CreatedKey, api, enc, levelName, message, when } from './api';

export function MintedToken({ token, onDone }: { token: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = () => {
    navigator.clipboard.writeText(token).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  };
  return (
    <div className="minted" role="region" aria-label="New token">
      <p>
        <strong>The token, shown this once:</strong> store it now.
      </p>
      <code data-testid="minted-token" className="token">
        {token}
      </code>
      <div className="actions">
        <button type="button" onClick={copy}>
          Copy token
        </button>
        <button type="button" onClick={onDone}>
          Done (hide it)
        </button>
      </div>
      <p role="status">{copied ? 'Copied to the clipboard.' : ''}</p>
    </div>
  );
}

export function AgentKeys({ id }: { id: string }) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [minted, setMinted] = useState<string | null>(null);
  const [label, setLabel] = useState('');
  const [maxLevel, setMaxLevel] = useState('');
  const [expires, setExpires] = useState('');
  const load = useCallback(() => {
    api<{ keys: ApiKey[] }>('/keys')
      .then((list) => setKeys(list.keys.filter((k) => k.conversationId === id)))
      .catch((err: unknown) => setError(message(err)));
  }, [id]);
  useEffect(load, [load]);

  const mint = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const body: Record<string, unknown> = {};
    if (label.trim()) body.label = label.trim();
    if (maxLevel) body.maxLevel = Number(maxLevel);
    if (expires) body.expiresAt = new Date(expires).getTime();
    try {
      const key = await api<CreatedKey>(`/conversations/${enc(id)}/agent-keys`, { method: 'POST', body });
      setMinted(key.token);
      setLabel('');
      load();
    } catch (err) {
      setError(message(err));
    }
  };
  const revoke = async (key: ApiKey) => {
    if (!window.confirm(`Revoke the agent key ${key.label ?? key.id}? Its calls are refused at once.`)) return;
    try {
      await api(`/keys/${enc(key.id)}`, { method: 'DELETE' });
      load();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <section aria-labelledby="agent-keys-h">
      <h2 id="agent-keys-h">Agent keys</h2>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {minted && <MintedToken token={minted} onDone={() => setMinted(null)} />}
      {keys && keys.length === 0 && <p>No agent keys.</p>}
      {keys && keys.length > 0 && (
        <table>
          <caption className="visually-hidden">Agent keys</caption>
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">Key id</th>
              <th scope="col">Ceiling</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>{k.label ?? '—'}</td>
                <td>
                  <code>{k.id}</code>
                </td>
                <td>{levelName(k.maxLevel)}</td>
                <td>{when(k.expiresAt)}</td>
                <td>{k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'active'}</td>
                <td>
                  {!k.revokedAt && (
                    <button type="button" className="danger" onClick={() => void revoke(k)}>
                      Revoke {k.label ?? k.id}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Mint an agent key</h3>
      <form onSubmit={(e) => void mint(e)} className="stacked">
        <label htmlFor="agent-label">Label</label>
        <input id="agent-label" maxLength={200} value={label} onChange={(e) => setLabel(e.target.value)} />
        <label htmlFor="agent-max">Ceiling (maxLevel)</label>
        <select id="agent-max" value={maxLevel} onChange={(e) => setMaxLevel(e.target.value)}>
          <option value="">none</option>
          <option value="1">1 (read)</option>
          <option value="2">2 (write)</option>
          <option value="3">3 (execute)</option>
        </select>
        <label htmlFor="agent-expires">Expires (optional)</label>
        <input id="agent-expires" type="datetime-local" value={expires} onChange={(e) => setExpires(e.target.value)} />
        <button type="submit">Mint agent key</button>
      </form>
    </section>
  );
}
