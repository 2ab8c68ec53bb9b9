/** The conversations the person sees, and a form to start one (with its deny policy). */
import { type FormEvent, useEffect, useState } from 'react';
import { type Conversation, api, enc, message, when } from './api';
import { Link, useRoute } from './router';

export function ConversationList() {
  const { go } = useRoute();
  const [list, setList] = useState<Conversation[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [id, setId] = useState('');
  const [deny, setDeny] = useState('');

  const load = (cursor: string | null) => {
    const q = new URLSearchParams({ limit: '100' });
    if (cursor) q.set('cursor', cursor);
    api<{ conversations: Conversation[]; nextCursor: string | null }>(`/conversations?${q.toString()}`)
      .then((page) => {
        setList((prev) => (cursor && prev ? [...prev, ...page.conversations] : page.conversations));
        setNext(page.nextCursor);
      })
      .catch((err: unknown) => setError(message(err)));
  };
  useEffect(() => load(null), []);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const patterns = deny
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter(Boolean);
    try {
      const made = await api<Conversation>('/conversations', {
        method: 'POST',
        body: { ...(id.trim() ? { id: id.trim() } : {}), ...(patterns.length ? { policy: { deny: patterns } } : {}) },
      });
      go(`/conversations/${enc(made.id)}`);
    } catch (err) {
      setError(message(err));
    }
  };

  return (
    <>
      <h1>Conversations</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {list === null ? (
        <p>Loading…</p>
      ) : list.length === 0 ? (
        <p>No conversations yet.</p>
      ) : (
        <table>
          <caption className="visually-hidden">Conversations</caption>
          <thead>
            <tr>
              <th scope="col">Conversation</th>
              <th scope="col">Owner</th>
              <th scope="col">Denied actions</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.map((c) => (
              <tr key={c.id}>
                <td>
                  <Link to={`/conversations/${enc(c.id)}`}>{c.id}</Link>
                </td>
                <td>{c.owner ?? '(none: admins only)'}</td>
                <td>{c.policy.deny.length ? c.policy.deny.join(', ') : '—'}</td>
                <td>{when(c.createdAt)}</td>
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
      <h2>New conversation</h2>
      <form onSubmit={(e) => void create(e)} className="stacked">
        <label htmlFor="new-id">Id (optional: a UUID is made)</label>
        <input id="new-id" value={id} onChange={(e) => setId(e.target.value)} />
        <label htmlFor="new-deny">Denied actions (policy; one pattern a line, e.g. */delete-*)</label>
        <textarea id="new-deny" rows={3} value={deny} onChange={(e) => setDeny(e.target.value)} />
        <button type="submit">Create</button>
      </form>
    </>
  );
}
