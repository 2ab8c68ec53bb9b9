/** The frame: sign-in until a token works, then the navigation and the page the path names. */
import { type FormEvent, useEffect, useState } from 'react';
import { type Me, TOKEN_REFUSED_EVENT, api, message, storeToken, storedToken } from './api';
import { Link, useRoute } from './router';
import {
  CALLBACK_PATH,
  type ConsoleConfig,
  finishSignIn,
  forgetPendingSignIn,
  loadConsoleConfig,
  startSignIn,
} from './oidc';
import { Inbox } from './Inbox';
import { History } from './History';
import { ConversationList } from './Conversations';
import { ConversationDetail } from './ConversationDetail';
import { Participants } from './Participants';
import { Keys } from './Keys';

function ProviderSignIn({ config }: { config: ConsoleConfig | null }) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  if (config?.oidcUnavailable) {
    return (
      <p role="status" className="note">
        {config.oidcUnavailable}
      </p>
    );
  }
  const oidc = config?.oidc;
  if (!oidc) return null;
  const start = async () => {
    setBusy(true);
    try {
      await startSignIn(oidc);
    } catch (err) {
      setFailure(message(err));
      setBusy(false);
    }
  };
  return (
    <section className="sso">
      <h2>With your organisation&apos;s account</h2>
      <button type="button" onClick={() => void start()} disabled={busy}>
        Sign in with your identity provider
      </button>
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
    </section>
  );
}

function SignIn({
  onSignedIn,
  error,
  config,
}: {
  onSignedIn: (me: Me) => void;
  error: string | null;
  config: ConsoleConfig | null;
}) {
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
      {failure && (
        <p role="alert" className="error" data-testid="sign-in-error">
          {failure}
        </p>
      )}
      <ProviderSignIn config={config} />
      <section>
        <h2>With a token</h2>
        <p>
          Paste a user or admin token. It stays in this tab only (sessionStorage). After <code>npm start</code>, the
          admin key is in <code>.data/admin.key</code>.
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
      </section>
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

interface OnLoad {
  config: ConsoleConfig;
  me: Me | null;
  error: string | null;
}

let onLoad: Promise<OnLoad> | undefined;

/** Once per page load: React's development mode runs effects twice, and a code is exchanged only once. */
function signInOnLoad(path: string): Promise<OnLoad> {
  return (onLoad ??= signIn(path));
}

/**
 * The console's settings, then: back from the identity provider, the code exchanged for a token; then the
 * token (that one, or one kept in this tab) checked with GET /me. A failure is said on the sign-in page.
 */
async function signIn(path: string): Promise<OnLoad> {
  const config = await loadConsoleConfig();
  try {
    if (path === CALLBACK_PATH) storeToken(await finishSignIn(config.oidc, window.location.search));
  } catch (err) {
    return { config, me: null, error: message(err) };
  }
  if (!storedToken()) return { config, me: null, error: null };
  try {
    return { config, me: await api<Me>('/me'), error: null };
  } catch (err) {
    storeToken(null);
    return { config, me: null, error: message(err) };
  }
}

export function App() {
  const { path, replace } = useRoute();
  const [me, setMe] = useState<Me | null>(null);
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [checking, setChecking] = useState(true);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const callback = path === CALLBACK_PATH;
    void signInOnLoad(path).then((loaded) => {
      setConfig(loaded.config);
      setError(loaded.error);
      if (loaded.me) accept(loaded.me);
      if (callback) replace('/');
      setChecking(false);
    });
    // Once, at load: the path the page was opened at.
  }, []);

  // A token refused while signed in (expired, revoked): back to the sign-in, saying why.
  useEffect(() => {
    if (!me) return;
    const refused = () => {
      storeToken(null);
      setMe(null);
      setError('Your sign-in is no longer valid (it expired or was revoked): sign in again.');
    };
    window.addEventListener(TOKEN_REFUSED_EVENT, refused);
    return () => window.removeEventListener(TOKEN_REFUSED_EVENT, refused);
  }, [me]);

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
  if (checking) return <p role="status">Signing in…</p>;
  if (!me) return <SignIn key={error ?? ''} onSignedIn={accept} error={error} config={config} />;
  const signOut = () => {
    storeToken(null);
    forgetPendingSignIn();
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
