// npm run bench: the same scenarios on each engine, in one run, over real sockets; then the service
// as a separate server process (start-up, memory, the goals' workload, one project against many);
// `npm run bench -- --peers` adds PostgREST (beside the PostgreSQL engine) and PocketBase (beside the
// embedded one) under the same load. Ends with the goals of issue [E].
//   BENCH_SECONDS (default 5) per measurement; BENCH_ENGINES=sqlite,postgres (default: both if
//   reachable); BENCH_PARTS=scenarios,metrics,process (default all three; metrics: the same reads
//   with METRICS on and off, compared); BENCH_PROJECTS (default 1000);
//   BENCH_CONNECTIONS (default 32: the server-process loads); BENCH_WARMUP seconds (default 5, as
//   peer-bench: the server's JIT; each measured run of a 32-client load also warms up 1 s first);
//   BENCH_SETTLE_MS before the idle RSS reading (default 8000: past IDLE_GC_MS's 5 s, when an idle
//   service has given back what start-up grew); BENCH_PEERS_DIR (the peers' npm cache).
import { loadConfig } from '../src/config.ts';
import { buildApp } from '../src/app.ts';
import { buildServices } from '../src/services/index.ts';
import { systemClock } from '../src/lib/clock.ts';
import { SecretBox } from '../src/lib/secret-box.ts';
import { randomBytes } from 'node:crypto';
import { engineOptions, openEngine } from '../src/storage/open-engine.ts';
import { createTestDatabase, pgAvailable, type EngineName } from '../test/support/postgres.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, type LoadResult } from './load.ts';
import { scenarios } from './scenarios.ts';
import { benchServerProcess, RUN_WARMUP_SECONDS, type ProcessOptions, type ProcessReport } from './process-bench.ts';
import type { PreparedPeer } from './peers/peer.ts';
import { installPocketbase, preparePocketbase } from './peers/pocketbase.ts';
import { installPostgrest, preparePostgrest } from './peers/postgrest.ts';
import { evaluateGoals, formatGoals, type Figures } from './goals.ts';
import { printAligned, printTable } from './report.ts';
import { serviceCommand } from './server-process.ts';
import { metricsCost, type MetricsCost } from './metrics-cost.ts';

type Row = LoadResult & { engine: string };

const num = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const seconds = num('BENCH_SECONDS', 5);
const parts = new Set((process.env.BENCH_PARTS ?? 'scenarios,metrics,process').split(','));
const peers = process.argv.includes('--peers');
const processOptions: ProcessOptions = {
  seconds,
  connections: num('BENCH_CONNECTIONS', 32),
  projects: Math.floor(num('BENCH_PROJECTS', 1000)),
  warmupSeconds: num('BENCH_WARMUP', 5),
  settleMs: num('BENCH_SETTLE_MS', 8000),
};

async function reachableEngines(): Promise<EngineName[]> {
  const engines: EngineName[] = [];
  for (const e of (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as EngineName[]) {
    if (e === 'postgres' && !(await pgAvailable())) {
      console.warn('!!! PostgreSQL not reachable: postgres benchmarks skipped');
      continue;
    }
    engines.push(e);
  }
  return engines;
}

/** The scenarios against the app built in this process (what the bench has always measured), and what metrics cost. */
async function inProcess(kind: EngineName): Promise<{ rows: Row[]; costs: Array<MetricsCost & { engine: string }> }> {
  const rows: Row[] = [];
  const costs: Array<MetricsCost & { engine: string }> = [];
  // A throw-away database, and otherwise the production defaults (pool size, workers, shares, real
  // argon2id cost: login figures include it), opened as main.ts opens them.
  const dataDir = mkdtempSync(join(tmpdir(), 'bp-bench-'));
  const pgDb = kind === 'postgres' ? await createTestDatabase() : null;
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...(pgDb ? { DATABASE_URL: pgDb.url } : {}) });
  const engine = await openEngine(engineOptions(config));
  const app = await buildApp({ config, engine, services: buildServices(engine, config, systemClock, { secrets: new SecretBox(randomBytes(32)) }) });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    for (const s of parts.has('scenarios') ? scenarios : []) {
      const send = await s.setup(address, engine);
      await load(s.name, { seconds: 0.5, concurrency: s.concurrency }, send); // warm-up
      const r = await load(s.name, { seconds, concurrency: s.concurrency }, send).finally(() => s.teardown?.());
      rows.push({ ...r, engine: kind });
      console.error(`${kind} ${s.name}: ${r.rps.toFixed(0)} req/s`);
    }
    if (parts.has('metrics')) for (const c of await metricsCost(engine, config, seconds)) costs.push({ ...c, engine: kind });
  } finally {
    await app.close();
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
    await pgDb?.drop();
  }
  return { rows, costs };
}

/**
 * The server-process benchmarks of every engine; with --peers, PostgREST beside the PostgreSQL
 * engine and PocketBase beside the embedded one.
 */
async function serverProcesses(engines: EngineName[]): Promise<ProcessReport[]> {
  // installed before anything is measured: a failing install should not cost the whole run
  const postgrestBin = peers && engines.includes('postgres') ? installPostgrest() : null;
  if (peers && !engines.includes('postgres')) console.warn('!!! --peers: PostgREST runs beside the PostgreSQL engine, not benchmarked here: skipped');
  const pocketbaseBin = peers && engines.includes('sqlite') ? installPocketbase() : null;
  if (peers && !engines.includes('sqlite')) console.warn('!!! --peers: PocketBase runs beside the embedded (SQLite) engine, not benchmarked here: skipped');
  console.error(`server process: ${serviceCommand().label}`);
  const reports: ProcessReport[] = [];
  for (const kind of engines) {
    let prepared: PreparedPeer | null = null;
    try {
      if (kind === 'postgres' && postgrestBin) prepared = await preparePostgrest(postgrestBin);
      if (kind === 'sqlite' && pocketbaseBin) prepared = await preparePocketbase(pocketbaseBin);
      reports.push(await benchServerProcess(kind, processOptions, prepared));
    } finally {
      await prepared?.drop();
    }
  }
  return reports;
}

const engines = await reachableEngines();
const rows: Row[] = [];
const costs: Array<MetricsCost & { engine: string }> = [];
if (parts.has('scenarios') || parts.has('metrics'))
  for (const kind of engines) {
    const r = await inProcess(kind);
    rows.push(...r.rows);
    costs.push(...r.costs);
  }
const reports = parts.has('process') ? await serverProcesses(engines) : [];

console.log(`\nBaseplate benchmark, ${seconds}s per measurement, node ${process.version}`);
if (rows.length) {
  console.log('\nIn-process scenarios (the app built in the bench process, 16 clients unless stated):');
  printTable(rows);
  printInProcessRatios(rows);
}
if (costs.length) {
  console.log('\nWhat metrics cost (one app with METRICS on, one off, over one engine; A B B A six times):');
  printTable(costs.flatMap((c) => [{ ...c.on, engine: c.engine }, { ...c.off, engine: c.engine }]));
  for (const c of costs) console.log(`${c.engine}: ${c.name}: metrics on/off, median of 6 rounds: req/s ${c.rpsRatio.toFixed(3)}x, CPU per request ${c.cpuRatio.toFixed(3)}x`);
}
if (reports.length) printProcessReports(reports);
const figures: Figures = Object.fromEntries(reports.map((r) => [r.engine, r.figures]));
for (const { engine, peer } of reports) if (peer) figures[engine === 'postgres' ? 'postgrest' : 'pocketbase'] = { reads: peer.reads, inserts: peer.inserts };
console.log(`\nGoals (measured in this run on ${cpus().length} CPU(s); compare within a run, never assert):`);
for (const line of formatGoals(evaluateGoals(figures))) console.log(line);

function printInProcessRatios(rows: Row[]) {
  for (const name of new Set(rows.map((r) => r.name))) {
    const s = rows.find((r) => r.name === name && r.engine === 'sqlite');
    const p = rows.find((r) => r.name === name && r.engine === 'postgres');
    if (s && p) console.log(`ratio sqlite/postgres ${name}: ${(s.rps / p.rps).toFixed(2)}x`);
  }
  // tenant isolation: how much another project's worst query costs a well-behaved project's reads
  for (const kind of ['sqlite', 'postgres']) {
    const alone = rows.find((r) => r.engine === kind && r.name === 'GET 20 rows of 100k under RLS');
    const noisy = rows.find((r) => r.engine === kind && r.name.startsWith('GET 20 rows of 100k under RLS, another'));
    if (alone && noisy)
      console.log(`${kind}: reads beside another project's worst query: p99 ${noisy.p99.toFixed(1)} ms vs ${alone.p99.toFixed(1)} ms alone (${(noisy.p99 / alone.p99).toFixed(2)}x), req/s ${(noisy.rps / alone.rps).toFixed(2)}x`);
  }
}

function printProcessReports(reports: ProcessReport[]) {
  const o = processOptions;
  console.log(`\nServer process (${serviceCommand().label}; pairs measured A B B A, ${o.seconds / 2}s each; the 32-client loads by autocannon, each run after ${RUN_WARMUP_SECONDS} s of warm-up):`);
  const loads: Row[] = [];
  for (const r of reports) {
    const f = r.figures;
    for (const l of [f.reads, f.inserts, f.oneProject, f.randomProjects]) if (l) loads.push({ ...l, engine: r.engine });
    if (r.peer) loads.push({ ...r.peer.reads, engine: r.peer.name }, { ...r.peer.inserts, engine: r.peer.name });
  }
  printTable(loads);
  const mib = (v: number) => `${v.toFixed(1)} MiB`;
  const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log('');
  printAligned(
    ['server', 'start-up (empty)', `start-up (${o.projects + 1} projects)`, 'idle RSS', 'peak RSS, 100k reads', `peak RSS, ${o.projects} projects`, 'set-up'],
    reports.flatMap((r) => [
      [r.engine, secs(r.startupEmptyMs), secs(r.figures.startupMs!), mib(r.figures.idleRssMiB!), mib(r.peakReadsRssMiB), mib(r.peakRandomRssMiB), `${r.setupSeconds.toFixed(0)} s`],
      ...(r.peer ? [[r.peer.name, '', secs(r.peer.startupMs), mib(r.peer.idleRssMiB), mib(r.peer.peakReadRssMiB), '', '']] : []),
    ]),
  );
  for (const f of reports.flatMap((r) => r.failures)) console.log(`FAILED ANSWERS ${f}`);
  for (const r of reports) {
    const f = r.figures;
    if (f.oneProject && f.randomProjects) console.log(`${r.engine}: a random project of ${o.projects} / one project: p50 ${(f.randomProjects.p50 / f.oneProject.p50).toFixed(2)}x, req/s ${(f.randomProjects.rps / f.oneProject.rps).toFixed(2)}x`);
    if (r.peer && f.reads && f.inserts)
      console.log(`${r.engine}/${r.peer.name}: reads req/s ${(f.reads.rps / r.peer.reads.rps).toFixed(2)}x, p50 ${(f.reads.p50 / r.peer.reads.p50).toFixed(2)}x, p99 ${(f.reads.p99 / r.peer.reads.p99).toFixed(2)}x; inserts req/s ${(f.inserts.rps / r.peer.inserts.rps).toFixed(2)}x, p99 ${(f.inserts.p99 / r.peer.inserts.p99).toFixed(2)}x`);
  }
}
