// Plain-text tables for the benchmark's output.
import type { LoadResult } from './load.ts';

/** Columns padded to their widest cell. */
export function printAligned(head: string[], body: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd();
  console.log(line(head));
  for (const b of body) console.log(line(b));
}

export function printTable(rows: (LoadResult & { engine: string })[]): void {
  printAligned(
    ['engine', 'scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'errors'],
    rows.map((r) => [r.engine, r.name, r.rps.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), String(r.requests), String(r.errors)]),
  );
}
