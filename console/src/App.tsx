/** The frame: sign-in until a token works, then the navigation and the page the path names. */
import { type FormEvent, useEffect, useState } from 'react';
import { type Me, api, message, storeToken, storedToken } from './api';
import { Link, useRoute } from './router';
import { Inbox } from './Inbox';
import { History } from './History';
import { ConversationList } from './Conversations';
import { ConversationDetail } from './ConversationDetail';
import { Participants } from './Participants';
import { Keys } from './Keys';

function SignIn({ onSignedIn, error }: { onSignedIn: (me: Me) => void; error: string | null }) {
  const [token, setToken] = useState('');
  const [failure, setFailure] = useState<string | null>(error);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    storeToken(token.trim());
    try {
      onSignedIn(await api<Me>('/me'));
    } catch (err) {
      storeToken(null);
      setFailure(message(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" className="signin">
      <h1>Sign in to the console</h1>
      <p>
        Paste a user or admin token. It stays in this tab only (sessionStorage). After <code>npm start</code>, the admin
        key is in <code>.data/admin.key</code>.
      </p>
      <form onSubmit={(e) => void submit(e)}>
        <label htmlFor="token">Token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          value={token}
          onChange={(e) => setToken(e.target.value)}
          required
        />
        <button type="submit" disabled={busy || token.trim() === ''}>
          Sign in
        </button>
      </form>
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
      <p className="note">Sign-in with an identity provider (PKCE) is not offered yet: paste a token.</p>
    </main>
  );
}

const PAGES = [
  { to: '/', label: 'Inbox' },
  { to: '/history', label: 'Decided' },
  { to: '/conversations', label: 'Conversations' },
  { to: '/participants', label: 'Participants', admin: true },
  { to: '/keys', label: 'Keys', admin: true },
];

function Page({ me }: { me: Me }) {
  const { path } = useRoute();
  const detail = /^\/conversations\/([^/]+)\/?$/.exec(path);
  if (detail) return <ConversationDetail id={decodeURIComponent(detail[1]!)} />;
  switch (path.replace(/\/$/, '') || '/') {
    case '/':
    case '/inbox':
      return <Inbox />;
    case '/history':
      return <History />;
    case '/conversations':
      return <ConversationList />;
    case '/participants':
      return me.role === 'admin' ? <Participants /> : <NotFound />;
    case '/keys':
      return me.role === 'admin' ? <Keys /> : <NotFound />;
    default:
      return <NotFound />;
  }
}

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>
        No such page. <Link to="/">Go to the inbox</Link>.
      </p>
    </>
  );
}

export function App() {
  const { path } = useRoute();
  const [me, setMe] = useState<Me | null>(null);
  const [checking, setChecking] = useState(storedToken() !== null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!storedToken()) return;
    api<Me>('/me')
      .then(accept)
      .catch((err: unknown) => {
        storeToken(null);
        setError(message(err));
      })
      .finally(() => setChecking(false));
  }, []);

  // Each page gets a title of its own, so a screen reader and the tab say where one is.
  useEffect(() => {
    const page =
      PAGES.find((p) => p.to === path) ?? (path.startsWith('/conversations/') ? { label: 'Conversation' } : null);
    document.title = `${page?.label ?? 'Console'} · Tool orchestration console`;
  }, [path]);

  const accept = (who: Me) => {
    if (who.role !== 'agent') return setMe(who);
    storeToken(null);
    setError('An agent key cannot use the console: paste a user or admin token.');
  };
  if (checking) return <p>Checking the token…</p>;
  if (!me) return <SignIn key={error ?? ''} onSignedIn={accept} error={error} />;
  const signOut = () => {
    storeToken(null);
    setMe(null);
  };
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span className="brand">Tool orchestration console</span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.filter((p) => !p.admin || me.role === 'admin').map((p) => (
              <li key={p.to}>
                <Link to={p.to} current={p.to === '/' ? path === '/' : path.startsWith(p.to)}>
                  {p.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who" data-testid="who">
          Signed in as <strong>{me.subject}</strong> ({me.role})
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page me={me} />
      </main>
    </>
  );
}
