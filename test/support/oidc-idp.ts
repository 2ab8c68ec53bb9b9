/**
 * The OpenID Provider of test/fixtures/oidc-idp.mjs (oidc-provider), in a
 * process of its own: started, its issuer read from its first line, stopped.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PROJECT_ROOT } from '../../src/project-root';

export interface TestIdp {
  issuer: string;
  close(): Promise<void>;
}

export interface TestIdpOptions {
  clientId: string;
  redirectUri: string;
  /** The access tokens' audience: a URI (a resource indicator). */
  audience: string;
  /** Subjects whose tokens say role admin. */
  admins?: string[];
}

export async function startTestIdp(options: TestIdpOptions): Promise<TestIdp> {
  const child = spawn(
    process.execPath,
    [join(PROJECT_ROOT, 'test', 'fixtures', 'oidc-idp.mjs'), JSON.stringify(options)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const lines = createInterface({ input: child.stdout });
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the test IdP did not start within 15 s: ${stderr}`)), 15_000);
    child.once('exit', (code) => reject(new Error(`the test IdP exited (${code}): ${stderr}`)));
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { issuer: string }).issuer);
    });
  });
  return {
    issuer,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
