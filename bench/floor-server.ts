/**
 * The physical floor of this stack on this machine: bare express + `pg`,
 * each request doing only the single SQL statement that the equivalent
 * negotiate action ends in. Started by bench/http-bench.ts as its own process.
 *
 *   DATABASE_URL=... PORT=... tsx bench/floor-server.ts
 *
 * With FLOOR_PREBORN=1 it listens through the service's own server
 * construction (src/http/express-server.ts: requests and responses born with
 * express's prototypes), for comparison: the same floor without express's
 * per-request prototype change.
 */
import { createServer } from 'node:http';
import express from 'express';
import { Pool } from 'pg';
import { createExpressServer } from '../src/http/express-server';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
const app = express();
app.use(express.json());

app.post('/read/:conv/:name', async (req, res) => {
  const { rows } = await pool.query(
    'SELECT name, data, created_by, updated_by, created_at, updated_at, version FROM resources WHERE conversation_id = $1 AND name = $2',
    [req.params.conv, req.params.name],
  );
  res.json(rows[0]);
});

app.post('/update/:conv/:name', async (req, res) => {
  const body = req.body as { data?: unknown };
  const { rows } = await pool.query(
    `UPDATE resources SET data = $3::jsonb, updated_by = 'floor', updated_at = now(), version = version + 1
     WHERE conversation_id = $1 AND name = $2
     RETURNING name, data, created_by, updated_by, created_at, updated_at, version`,
    [req.params.conv, req.params.name, JSON.stringify(body.data)],
  );
  res.json(rows[0]);
});

const server = process.env.FLOOR_PREBORN === '1' ? createExpressServer(app) : createServer(app);
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
