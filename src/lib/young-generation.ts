// The bound on V8's young generation. Under load V8 doubles the two semi-spaces of the young
// generation, 1 MiB each at first, up to 16 MiB each, for objects that mostly die within their
// request; held near 4 MiB they cost the same reads per second with a peak RSS 50-60 MiB lower
// (2026-11-27, 32 clients, two servers side by side on the same data).
// The bound is set from inside (boundYoungGeneration, from main.ts): V8 reads its growth factor at
// each growth, so growth is turned off once the bound is reached, and on again when a full
// collection has shrunk the young generation (an idle service's, lib/idle-collection.ts). That
// check runs after the collections of a task, not between them: a task or a loop turn that runs
// several may grow past the bound (measured: to 8 MiB under steady load, 16 after one task that
// kept 30 MiB alive), and the young generation stays there until a full collection shrinks it.
// V8's own `--max-semi-space-size` (SEMI_SPACE_FLAG) is exact, but npm start no longer passes
// it: with it the same server read less (fourth session of 2026-11-27, PostgreSQL reads, 32
// clients, five rounds each: 5,075-5,771 req/s and 157-180 us of CPU per read against
// 5,629-6,226 and 144-159 us without any V8 flag; peak RSS 107-163 MiB against 114-117). What
// the flag does better: a burst right after start-up (a login) grows this bound's young generation
// past it, and the idle collection takes about 10 s more to give it back (95 MiB 8 s after, 81
// with the flag; 78-81 for both 16 s after). A flag also costs Node its built-in code cache. Given,
// the softer bound stands aside. The SQLite worker threads set their own (sqlite-worker-pool.ts).
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';

/** each semi-space, in MiB */
export const SEMI_SPACE_MIB = 4;
/** V8's exact bound, for a launcher that prefers it to the throughput (see above) */
export const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MIB}`;

/** V8's default growth: each growth doubles the semi-spaces */
const GROWTH_FACTOR = 2;

/** Whether node was started with its own bound (on its command line or in NODE_OPTIONS): then V8 keeps it. */
export function semiSpaceFlagGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(arg));
}

const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');

/** The young generation's memory: its two semi-spaces, or one while V8 has the other uncommitted. */
export const youngGenerationBytes = (): number => newSpace()?.space_size ?? 0;

/** The capacity of one semi-space: 1 MiB less a page header at first, then doubled at each growth. */
export function semiSpaceBytes(): number {
  const s = newSpace();
  return s ? s.space_used_size + s.space_available_size : 0;
}

export interface YoungGenerationBound {
  stop(): void;
}

/** whether V8 may grow the young generation now (its default) */
let growing = true;

function allowGrowth(grow: boolean): void {
  if (grow === growing) return;
  growing = grow;
  setFlagsFromString(`--semi-space-growth-factor=${grow ? GROWTH_FACTOR : 1}`);
}

/**
 * No growth at all, until boundYoungGeneration: for start-up, one long task whose collections the
 * bound's check would only see at its end. Grown by it to 8 MiB semi-spaces, the young generation
 * stayed so until the idle collection could give it back, which V8 allows only once allocation
 * has been slow for 5 s: 16 MiB more resident a few seconds after start (measured: 94 MiB at 3 s,
 * 79 at 6 s, with a thousand projects in the platform file).
 */
export function holdYoungGeneration(): void {
  allowGrowth(false);
}

/** The softer bound: each semi-space held near `semiSpaceMiB` (a power of two), checked after every task's collections. */
export function boundYoungGeneration(semiSpaceMiB: number): YoungGenerationBound {
  // grown to the bound, a semi-space is the bound less its pages' headers: the middle between two
  // steps tells one grown to it from one a step below
  const below = 0.75 * semiSpaceMiB * 1024 * 1024;
  const check = () => allowGrowth(semiSpaceBytes() < below);
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  return {
    stop: () => {
      observer.disconnect();
      allowGrowth(true);
    },
  };
}
