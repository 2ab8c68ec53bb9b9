/** One conversation: its levels (with history), policy, resources, agent keys and audit log. */
import { useCallback, useEffect, useState } from 'react';
import {
  type Conversation,
  type PermissionEvent,
  type ToolPermission,
  LEVEL_NAMES,
  api,
  enc,
  levelName,
  message,
  when,
} from './api';
import { AgentKeys } from './AgentKeys';
import { AuditLog } from './AuditLog';
import { Resources } from './Resources';
import { Link } from './router';

function Levels({ id }: { id: string }) {
  const [tools, setTools] = useState<ToolPermission[] | null>(null);
  const [history, setHistory] = useState<PermissionEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const base = `/conversations/${enc(id)}/permissions`;
  const load = useCallback(() => {
    Promise.all([api<{ tools: ToolPermission[] }>(base), api<{ events: PermissionEvent[] }>(`${base}/history`)])
      .then(([p, h]) => {
        setTools(p.tools);
        setHistory(h.events);
      })
      .catch((err: unknown) => setError(message(err)));
  }, [base]);
  useEffect(load, [load]);
  const change = async (tool: string, level: number) => {
    setError(null);
    try {
      await api(`${base}/${enc(tool)}`, { method: 'PUT', body: { level } });
      load();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <section aria-labelledby="levels-h">
      <h2 id="levels-h">Tool levels</h2>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {tools && (
        <table>
          <caption className="visually-hidden">Tool levels</caption>
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Level</th>
              <th scope="col">Source</th>
              <th scope="col">Set</th>
            </tr>
          </thead>
          <tbody>
            {tools.map((t) => (
              <tr key={t.tool}>
                <th scope="row">{t.tool}</th>
                <td>
                  <label className="visually-hidden" htmlFor={`level-${t.tool}`}>
                    Level of {t.tool}
                  </label>
                  <select
                    id={`level-${t.tool}`}
                    value={t.level}
                    onChange={(e) => void change(t.tool, Number(e.target.value))}
                  >
                    {[1, 2, 3].map((l) => (
                      <option key={l} value={l}>
                        {l} ({LEVEL_NAMES[l]})
                      </option>
                    ))}
                  </select>
                </td>
                <td>{t.source}</td>
                <td>{when(t.upgradedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Level history</h3>
      {history.length === 0 ? (
        <p>No level changed yet.</p>
      ) : (
        <ol className="history">
          {history.map((h, i) => (
            <li key={i}>
              {when(h.at)}: <strong>{h.tool}</strong> {levelName(h.fromLevel)} → {levelName(h.toLevel)} by{' '}
              <code>{h.actor}</code>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

export function ConversationDetail({ id }: { id: string }) {
  const [conversation, setConversation] = useState<Conversation | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<Conversation>(`/conversations/${enc(id)}`)
      .then(setConversation)
      .catch((err: unknown) => setError(message(err)));
  }, [id]);
  return (
    <>
      <p>
        <Link to="/conversations">← All conversations</Link>
      </p>
      <h1>
        Conversation <code>{id}</code>
      </h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {conversation && (
        <>
          <dl className="facts">
            <dt>Owner</dt>
            <dd>{conversation.owner ?? '(none: admins only)'}</dd>
            <dt>Created</dt>
            <dd>{when(conversation.createdAt)}</dd>
            <dt>Policy: denied actions</dt>
            <dd>{conversation.policy.deny.length ? conversation.policy.deny.join(', ') : 'none'}</dd>
          </dl>
          <Levels id={id} />
          <Resources id={id} />
          <AgentKeys id={id} />
          <AuditLog id={id} />
        </>
      )}
    </>
  );
}
