// A process that has answered nothing for a while runs full garbage collections until V8 gives its
// young generation back. V8 grows the young generation (two semi-spaces, up to 32 MiB; about 8
// under the bound of lib/young-generation.ts) while the service starts or serves a burst, and
// shrinks it only in a full collection that finds allocation slow, which an idle process seldom
// runs on its own; whether one collection finds it slow depends on V8's recent samples, so a few
// are tried, a tick apart. Measured: an idle service kept 112 MiB
// resident, 84 MiB after this.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { youngGenerationBytes } from './young-generation.ts';

/** Collections tried in one quiet spell before giving up until the next. */
const ATTEMPTS = 10;

let gc: (() => void) | null = null;
/**
 * A full garbage collection of the calling thread's heap: V8's gc(), obtained without a
 * command-line flag (the flag applies to contexts made after it), once per thread.
 */
export function fullCollection(): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

export interface IdleCollection {
  /** a request began: the quiet spell starts again */
  touch(): void;
  stop(): void;
}

export interface IdleCollectionOptions {
  /** one collection; default V8's gc(), made on first use */
  collect?: () => void;
  /** the young generation's size now; default V8's */
  youngBytes?: () => number;
  /** how often the spell is checked (a timer that never keeps the process alive) */
  tickMs?: number;
  /** once a spell's collections are over (the young generation shrank, or the attempts ran out) */
  settled?: () => void;
}

/**
 * After `quietMs` without touch(), a collection each tick until the young generation has shrunk
 * (at most ATTEMPTS), then `settled`, and none until a touch() and another quiet spell.
 */
export function idleCollection(quietMs: number, opts: IdleCollectionOptions = {}): IdleCollection {
  const tickMs = opts.tickMs ?? Math.min(1000, quietMs);
  const youngBytes = opts.youngBytes ?? youngGenerationBytes;
  const collect = opts.collect ?? fullCollection;
  const ticksNeeded = Math.ceil(quietMs / tickMs);
  let touches = 0;
  let seen = 0;
  let quietTicks = 0;
  let attempts = 0;
  let youngBefore = 0;
  const timer = setInterval(() => {
    if (touches !== seen) {
      seen = touches;
      quietTicks = attempts = 0;
      return;
    }
    if (++quietTicks < ticksNeeded || attempts >= ATTEMPTS) return;
    if (attempts === 0) youngBefore = youngBytes();
    else if (youngBytes() < youngBefore) {
      attempts = ATTEMPTS;
      return opts.settled?.();
    }
    attempts++;
    collect();
    if (attempts === ATTEMPTS) opts.settled?.();
  }, tickMs);
  timer.unref();
  return {
    touch: () => void touches++,
    stop: () => clearInterval(timer),
  };
}
