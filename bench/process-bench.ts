// The benchmarks against the service as a separate server process, started as production starts
// it: start-up time, idle and peak resident memory, the workload's reads and inserts, one project
// against many, and (with --peers) a peer under the same load in alternation: PostgREST beside the
// PostgreSQL engine, PocketBase beside the embedded one.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestDatabase, type EngineName, type TestDatabase } from '../test/support/postgres.ts';
import { api, eachLimit } from './api.ts';
import type { EngineFigures } from './goals.ts';
import { cannon } from './cannon.ts';
import { alternate, closedLoop, measure, summarize, type LoadResult, type Side } from './load.ts';
import type { Peer, PreparedPeer } from './peers/peer.ts';
import { createSmallProjects, type SmallProject } from './projects.ts';
import { cleanupOnInterrupt, freePort, peakSampler, resetPeak, startService, treeMemoryMiB, type ServiceProcess } from './server-process.ts';
import { failed, setupBaseplateTodos, takeFailures, type Endpoint } from './workload.ts';
import { LAST_USED_RESOLUTION_MS } from '../src/services/keys.ts';

export interface ProcessOptions {
  seconds: number;
  connections: number;
  projects: number;
  warmupSeconds: number;
  /** idle time between the first /health 200 and the idle RSS reading */
  settleMs: number;
}

export interface PeerFigures {
  name: string;
  startupMs: number;
  idleRssMiB: number;
  peakReadRssMiB: number;
  reads: LoadResult;
  inserts: LoadResult;
}

export interface ProcessReport {
  engine: EngineName;
  figures: EngineFigures;
  startupEmptyMs: number;
  setupSeconds: number;
  peakReadsRssMiB: number;
  peakRandomRssMiB: number;
  peer?: PeerFigures;
  /** failed answers during the measurements, by kind */
  failures: string[];
}

interface Store {
  env: Record<string, string>;
  dir: string;
  db: TestDatabase | null;
}

interface SetUp {
  todos: { read: Endpoint; insert: Endpoint };
  projects: SmallProject[];
  /** when the set-up had used every small project's key (performance.now()) */
  keysUsedBy: number;
}

/** At most every engine's default per-project share (SQLite 2 of 4 workers, PostgreSQL 4 of 8 connections). */
export const PROJECT_CLIENTS = 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchServerProcess(kind: EngineName, opts: ProcessOptions, peer: PreparedPeer | null): Promise<ProcessReport> {
  const dir = mkdtempSync(join(tmpdir(), 'bp-bench-process-'));
  const db = kind === 'postgres' ? await createTestDatabase() : null;
  const store: Store = { dir, db, env: { MASTER_KEY: randomBytes(32).toString('hex'), ...(db ? { DATABASE_URL: db.url } : { DATA_DIR: join(dir, 'data') }) } };
  const cleanup = cleanupOnInterrupt(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });
  try {
    // the measured server listens where the set-up one did: the set-up's request closures stay valid
    const port = await freePort();
    const t0 = performance.now();
    const { setUp, startupEmptyMs } = await setUpStore(kind, store, port, opts.projects);
    const setupSeconds = (performance.now() - t0) / 1000;
    console.error(`${kind} server process: set up in ${setupSeconds.toFixed(0)} s`);
    return { engine: kind, startupEmptyMs, setupSeconds, ...(await measureServer(kind, store, port, setUp, opts, peer)) };
  } finally {
    await cleanup();
  }
}

/**
 * Builds the workload project and the small projects through the API of a first server, then stops
 * it. That server hashes passwords cheaply (ARGON2_*): the 1,000 end users' registrations are set-up,
 * not what is measured; the measured server runs with the production defaults.
 */
async function setUpStore(kind: EngineName, store: Store, port: number, projects: number): Promise<{ setUp: SetUp; startupEmptyMs: number }> {
  const srv = await startService({ ...store.env, ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1' }, join(store.dir, 'setup.log'), port);
  try {
    const owner = await api(srv.base, 'POST', '/auth/register', { name: 'bench', email: 'bench@example.com', password: 'bench password' });
    const todos = await setupBaseplateTodos(srv.base, owner.token);
    console.error(`${kind} server process: 100,000 todos loaded; creating ${projects} projects`);
    const small = await createSmallProjects(srv.base, owner.token, projects, (n) => console.error(`  ${n} projects`));
    return { setUp: { todos, projects: small, keysUsedBy: performance.now() }, startupEmptyMs: srv.startupMs };
  } finally {
    await srv.stop();
    // fresh planner statistics after the bulk load, as autovacuum would leave them (PostgREST's
    // table gets the same)
    if (store.db) await settle(store.db.url);
  }
}

/**
 * The database as autovacuum and the checkpointer would leave it, before anything is measured: a
 * thousand projects' tables added about 20,000 relations to the catalogs, whose vacuum autovacuum
 * otherwise started during the measurements, and the set-up's writes wait for a checkpoint. Both
 * ran into some runs' reads and not others' (PostgreSQL reads 1.2x to 1.7x PostgREST's over four
 * runs of one build).
 */
async function settle(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('VACUUM ANALYZE');
    await c.query('CHECKPOINT');
  } finally {
    await c.end();
  }
}

async function measureServer(kind: EngineName, store: Store, port: number, setUp: SetUp, opts: ProcessOptions, prepared: PreparedPeer | null) {
  const srv = await startService(store.env, join(store.dir, 'server.log'), port);
  let peer: Peer | null = null;
  try {
    await sleep(opts.settleMs);
    const idleRssMiB = treeMemoryMiB(srv.pid, 'VmRSS');
    console.error(`${kind} server process: up in ${srv.startupMs.toFixed(0)} ms, idle RSS ${idleRssMiB.toFixed(1)} MiB`);
    let peerIdle = 0;
    if (prepared) {
      peer = await prepared.start(join(store.dir, 'peer.log'));
      await sleep(opts.settleMs);
      peerIdle = treeMemoryMiB(peer.server.pid, 'VmRSS');
      console.error(`${peer.name}: up in ${peer.server.startupMs.toFixed(0)} ms, idle RSS ${peerIdle.toFixed(1)} MiB`);
    }
    const r = await readPhase(kind, srv, setUp.todos.read, peer, opts);
    const p = await projectsPhase(kind, srv, setUp, opts);
    const w = await insertPhase(kind, setUp.todos.insert, peer, opts);
    // the goal's "under read load" is the larger peak: the workload's reads or the many projects'
    const figures: EngineFigures = { reads: r.reads, inserts: w.inserts, oneProject: p.one, randomProjects: p.random, projects: setUp.projects.length, idleRssMiB, peakReadRssMiB: Math.max(r.peak, p.peak), startupMs: srv.startupMs };
    const peerFigures = peer && r.peer && w.peer ? { name: peer.name, startupMs: peer.server.startupMs, idleRssMiB: peerIdle, peakReadRssMiB: r.peerPeak, reads: r.peer, inserts: w.peer } : undefined;
    return { figures, peakReadsRssMiB: r.peak, peakRandomRssMiB: p.peak, peer: peerFigures, failures: [...r.failures, ...p.failures, ...w.failures] };
  } catch (err) {
    throw new Error(`${kind} server process: ${(err as Error).message}\n--- server log (end) ---\n${srv.logTail()}`);
  } finally {
    await srv.stop();
    await peer?.server.stop();
  }
}

/** Each measured run's own warm-up: in alternation each side has just been idle. */
export const RUN_WARMUP_SECONDS = 1;

/** autocannon repeating the endpoint's request (a read expects the answer it gave just before). */
function cannonSide(name: string, endpoint: Endpoint): Side {
  return { name, run: async (opts) => cannon(await endpoint.cannon(), opts, RUN_WARMUP_SECONDS, failed) };
}

/**
 * A 32-client load of the endpoint, with a peer's in alternation: each warmed up for BENCH_WARMUP
 * by the checked closed loop (the server's JIT: the first seconds of a fresh server read about a
 * third slower), then measured by autocannon.
 */
async function cannonPhase(name: string, ours: Endpoint, theirs: Endpoint | undefined, opts: ProcessOptions): Promise<[LoadResult, LoadResult | undefined]> {
  const warm = { seconds: opts.warmupSeconds, concurrency: opts.connections };
  await measure(warm, ours.send);
  if (theirs) await measure(warm, theirs.send);
  const load_ = { seconds: opts.seconds, concurrency: opts.connections };
  if (theirs) return alternate(cannonSide(name, ours), cannonSide(name, theirs), load_);
  return [summarize(name, [await cannonSide(name, ours).run(load_)]), undefined];
}

/** The workload's reads; with a peer, both in alternation. Peak RSS is the reads' own (warm-up included, set-up excluded). */
async function readPhase(kind: EngineName, srv: ServiceProcess, read: Endpoint, peer: Peer | null, opts: ProcessOptions) {
  const sampler = peakSampler(srv.pid, resetPeak(srv.pid));
  const peerSampler = peer ? peakSampler(peer.server.pid, resetPeak(peer.server.pid)) : null;
  const name = `GET 20 of 100k todos under RLS (${opts.connections} clients)`;
  const [reads, peerReads] = await cannonPhase(name, read, peer?.read, opts);
  const peak = sampler.stop();
  const peerPeak = peerSampler?.stop() ?? 0;
  console.error(`${kind} server process reads: ${reads.rps.toFixed(0)} req/s, peak RSS ${peak.toFixed(1)} MiB${peerReads ? `; ${peer!.name}: ${peerReads.rps.toFixed(0)} req/s, peak RSS ${peerPeak.toFixed(1)} MiB` : ''}`);
  return { reads, peak, peer: peerReads, peerPeak, failures: noteFailures(`${kind} reads`) };
}

/**
 * Reads of every project before the projects phase is measured, each round in another order: the
 * figure is a server whose projects are in use, not its first minute. A project's first read
 * resolves its caller the long way, its second is the first run of its guarded read, which
 * PostgreSQL prepares at the next one and plans for its values five times before it keeps a
 * generic plan (services/data-plane.ts, storage/postgres/postgres-db.ts).
 */
const PROJECT_WARM_READS = 8;

/**
 * One small project read over and over, against a random one of all of them each time, in
 * alternation, once every project has been read PROJECT_WARM_READS times. PROJECT_CLIENTS clients,
 * not the full load: with 32, one project would wait for its fair share of the engine
 * (PROJECT_CONCURRENCY) while random ones spread over all of it, and p50 would measure that queue
 * instead of what a request costs.
 */
async function projectsPhase(kind: EngineName, srv: ServiceProcess, { projects, keysUsedBy }: SetUp, opts: ProcessOptions) {
  // Each key records its last use once a minute (services/keys.ts), on its first request after
  // that: the set-up used every key, so a minute later each one's next read goes the long way and
  // writes. Spread over a minute that is what a server with these projects in use does (a
  // thousand keys, 17 such reads a second); falling all within the measured seconds it is not.
  // So the first round waits for the minute: it renews every key, and the rest is within the next.
  const wait = keysUsedBy + LAST_USED_RESOLUTION_MS + 1000 - performance.now();
  if (wait > 0) {
    console.error(`${kind} server process: ${(wait / 1000).toFixed(0)} s until the set-up's use of the keys is a minute old`);
    await sleep(wait);
  }
  for (let round = 0; round < PROJECT_WARM_READS; round++) {
    const unanswered: string[] = [];
    await eachLimit(shuffled(projects), round === 0 ? 8 : PROJECT_CLIENTS, async (p) => {
      if (!(await p.read(0))) unanswered.push(p.pid);
    });
    if (unanswered.length) throw new Error(`${unanswered.length} small projects did not answer their read (${unanswered.slice(0, 3).join(', ')})`);
  }
  const sampler = peakSampler(srv.pid, resetPeak(srv.pid));
  const one = closedLoop(`GET 20 rows, 1 project of ${projects.length} (${PROJECT_CLIENTS} clients)`, projects[0]!.read);
  const random = closedLoop(`GET 20 rows, a random project of ${projects.length} (${PROJECT_CLIENTS} clients)`, (i) => projects[Math.floor(Math.random() * projects.length)]!.read(i));
  const [a, b] = await alternate(one, random, { seconds: opts.seconds, concurrency: PROJECT_CLIENTS });
  const peak = sampler.stop();
  console.error(`${kind} server process: one project p50 ${a.p50.toFixed(2)} ms, random projects p50 ${b.p50.toFixed(2)} ms, peak RSS ${peak.toFixed(1)} MiB`);
  return { one: a, random: b, peak, failures: noteFailures(`${kind} projects`) };
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function insertPhase(kind: EngineName, insert: Endpoint, peer: Peer | null, opts: ProcessOptions) {
  const name = `POST one todo under RLS (${opts.connections} clients)`;
  const [inserts, peerInserts] = await cannonPhase(name, insert, peer?.insert, opts);
  console.error(`${kind} server process inserts: ${inserts.rps.toFixed(0)} req/s${peerInserts ? `; ${peer!.name}: ${peerInserts.rps.toFixed(0)} req/s` : ''}`);
  return { inserts, peer: peerInserts, failures: noteFailures(`${kind} inserts`) };
}

/** The failed answers of a phase (its warm-up included), printed now and kept for the summary. */
function noteFailures(phase: string): string[] {
  const out = takeFailures().map((f) => `${phase}: ${f}`);
  for (const f of out) console.error(`  failed: ${f}`);
  return out;
}
