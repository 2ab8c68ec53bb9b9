import { ConfigError, loadConfig } from '../../src/config';

describe('configuration', () => {
  it('has sensible defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: undefined,
      logLevel: 'info',
      migrateOnStart: true,
      bodyLimit: 1024 * 1024,
      resourceMaxBytes: 262144,
      routerMinConfidence: 0.8,
      toolsHotReload: true,
    });
    expect(c.dataDir).toBe(`${process.cwd()}/.data`);
    expect(c.exportDir).toMatch(/\.data\/exports$/);
  });

  it('treats empty strings as unset', () => {
    const c = loadConfig({ PORT: '', DATABASE_URL: '  ', MIGRATE_ON_START: '' });
    expect(c.port).toBe(3000);
    expect(c.databaseUrl).toBeUndefined();
    expect(c.migrateOnStart).toBe(true);
  });

  it('parses sizes, booleans and numbers', () => {
    const c = loadConfig({
      BODY_LIMIT: '512kb',
      RESOURCE_MAX_BYTES: '1024',
      MIGRATE_ON_START: 'false',
      ROUTER_MIN_CONFIDENCE: '0.9',
      NODE_ENV: 'production',
    });
    expect(c.bodyLimit).toBe(512 * 1024);
    expect(c.resourceMaxBytes).toBe(1024);
    expect(c.migrateOnStart).toBe(false);
    expect(c.routerMinConfidence).toBe(0.9);
    expect(c.toolsHotReload).toBe(false);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['LOG_LEVEL', 'loud'],
    ['MIGRATE_ON_START', 'maybe'],
    ['BODY_LIMIT', 'lots'],
    ['RESOURCE_MAX_BYTES', '0'],
    ['ROUTER_MIN_CONFIDENCE', '1.5'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_REQUEST_TIMEOUT_MS', 'soon'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '-1'],
  ])('refuses %s=%s with a message that names it', (key, value) => {
    let error: unknown;
    try {
      loadConfig({ [key]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(key);
  });

  it('reads the HTTP server timeouts, defaulting keep-alive above a load balancer idle timeout', () => {
    expect(loadConfig({})).toMatchObject({
      headersTimeoutMs: 10000,
      requestTimeoutMs: 60000,
      keepAliveTimeoutMs: 65000,
    });
    const c = loadConfig({
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_REQUEST_TIMEOUT_MS: '9000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '1',
    });
    expect(c).toMatchObject({ headersTimeoutMs: 5000, requestTimeoutMs: 9000, keepAliveTimeoutMs: 1 });
  });

  it('refuses a headers timeout above the request timeout (Node would throw at start)', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '9000', HTTP_REQUEST_TIMEOUT_MS: '5000' })).toThrow(
      /HTTP_HEADERS_TIMEOUT_MS/,
    );
  });

  it('refuses the MCP session cap of before (renamed), rather than ignoring it', () => {
    expect(() => loadConfig({ MCP_MAX_SESSIONS_PER_PRINCIPAL: '50' })).toThrow(/MCP_MAX_STREAMS_PER_PRINCIPAL/);
    expect(loadConfig({ MCP_MAX_STREAMS_PER_PRINCIPAL: '50' }).mcpMaxStreamsPerPrincipal).toBe(50);
  });
});

describe('identity and access settings', () => {
  it('defaults to no JWTs, 1200 requests a minute, loopback-aware hosts and private-network proxies', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      adminApiKey: undefined,
      jwt: undefined,
      consoleOidc: undefined,
      rateLimitPerMinute: 1200,
      allowedOrigins: [],
      allowedHosts: undefined,
      mcpMaxStreamsPerPrincipal: 16,
      mcpMaxStreamsPerOwner: 64,
      trustProxy: 'loopback, linklocal, uniquelocal',
    });
  });

  it('takes JWT settings only all together', () => {
    const all = { AUTH_JWKS_URL: 'https://idp.example/jwks', AUTH_ISSUER: 'https://idp.example/', AUTH_AUDIENCE: 'gw' };
    expect(loadConfig(all).jwt).toEqual({
      jwksUrl: 'https://idp.example/jwks',
      issuer: 'https://idp.example/',
      audience: 'gw',
      roleClaim: 'role',
    });
    expect(() => loadConfig({ AUTH_JWKS_URL: all.AUTH_JWKS_URL })).toThrow(/set all three/);
    expect(() => loadConfig({ ...all, AUTH_JWKS_URL: 'ftp://x' })).toThrow(ConfigError);
  });

  it("takes the console's identity-provider sign-in only with the JWT settings, endpoints both or neither", () => {
    const jwt = { AUTH_JWKS_URL: 'https://idp.example/jwks', AUTH_ISSUER: 'https://idp.example', AUTH_AUDIENCE: 'gw' };
    expect(loadConfig(jwt).consoleOidc).toBeUndefined();
    expect(loadConfig({ ...jwt, CONSOLE_OIDC_CLIENT_ID: 'console' }).consoleOidc).toEqual({
      clientId: 'console',
      scopes: 'openid',
      endpoints: undefined,
    });
    const explicit = {
      ...jwt,
      CONSOLE_OIDC_CLIENT_ID: 'console',
      CONSOLE_OIDC_SCOPES: 'openid  profile',
      CONSOLE_OIDC_AUTHORIZATION_URL: 'https://idp.example/auth',
      CONSOLE_OIDC_TOKEN_URL: 'https://idp.example/token',
    };
    expect(loadConfig(explicit).consoleOidc).toEqual({
      clientId: 'console',
      scopes: 'openid profile',
      endpoints: { authorization: 'https://idp.example/auth', token: 'https://idp.example/token' },
    });
    expect(() => loadConfig({ CONSOLE_OIDC_CLIENT_ID: 'console' })).toThrow(
      /AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE/,
    );
    expect(() => loadConfig({ ...explicit, CONSOLE_OIDC_TOKEN_URL: '' })).toThrow(/set both, or neither/);
    expect(() => loadConfig({ ...explicit, CONSOLE_OIDC_CLIENT_ID: '' })).toThrow(/CONSOLE_OIDC_CLIENT_ID: required/);
    expect(() => loadConfig({ ...explicit, CONSOLE_OIDC_TOKEN_URL: 'javascript:alert(1)' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...explicit, CONSOLE_OIDC_SCOPES: 'openid "x"' })).toThrow(/CONSOLE_OIDC_SCOPES/);
  });

  it('refuses a short ADMIN_API_KEY and parses lists and TRUST_PROXY', () => {
    expect(() => loadConfig({ ADMIN_API_KEY: 'short' })).toThrow(/ADMIN_API_KEY/);
    const c = loadConfig({
      ALLOWED_ORIGINS: 'https://a.example, http://b:8080,',
      ALLOWED_HOSTS: 'gw.example',
      TRUST_PROXY: '2',
    });
    expect(c.allowedOrigins).toEqual(['https://a.example', 'http://b:8080']);
    expect(c.allowedHosts).toEqual(['gw.example']);
    expect(c.trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
  });

  it('reads the participants settings: refresh period, allowed hosts (checked), SECRETS_KEY never shown', () => {
    const c = loadConfig({});
    expect(c.participantRefreshSeconds).toBe(300);
    expect(c.participantAllowedHosts).toEqual([]);
    expect(c.secretsKey).toBeUndefined();
    const set = loadConfig({
      PARTICIPANT_REFRESH_SECONDS: '0',
      PARTICIPANT_ALLOWED_HOSTS: ' 169.254.169.254, metadata.internal ',
    });
    expect(set.participantRefreshSeconds).toBe(0);
    expect(set.participantAllowedHosts).toEqual(['169.254.169.254', 'metadata.internal']);
    expect(() => loadConfig({ PARTICIPANT_ALLOWED_HOSTS: 'http://x/' })).toThrow(ConfigError);
    expect(() => loadConfig({ PARTICIPANT_ALLOWED_HOSTS: 'http://x/' })).toThrow(/PARTICIPANT_ALLOWED_HOSTS/);
    expect(() => loadConfig({ PARTICIPANT_REFRESH_SECONDS: '-1' })).toThrow(/PARTICIPANT_REFRESH_SECONDS/);
  });
});
