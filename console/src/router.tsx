/** A path router for the console's few pages: links push history entries under /console. */
import { type MouseEvent, type ReactNode, createContext, useContext, useEffect, useState } from 'react';

export const BASE = '/console';

interface Route {
  path: string;
  go: (path: string) => void;
  /** Go without a history entry (the sign-in callback's address is not one to come back to). */
  replace: (path: string) => void;
}

const RouteContext = createContext<Route>({ path: '/', go: () => undefined, replace: () => undefined });

function current(): string {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

export function RouterProvider({ children }: { children: ReactNode }) {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const onPop = () => setPath(current());
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  const go = (to: string) => {
    window.history.pushState(null, '', BASE + to);
    setPath(to);
  };
  const replace = (to: string) => {
    window.history.replaceState(null, '', BASE + to);
    setPath(to);
  };
  return <RouteContext.Provider value={{ path, go, replace }}>{children}</RouteContext.Provider>;
}

export function useRoute() {
  return useContext(RouteContext);
}

/** A real link (it opens in a new tab too), followed inside the page on a plain click. */
export function Link({ to, children, current }: { to: string; children: ReactNode; current?: boolean }) {
  const { go } = useRoute();
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    go(to);
  };
  return (
    <a href={BASE + to} onClick={onClick} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}
