/**
 * `npm run bench`: the router micro-benchmark, then negotiate over HTTP
 * against the express + pg floor, then MCP tools/call against REST negotiate,
 * then a participant's remote call against the same upstream called directly, then resource queries over
 * 100,000 resources against the unfiltered page. Prints markdown tables; docs/BENCHMARKS.md
 * records a run. The HTTP part needs a Postgres server that allows CREATE
 * DATABASE: BENCH_DATABASE_URL, else DATABASE_URL, else the machine's
 * postgresql://root@127.0.0.1:5432/postgres.
 */
import { cpus } from 'node:os';
import { formatHttpBench, runHttpBench } from './http-bench';
import { formatMcpBench, runMcpBench } from './mcp-bench';
import { formatParticipantsBench, runParticipantsBench } from './participants-bench';
import { formatQueryBench, runQueryBench } from './query-bench';
import { formatRouterBench, runRouterBench } from './router-bench';

async function main(): Promise<void> {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  process.stdout.write(`Machine: ${cpus().length} cores (${cpu}), Node ${process.version}\n\n`);
  process.stdout.write('## Intent router alone\n\n');
  process.stdout.write(`${formatRouterBench(await runRouterBench())}\n\n`);
  const url = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  process.stdout.write('## negotiate over HTTP vs the express + pg floor\n\n');
  process.stdout.write(`${formatHttpBench(await runHttpBench(url))}\n\n`);
  process.stdout.write('## MCP tools/call vs REST negotiate, the same read\n\n');
  process.stdout.write(`${formatMcpBench(await runMcpBench(url))}\n\n`);
  process.stdout.write(
    '## A remote tool (server-everything echo over Streamable HTTP): through the gateway vs direct\n\n',
  );
  process.stdout.write(`${formatParticipantsBench(await runParticipantsBench(url))}\n\n`);
  process.stdout.write('## Resource queries: filters over 100,000 resources vs the unfiltered page\n\n');
  process.stdout.write(`${formatQueryBench(await runQueryBench(url))}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
