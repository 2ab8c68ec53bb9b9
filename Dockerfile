# Plain multi-stage build (no `# syntax=` line: no BuildKit frontend to
# download). Node 24 LTS on Alpine: the service has no native code (Prisma
# runs on its WebAssembly query compiler and schema engine, pg is pure JS,
# pglite is WebAssembly), so musl is no obstacle, and the base is the
# smallest official Node 24 image. Its busybox provides `flock` (and `sh`),
# which the DATA_DIR lock uses.

# Install scripts are off (--ignore-scripts), as on the dev machines: the
# build runs what it needs itself, and nothing downloads engines.

# 1. Build: the lockfile's full install, then generate (Prisma client, tsoa
#    spec and routes) and compile to dist/.
FROM node:24-alpine AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# go-w: whatever modes the build context had, only the owner (root) may write.
RUN npm run build && chmod -R go-w dist prisma openapi package.json

# 2. Production dependencies only, from the same lockfile. --omit=optional as
#    well: the Prisma CLI, TypeScript and Prisma Studio's packages are
#    optional peers of @prisma/client ("devOptional" in the lockfile), which
#    --omit=dev alone keeps. Then what the runtime never loads: the generated
#    client (src/generated/prisma) uses only runtime/client and the
#    PostgreSQL query compiler, so the other databases' compilers go; the
#    service is CommonJS, so OpenTelemetry's ESM builds (build/esm,
#    build/esnext) go; swagger-ui-express serves swagger-ui-bundle.js, so
#    swagger-ui-dist's ES bundles go; and so do type declarations and source
#    maps.
FROM node:24-alpine AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && find node_modules/@prisma/client/runtime -maxdepth 1 -type f \
      ! -name 'client.js' ! -name 'client.mjs' ! -name 'index-browser.js' ! -name 'index-browser.mjs' \
      ! -name 'query_compiler_fast_bg.postgresql.*' -delete \
 && find node_modules/@opentelemetry -type d \( -path '*/build/esm' -o -path '*/build/esnext' \) -prune -exec rm -rf {} + \
 && rm -f node_modules/swagger-ui-dist/swagger-ui-es-bundle*.js node_modules/swagger-ui-dist/swagger-ui.js \
 && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete \
 && chmod -R go-w node_modules

# 3. Run: compiled code, production dependencies, the migrations applied at
#    start (prisma/), the served spec (openapi/), as the unprivileged `node`
#    user. The application's files belong to root (COPY's default) and are
#    read-only to `node`: a compromised process cannot rewrite the code it
#    runs. The only place it writes is /app/.data (DATA_DIR).
FROM node:24-alpine
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/.data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/dist ./dist
COPY --from=build /app/prisma ./prisma
COPY --from=build /app/openapi ./openapi
RUN mkdir -p /app/.data && chown node:node /app/.data
# The embedded database and the generated admin key live here when no
# DATABASE_URL is given: keep it on a volume.
VOLUME ["/app/.data"]
USER node
EXPOSE 3000
# Liveness; readiness (database and tools) is /readyz, which compose uses.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node directly (not npm) so SIGTERM reaches the process; migrations run at
# start unless MIGRATE_ON_START=false.
CMD ["node", "dist/src/server.js"]
