// A small closed-loop load generator: `concurrency` workers send requests back to back for
// `seconds`, then requests/s and latency percentiles are reported.
export interface LoadResult {
  name: string;
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

/** One timed run: every request's latency in ms, the failures, the wall time in s. */
export interface Run {
  latencies: number[];
  errors: number;
  elapsed: number;
}

export interface LoadOptions {
  seconds: number;
  concurrency: number;
}

export async function measure(opts: LoadOptions, send: (i: number) => Promise<boolean>): Promise<Run> {
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
  return { latencies, errors, elapsed: (performance.now() - start) / 1000 };
}

/** Runs of the same load counted as one: requests over their summed time, percentiles over all of them. */
export function summarize(name: string, runs: readonly Run[]): LoadResult {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const elapsed = runs.reduce((s, r) => s + r.elapsed, 0);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return {
    name,
    requests: latencies.length,
    errors: runs.reduce((s, r) => s + r.errors, 0),
    rps: elapsed > 0 ? latencies.length / elapsed : 0,
    p50: pct(50),
    p99: pct(99),
  };
}

export async function load(name: string, opts: LoadOptions, send: (i: number) => Promise<boolean>): Promise<LoadResult> {
  return summarize(name, [await measure(opts, send)]);
}

export interface Side {
  name: string;
  send: (i: number) => Promise<boolean>;
}

/**
 * Two loads compared in one run, in the order A B B A, each for half the time: drift on a shared
 * machine (another process waking up, the CPU clock) then weighs on both sides alike.
 */
export async function alternate(a: Side, b: Side, opts: LoadOptions): Promise<[LoadResult, LoadResult]> {
  const half = { ...opts, seconds: opts.seconds / 2 };
  const a1 = await measure(half, a.send);
  const b1 = await measure(half, b.send);
  const b2 = await measure(half, b.send);
  const a2 = await measure(half, a.send);
  return [summarize(a.name, [a1, a2]), summarize(b.name, [b1, b2])];
}
