// A small closed-loop load generator: `concurrency` workers send requests back to back for
// `seconds`, then requests/s and latency percentiles are reported.
import type { Send } from './workload.ts';

export interface LoadResult {
  name: string;
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

/**
 * One timed run: requests answered, the failures, the wall time in s, latency percentiles in ms,
 * and every request's latency when the load generator reports them (the closed loop below does).
 */
export interface Run {
  requests: number;
  errors: number;
  elapsed: number;
  p50: number;
  p99: number;
  latencies?: number[];
}

export interface LoadOptions {
  seconds: number;
  concurrency: number;
}

export async function measure(opts: LoadOptions, send: Send): Promise<Run> {
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const deadline = performance.now() + opts.seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (performance.now() < deadline) {
        const i = n++;
        const t0 = performance.now();
        const ok = await send(i).catch(() => false);
        latencies.push(performance.now() - t0);
        if (!ok) errors++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, elapsed: (performance.now() - start) / 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99), latencies };
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/**
 * Runs of the same load counted as one: requests over their summed time; percentiles over all the
 * latencies when every run kept them, else each run's percentile weighted by its requests.
 */
export function summarize(name: string, runs: readonly Run[]): LoadResult {
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  const elapsed = runs.reduce((s, r) => s + r.elapsed, 0);
  const all = runs.every((r) => r.latencies) ? runs.flatMap((r) => r.latencies!).sort((a, b) => a - b) : null;
  const pct = (p: 50 | 99) => (all ? percentile(all, p) : runs.reduce((s, r) => s + r[`p${p}`] * r.requests, 0) / Math.max(1, requests));
  return { name, requests, errors: runs.reduce((s, r) => s + r.errors, 0), rps: elapsed > 0 ? requests / elapsed : 0, p50: pct(50), p99: pct(99) };
}

export async function load(name: string, opts: LoadOptions, send: Send): Promise<LoadResult> {
  return summarize(name, [await measure(opts, send)]);
}

/** A load that can be run for a while: measure() over a send function, or cannon() over a request. */
export interface Side {
  name: string;
  run: (opts: LoadOptions) => Promise<Run>;
}

/** A side whose load is measure()'s closed loop over `send`. */
export const closedLoop = (name: string, send: Send): Side => ({ name, run: (opts) => measure(opts, send) });

/**
 * Two loads compared in one run, in the order A B B A, each for half the time: drift on a shared
 * machine (another process waking up, the CPU clock) then weighs on both sides alike.
 */
export async function alternate(a: Side, b: Side, opts: LoadOptions): Promise<[LoadResult, LoadResult]> {
  const half = { ...opts, seconds: opts.seconds / 2 };
  const a1 = await a.run(half);
  const b1 = await b.run(half);
  const b2 = await b.run(half);
  const a2 = await a.run(half);
  return [summarize(a.name, [a1, a2]), summarize(b.name, [b1, b2])];
}
