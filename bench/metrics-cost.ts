// What metrics cost on the hot path: the same requests against two apps over one engine, one with
// METRICS on (the default) and one with it off, alternated A B B A (three times), so that the ratios
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

export interface MetricsCost {
  name: string;
  on: LoadResult;
  off: LoadResult;
  /** CPU microseconds of this process per request */
  cpuOn: number;
  cpuOff: number;
}

type Send = (i: number) => Promise<boolean>;

/** A B B A, `rounds` times, each run seconds / (2 * rounds) long; CPU time per side. */
async function compare(a: Send, b: Send, seconds: number, concurrency: number, rounds = 3) {
  const runs: Record<'a' | 'b', { runs: Run[]; cpu: number }> = { a: { runs: [], cpu: 0 }, b: { runs: [], cpu: 0 } };
  const opts = { seconds: seconds / (2 * rounds), concurrency };
  for (let r = 0; r < rounds; r++)
    for (const side of ['a', 'b', 'b', 'a'] as const) {
      const cpu = process.cpuUsage();
      runs[side].runs.push(await measure(opts, side === 'a' ? a : b));
      const used = process.cpuUsage(cpu);
      runs[side].cpu += used.user + used.system;
    }
  const perRequest = (s: { runs: Run[]; cpu: number }) => s.cpu / s.runs.reduce((n, x) => n + x.latencies.length, 0);
  return { a: runs.a.runs, b: runs.b.runs, cpuA: perRequest(runs.a), cpuB: perRequest(runs.b) };
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
      out.push({ name: pair.name, on: summarize(`${pair.name}, metrics on`, r.a), off: summarize(`${pair.name}, metrics off`, r.b), cpuOn: r.cpuA, cpuOff: r.cpuB });
    }
    return out;
  } finally {
    await on.app.close();
    await off.app.close();
  }
}
