// npm run bench: the same scenarios on each engine, in one run, over real sockets.
// BENCH_SECONDS (default 5) per scenario; BENCH_ENGINES=sqlite,postgres (default: both if reachable).
import { loadConfig } from '../src/config.ts';
import { buildApp } from '../src/app.ts';
import { buildServices } from '../src/services/index.ts';
import { systemClock } from '../src/lib/clock.ts';
import { SecretBox } from '../src/lib/secret-box.ts';
import { randomBytes } from 'node:crypto';
import { engineOptions, openEngine } from '../src/storage/open-engine.ts';
import { createTestDatabase, pgAvailable, type EngineName } from '../test/support/postgres.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, type LoadResult } from './load.ts';
import { printTable } from './report.ts';
import { scenarios } from './scenarios.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const wanted = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as EngineName[];
const engines: EngineName[] = [];
for (const e of wanted) {
  if (e === 'postgres' && !(await pgAvailable())) {
    console.warn('!!! PostgreSQL not reachable: postgres benchmarks skipped');
    continue;
  }
  engines.push(e);
}

const rows: (LoadResult & { engine: string })[] = [];
for (const kind of engines) {
  // A throw-away database, and otherwise the production defaults (pool size, workers, shares, real
  // argon2id cost: login figures include it), opened as main.ts opens them.
  const dataDir = mkdtempSync(join(tmpdir(), 'bp-bench-'));
  const pgDb = kind === 'postgres' ? await createTestDatabase() : null;
  const cleanup = async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await pgDb?.drop();
  };
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...(pgDb ? { DATABASE_URL: pgDb.url } : {}) });
  const engine = await openEngine(engineOptions(config));
  const app = await buildApp({ config, engine, services: buildServices(engine, config, systemClock, { secrets: new SecretBox(randomBytes(32)) }) });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    for (const s of scenarios) {
      const send = await s.setup(address, engine);
      await load(s.name, { seconds: 0.5, concurrency: s.concurrency }, send); // warm-up
      const r = await load(s.name, { seconds, concurrency: s.concurrency }, send).finally(() => s.teardown?.());
      rows.push({ ...r, engine: kind });
      console.error(`${kind} ${s.name}: ${r.rps.toFixed(0)} req/s`);
    }
  } finally {
    await app.close();
    await engine.close();
    await cleanup();
  }
}
console.log(`\nBaseplate benchmark, ${seconds}s per scenario, node ${process.version}`);
printTable(rows);
for (const name of new Set(rows.map((r) => r.name))) {
  const s = rows.find((r) => r.name === name && r.engine === 'sqlite');
  const p = rows.find((r) => r.name === name && r.engine === 'postgres');
  if (s && p) console.log(`ratio sqlite/postgres ${name}: ${(s.rps / p.rps).toFixed(2)}x`);
}
// tenant isolation: how much another project's worst query costs a well-behaved project's reads
for (const kind of engines) {
  const alone = rows.find((r) => r.engine === kind && r.name === 'GET 20 rows of 100k under RLS');
  const noisy = rows.find((r) => r.engine === kind && r.name.startsWith('GET 20 rows of 100k under RLS, another'));
  if (alone && noisy)
    console.log(`${kind}: reads beside another project's worst query: p99 ${noisy.p99.toFixed(1)} ms vs ${alone.p99.toFixed(1)} ms alone (${(noisy.p99 / alone.p99).toFixed(2)}x), req/s ${(noisy.rps / alone.rps).toFixed(2)}x`);
}
