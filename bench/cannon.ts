// The load generator of the 32-client loads: autocannon (the tool issue [E]'s goals were measured
// with, and ../shared/peer-bench's) in a child process of its own, so that generating the load
// costs what it costs there (about 40 µs of CPU per request) and shares no event loop with the
// bench. The bench's fetch() loop cost several times that per request, on the same two cores as
// the servers measured: it made every server look alike (see the README's Benchmarks).
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import type { LoadOptions, Run } from './load.ts';

/** One request, repeated by every connection. */
export interface HttpLoad {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** the POST body; autocannon puts a fresh id where it says `[<id>]` */
  body?: string;
  /** the status every answer must have */
  status: number;
  /** the body every answer must have, byte for byte (a read's answer, checked once beforehand) */
  expectBody?: string;
}

interface CannonResult {
  duration: number;
  errors: number;
  mismatches: number;
  statusCodeStats: Record<string, { count: number }>;
  latency: { p50: number; p99: number };
  requests: { total: number };
  warmup?: CannonResult;
}

const autocannonMain = createRequire(import.meta.url).resolve('autocannon');

/**
 * The child: autocannon's own API with the options read from stdin (its command line would take a
 * JSON answer starting with '[' for a list of sub-arguments), the result as JSON on stdout. The
 * promise form: with a callback autocannon skips the warm-up.
 */
const CHILD = `let s = ''; process.stdin.on('data', (c) => (s += c)).on('end', () => require(process.argv[1])(JSON.parse(s)).then(
  (r) => process.stdout.write(JSON.stringify(r)),
  (err) => { console.error(err.message); process.exit(1); },
));`;

/** autocannon stops at its next sample after the duration: every 100 ms, not its default second. */
const SAMPLE_MS = 100;

/**
 * One timed run, after `warmupSeconds` of the same load that are not counted (a side measured
 * after a pause would otherwise start cold: JIT, pool, caches). A failure is a connection error or
 * time-out, an answer with another status or another body than `expectBody` (counted once, in
 * the warm-up too), or a run that got no answer at all; `onFailures` is told what they were.
 * Latencies are whole ms (autocannon's histogram).
 */
export async function cannon(load: HttpLoad, opts: LoadOptions, warmupSeconds: number, onFailures: (what: string) => void): Promise<Run> {
  const { status: _, ...request } = load;
  const warmup = warmupSeconds > 0 ? { warmup: { connections: opts.concurrency, duration: warmupSeconds } } : {};
  const options = { ...request, connections: opts.concurrency, duration: opts.seconds, sampleInt: SAMPLE_MS, idReplacement: load.body !== undefined, ...warmup };
  const out = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ['-e', CHILD, autocannonMain],
      { maxBuffer: 1 << 24, timeout: (warmupSeconds + opts.seconds + 30) * 1000, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => (err ? reject(new Error(`autocannon: ${err.message} ${stderr}`)) : resolve(stdout)),
    );
    child.stdin!.on('error', () => undefined); // a child that died early: its exit reports it
    child.stdin!.end(JSON.stringify(options));
  });
  const r = JSON.parse(out) as CannonResult;
  const failures = (x: CannonResult) => {
    const answers = x.requests.total;
    const wrong = Math.min(answers, answers - (x.statusCodeStats[String(load.status)]?.count ?? 0) + x.mismatches);
    return { answers, wrong, errors: x.errors + wrong + (answers === 0 ? 1 : 0) };
  };
  const run = failures(r);
  const warm = r.warmup ? failures(r.warmup).errors : 0;
  if (run.errors || warm)
    onFailures(
      `${load.method} ${r.errors} errors or time-outs, ${run.wrong} of ${run.answers} answers with another status or body ${JSON.stringify(r.statusCodeStats)}, ${r.mismatches} bodies other than the checked answer; ${warm} failures in the warm-up`,
    );
  return { requests: run.answers, errors: run.errors + warm, elapsed: r.duration, p50: r.latency.p50, p99: r.latency.p99 };
}
