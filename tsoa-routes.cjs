/**
 * The configuration `tsoa routes` runs with: tsoa.json without the spec's
 * root security. The spec keeps `security: bearer` on every operation (so
 * Swagger UI's Authorize sends the token), but the routes need no check of
 * their own: src/http/authenticate.ts authenticates every request before
 * routing, and controllers take the principal from it (principalOf answers
 * 401 without one). tsoa's per-route check would only repeat that, at a
 * measurable cost on negotiate (docs/BENCHMARKS.md).
 */
const config = require('./tsoa.json');

module.exports = { ...config, spec: { ...config.spec, rootSecurity: [] } };
