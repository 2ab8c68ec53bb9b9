/**
 * The console (API.md, Console): a single-page application for owners and
 * admins, built by `npm run build:console` into dist/console and served here
 * from that build, under a strict Content-Security-Policy: every script,
 * style and request is the service's own, and no inline script runs. The page
 * and its assets need no credentials (like /docs); every API call the page
 * makes does.
 *
 * Paths under /console that are no file of the build are the application's
 * own routes (/console/inbox, /console/conversations/x): they get index.html,
 * and the application reads the path. A missing build is a 503 that says how
 * to make one, never a 500; it is looked for on each request, so a build made
 * while the service runs is served at once.
 *
 * GET /console/config.json tells the page whether it may offer sign-in with
 * the identity provider, and where (src/http/console-oidc.ts); when it may,
 * the token endpoint's origin, and only it, joins connect-src, since the page
 * exchanges the code there itself.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { type RequestHandler } from 'express';
import { PROJECT_ROOT } from '../project-root';
import { getOnly } from './middleware';
import type { ConsoleOidc } from './console-oidc';

export const CONSOLE_PATH = '/console';
export const CONSOLE_BUILD_DIR = join(PROJECT_ROOT, 'dist', 'console');

/** The console's CSP; `tokenOrigin`: the identity provider's token endpoint's origin, when sign-in with it is offered. */
export function consoleCsp(tokenOrigin?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    tokenOrigin ? `connect-src 'self' ${tokenOrigin}` : "connect-src 'self'",
    "font-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; ');
}

export const CONSOLE_CSP = consoleCsp();

const NO_OIDC: ConsoleOidc = { current: () => Promise.resolve({ oidc: null }) };

function securityHeaders(oidc: ConsoleOidc): RequestHandler {
  return (_req, res, next) => {
    oidc.current().then(({ oidc: settings }) => {
      res.setHeader(
        'Content-Security-Policy',
        consoleCsp(settings ? new URL(settings.tokenEndpoint).origin : undefined),
      );
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('X-Frame-Options', 'DENY');
      next();
    }, next);
  };
}

/** GET /console/config.json: public, and never anything secret (the console is a public client). */
function consoleConfig(oidc: ConsoleOidc): RequestHandler {
  return (req, res, next) => {
    if (req.path !== '/config.json') return next();
    oidc.current().then((config) => {
      res.setHeader('Cache-Control', 'no-store');
      res.json(config);
    }, next);
  };
}

/** The handlers to mount at CONSOLE_PATH, serving the build in `dir`. */
export function consoleHandlers(dir: string = CONSOLE_BUILD_DIR, oidc: ConsoleOidc = NO_OIDC): RequestHandler[] {
  const index = join(dir, 'index.html');
  // Vite names assets by their content's hash: they never change under their name.
  const assets = express.static(dir, {
    index: false,
    redirect: false,
    fallthrough: true,
    setHeaders: (res, path) => {
      res.setHeader(
        'Cache-Control',
        path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
  const page: RequestHandler = (req, res, next) => {
    if (!existsSync(index)) {
      res
        .status(503)
        .type('text/plain')
        .send('The console is not built. Run `npm run build:console` (or `npm run build`), then reload this page.\n');
      return;
    }
    if (req.path.startsWith('/assets/')) return next(); // a missing asset is a 404, not the page
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index, (err) => err && next(err));
  };
  return [getOnly, securityHeaders(oidc), consoleConfig(oidc), assets, page];
}
