// What metrics cost on the hot path: the same requests against two apps over one engine, one with
// METRICS on (the default) and one with it off, alternated A B B A (six times), so that the ratios
// are measured in one run on the same data. Besides requests/s, the process's CPU time per request
// (load generator included, alike on both sides): on a shared machine other processes' load moves
// wall-clock figures far more than CPU time.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../src/config.ts';
import type { Engine } from '../src/storage/engine.ts';
import { buildApp } from '../src/app.ts';
import { buildServices } from '../src/services/index.ts';
import { systemClock } from '../src/lib/clock.ts';
import { SecretBox } from '../src/lib/secret-box.ts';
import { measure, summarize, type LoadResult, type Run } from './load.ts';
import { readOwnRows, seededRlsProject } from './scenarios.ts';
import type { Send } from './workload.ts';

export interface MetricsCost {
  name: string;
  on: LoadResult;
  off: LoadResult;
  /** on/off, the median of the rounds: requests/s, and this process's CPU time per request */
  rpsRatio: number;
  cpuRatio: number;
}

/** CPU microseconds per request of one timed run. */
async function timed(send: Send, opts: { seconds: number; concurrency: number }): Promise<{ run: Run; cpuPerRequest: number }> {
  const before = process.cpuUsage();
  const run = await measure(opts, send);
  const used = process.cpuUsage(before);
  return { run, cpuPerRequest: (used.user + used.system) / Math.max(1, run.requests) };
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

/**
 * A B B A, `rounds` times, each run seconds / (2 * rounds) long. Per round, the ratio of A's
 * requests/s and CPU per request to B's; the median round is reported, so that a burst of another
 * process's load during one round does not decide the figure.
 */
async function compare(a: Send, b: Send, seconds: number, concurrency: number, rounds = 6) {
  const opts = { seconds: seconds / (2 * rounds), concurrency };
  const runs = { a: [] as Run[], b: [] as Run[] };
  const rps: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const [a1, b1, b2, a2] = [await timed(a, opts), await timed(b, opts), await timed(b, opts), await timed(a, opts)];
    runs.a.push(a1.run, a2.run);
    runs.b.push(b1.run, b2.run);
    const count = (x: { run: Run }, y: { run: Run }) => x.run.requests + y.run.requests;
    rps.push(count(a1, a2) / count(b1, b2));
    cpu.push((a1.cpuPerRequest + a2.cpuPerRequest) / (b1.cpuPerRequest + b2.cpuPerRequest));
  }
  return { a: runs.a, b: runs.b, rpsRatio: median(rps), cpuRatio: median(cpu) };
}

async function serve(engine: Engine, config: Config, enabled: boolean, secrets: SecretBox): Promise<{ app: FastifyInstance; base: string }> {
  const own = { ...config, metrics: Object.freeze({ enabled, token: null }) };
  const app = await buildApp({ config: own, engine, services: buildServices(engine, own, systemClock, { secrets }) });
  return { app, base: await app.listen({ port: 0, host: '127.0.0.1' }) };
}

export async function metricsCost(engine: Engine, config: Config, seconds: number): Promise<MetricsCost[]> {
  // one key for both: an API key or token made through one app is valid on the other
  const secrets = new SecretBox(randomBytes(32));
  const on = await serve(engine, config, true, secrets);
  const off = await serve(engine, config, false, secrets);
  try {
    const p = await seededRlsProject(on.base, engine);
    const health = (base: string) => async () => {
      const res = await fetch(`${base}/health`);
      await res.arrayBuffer();
      return res.status === 200;
    };
    const pairs = [
      { name: 'GET 20 rows of 100k under RLS', concurrency: 16, send: (base: string) => readOwnRows(base, p) },
      { name: 'GET /health (the cheapest request)', concurrency: 16, send: health },
    ];
    const out: MetricsCost[] = [];
    for (const pair of pairs) {
      const [a, b] = [pair.send(on.base), pair.send(off.base)];
      await compare(a, b, 1, pair.concurrency, 1); // warm-up
      const r = await compare(a, b, seconds, pair.concurrency);
      out.push({ name: pair.name, on: summarize(`${pair.name}, metrics on`, r.a), off: summarize(`${pair.name}, metrics off`, r.b), rpsRatio: r.rpsRatio, cpuRatio: r.cpuRatio });
    }
    return out;
  } finally {
    await on.app.close();
    await off.app.close();
  }
}
