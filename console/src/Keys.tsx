/** Keys (admins): every key without its token; user and admin keys minted (the token shown once) and revoked. */
import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { type ApiKey, type CreatedKey, api, enc, levelName, message, when } from './api';
import { MintedToken } from './AgentKeys';

export function Keys() {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [minted, setMinted] = useState<string | null>(null);
  const [role, setRole] = useState<'user' | 'admin'>('user');
  const [subject, setSubject] = useState('');
  const [label, setLabel] = useState('');
  const load = useCallback(() => {
    api<{ keys: ApiKey[] }>('/keys')
      .then((list) => setKeys(list.keys))
      .catch((err: unknown) => setError(message(err)));
  }, []);
  useEffect(load, [load]);
  const mint = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const key = await api<CreatedKey>('/keys', {
        method: 'POST',
        body: { role, subject: subject.trim(), ...(label.trim() ? { label: label.trim() } : {}) },
      });
      setMinted(key.token);
      setSubject('');
      setLabel('');
      load();
    } catch (err) {
      setError(message(err));
    }
  };
  const revoke = async (key: ApiKey) => {
    if (!window.confirm(`Revoke ${key.role} key ${key.label ?? key.id} (${key.subject})?`)) return;
    try {
      await api(`/keys/${enc(key.id)}`, { method: 'DELETE' });
      load();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <>
      <h1>Keys</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {minted && <MintedToken token={minted} onDone={() => setMinted(null)} />}
      <h2>Mint a key</h2>
      <form onSubmit={(e) => void mint(e)} className="stacked">
        <label htmlFor="key-role">Role</label>
        <select id="key-role" value={role} onChange={(e) => setRole(e.target.value as 'user' | 'admin')}>
          <option value="user">user</option>
          <option value="admin">admin</option>
        </select>
        <label htmlFor="key-subject">Subject</label>
        <input id="key-subject" value={subject} onChange={(e) => setSubject(e.target.value)} required />
        <label htmlFor="key-label">Label</label>
        <input id="key-label" maxLength={200} value={label} onChange={(e) => setLabel(e.target.value)} />
        <button type="submit">Mint key</button>
      </form>
      <h2>All keys</h2>
      {keys && (
        <table>
          <caption className="visually-hidden">All keys</caption>
          <thead>
            <tr>
              <th scope="col">Role</th>
              <th scope="col">Subject</th>
              <th scope="col">Label</th>
              <th scope="col">Conversation</th>
              <th scope="col">Ceiling</th>
              <th scope="col">Created</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>{k.role}</td>
                <td>{k.subject}</td>
                <td>{k.label ?? '—'}</td>
                <td>{k.conversationId ?? '—'}</td>
                <td>{levelName(k.maxLevel)}</td>
                <td>
                  {when(k.createdAt)} by {k.createdBy}
                </td>
                <td>
                  {k.revokedAt
                    ? `revoked ${when(k.revokedAt)}`
                    : k.expiresAt
                      ? `expires ${when(k.expiresAt)}`
                      : 'active'}
                </td>
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
    </>
  );
}
