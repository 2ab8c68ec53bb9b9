/**
 * One short-lived connection to a Postgres server for administration
 * (CREATE / DROP DATABASE), closed whatever happens. The benchmarks
 * (bench/) import it from here too: they set up their databases the same
 * way, and test support never imports bench/.
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
