/** A conversation's shared context: each resource as JSON, edited with If-Match on the version shown. */
import { type FormEvent, useCallback, useEffect, useId, useState } from 'react';
import { type Resource, api, enc, message, when } from './api';

function ResourceItem({ id, resource, onSaved }: { id: string; resource: Resource; onSaved: () => void }) {
  const uid = useId();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const start = () => {
    setText(JSON.stringify(resource.data, null, 2));
    setError(null);
    setEditing(true);
  };
  const save = async (e: FormEvent) => {
    e.preventDefault();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      setError('Not valid JSON.');
      return;
    }
    try {
      // If-Match: the version shown; someone else's change since is a 412, not overwritten.
      await api(`/conversations/${enc(id)}/resources/${enc(resource.name)}`, {
        method: 'PUT',
        body: { data },
        headers: { 'if-match': `"${resource.version}"` },
      });
      setEditing(false);
      onSaved();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <li className="card">
      <h3>
        <code>{resource.name}</code> <span className="muted">version {resource.version}</span>
      </h3>
      <p className="muted">
        by {resource.updatedBy}, {when(resource.updatedAt)}
      </p>
      {editing ? (
        <form onSubmit={(e) => void save(e)} className="stacked">
          <label htmlFor={`${uid}-data`}>Data of {resource.name} (JSON)</label>
          <textarea id={`${uid}-data`} rows={8} value={text} onChange={(e) => setText(e.target.value)} />
          <div className="actions">
            <button type="submit">Save (if still version {resource.version})</button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <>
          <pre className="json" tabIndex={0} aria-label={`Data of ${resource.name}`}>
            {JSON.stringify(resource.data, null, 2)}
          </pre>
          <button type="button" onClick={start}>
            Edit {resource.name}
          </button>
        </>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </li>
  );
}

export function Resources({ id }: { id: string }) {
  const [resources, setResources] = useState<Resource[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [text, setText] = useState('{}');
  const load = useCallback(() => {
    api<{ resources: Resource[] }>(`/conversations/${enc(id)}/resources?limit=100`)
      .then((page) => setResources(page.resources))
      .catch((err: unknown) => setError(message(err)));
  }, [id]);
  useEffect(load, [load]);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const data: unknown = JSON.parse(text);
      await api(`/conversations/${enc(id)}/resources/${enc(name.trim())}`, {
        method: 'PUT',
        body: { data },
        headers: { 'if-none-match': '*' },
      });
      setName('');
      setText('{}');
      load();
    } catch (err) {
      setError(err instanceof SyntaxError ? 'Not valid JSON.' : message(err));
    }
  };
  return (
    <section aria-labelledby="resources-h">
      <h2 id="resources-h">Resources</h2>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {resources && resources.length === 0 && <p>No resources.</p>}
      {resources && resources.length > 0 && (
        <ul className="cards">
          {resources.map((r) => (
            <ResourceItem key={`${r.name}@${r.version}`} id={id} resource={r} onSaved={load} />
          ))}
        </ul>
      )}
      <details>
        <summary>New resource</summary>
        <form onSubmit={(e) => void create(e)} className="stacked">
          <label htmlFor="new-resource-name">Name</label>
          <input id="new-resource-name" value={name} onChange={(e) => setName(e.target.value)} required />
          <label htmlFor="new-resource-data">Data (JSON)</label>
          <textarea id="new-resource-data" rows={4} value={text} onChange={(e) => setText(e.target.value)} />
          <button type="submit">Create</button>
        </form>
      </details>
    </section>
  );
}
