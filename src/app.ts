/**
 * buildApp(services) builds the express app and never listens: only the
 * entry file (server.ts) binds a port; tests use the factory with supertest.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { type Express } from 'express';
import swaggerUi from 'swagger-ui-express';
import { PROJECT_ROOT } from './project-root';
import { RegisterRoutes } from './generated/routes';
import { checkJsonBody, checkUrl, requireJsonBody, verifyUtf8 } from './http/input-checks';
import { authenticate } from './http/authenticate';
import { hostOriginGuard } from './http/host-origin';
import { failedAuthLimiter, principalRateLimit } from './http/rate-limits';
import { errorHandler, getOnly, methodGuard, requestLogging, unmatchedRoute } from './http/middleware';
import { setTrustProxy } from './http/trust-proxy';
import { createExpressServer } from './http/express-server';
import { CONSOLE_PATH, consoleHandlers } from './http/console';
import { createConsoleOidc } from './http/console-oidc';
import { MCP_PATH, mcpRouter } from './mcp/conversation-mcp';
import { mcpBodyErrors } from './mcp/json-rpc-errors';
import type { Services } from './services';

export const OPENAPI_PATH = join(PROJECT_ROOT, 'openapi', 'openapi.json');

let cachedSpec: { text: string; json: object } | undefined;
/** The committed spec, served byte for byte. */
function openapiSpec(): { text: string; json: object } {
  if (!cachedSpec) {
    const text = readFileSync(OPENAPI_PATH, 'utf8');
    cachedSpec = { text, json: JSON.parse(text) as object };
  }
  return cachedSpec;
}

/** Before any route, in this order: Host and Origin, the URL, the caller, its rate limit, the method, the JSON body. */
function useRequestChecks(app: Express, services: Services): void {
  // DNS rebinding and foreign pages: a Host or Origin that is not ours is refused first.
  app.use(hostOriginGuard(services.config));
  app.use(checkUrl);
  // Who calls, before any body is read: an unauthenticated caller costs no parsing.
  const failures = failedAuthLimiter(services.config);
  app.use(
    authenticate(services.authenticator, (req, res, refuse) => {
      failures.fail(req, res, refuse).catch((err: unknown) => {
        services.logger.error({ err }, 'failed-authentication limiter');
        if (!res.headersSent) refuse();
      });
    }),
  );
  // One budget per principal for everything it calls, MCP included.
  app.use(principalRateLimit(services.config));
  // OPTIONS, and a method only a shadowed route would take: 405 with the Allow of the routes below.
  app.use(methodGuard(app));
  app.use(
    express.json({
      limit: services.config.bodyLimit,
      type: ['application/json', 'application/*+json'],
      verify: verifyUtf8,
    }),
  );
  app.use(requireJsonBody);
  app.use(checkJsonBody);
}

/** What anyone may read: /metrics (unless disabled), the OpenAPI document, its Swagger UI and the console's page. */
function usePublicDocuments(app: Express, services: Services, spec: { text: string; json: object }): void {
  const metrics = services.metrics;
  if (metrics) {
    // Public like the probes (src/http/authenticate.ts, host-origin.ts); absent (404) with METRICS_ENABLED=false.
    app.get('/metrics', (_req, res, next) => {
      metrics.scrape().then((text) => res.type(metrics.contentType).send(text), next);
    });
  }
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(spec.text);
  });
  app.use('/docs', getOnly, swaggerUi.serve, swaggerUi.setup(spec.json, { customSiteTitle: 'Tool orchestration API' }));
  // The console's page and assets (src/http/console.ts); the API calls it makes need a token.
  const { consoleOidc, jwt } = services.config;
  app.use(CONSOLE_PATH, ...consoleHandlers(undefined, createConsoleOidc(consoleOidc, jwt?.issuer, services.logger)));
}

export function buildApp(services: Services): Express {
  const app = express();
  // app.listen serves as the entry file does (src/http/express-server.ts).
  app.listen = function listen(this: unknown, ...args: unknown[]) {
    const server = createExpressServer(app);
    return (server.listen as (...a: unknown[]) => typeof server).apply(server, args);
  } as Express['listen'];
  app.locals.services = services;
  app.disable('x-powered-by');
  app.set('etag', false);
  setTrustProxy(app, services.config.trustProxy);
  app.use(requestLogging(services.logger, services.metrics));
  useRequestChecks(app, services);

  // The MCP endpoint on its own paths, before the API's routes: its calls skip matching the 30 routes, and the
  // API's requests skip it after one string test. Its `stack` is the router's, for the 405s' Allow header
  // (allowed-methods.ts reads mounted routers' stacks).
  const mcp = mcpRouter(services);
  app.use(
    Object.assign(
      (req: express.Request, res: express.Response, next: express.NextFunction) =>
        req.path.endsWith('/mcp') ? mcp(req, res, next) : next(),
      { stack: mcp.stack },
    ),
  );
  // The API's routes, negotiate the first of them (tsoa.json lists its controller first):
  // express tries the routes in order, so the hot path matches at once.
  RegisterRoutes(app);
  // Bodies express.json refused, answered as JSON-RPC errors on the MCP endpoint.
  app.use(MCP_PATH, mcpBodyErrors);
  const spec = openapiSpec();
  usePublicDocuments(app, services, spec);

  app.use(unmatchedRoute(app));
  app.use(errorHandler(services.logger, spec.json));
  return app;
}
