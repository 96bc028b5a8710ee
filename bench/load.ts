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

export async function load(name: string, opts: { seconds: number; concurrency: number }, send: (i: number) => Promise<boolean>): Promise<LoadResult> {
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
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return { name, requests: latencies.length, errors, rps: latencies.length / elapsed, p50: pct(50), p99: pct(99) };
}

export function printTable(rows: (LoadResult & { engine: string })[]): void {
  const head = ['engine', 'scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'errors'];
  const body = rows.map((r) => [r.engine, r.name, r.rps.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), String(r.requests), String(r.errors)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(head));
  for (const b of body) console.log(line(b));
}
