/**
 * One short-lived connection to a Postgres server for administration
 * (CREATE / DROP DATABASE), closed whatever happens. Shared by the
 * benchmarks and test/support, which set up their databases the same way.
 */
import { Client } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';

export async function withAdmin<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client(parseIntoClientConfig(url));
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
