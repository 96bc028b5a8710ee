// The service's one logger: start-up, requests, warnings of the services. JSON lines (pino).
import pino, { type Logger } from 'pino';

export type { Logger };

// Lines to standard output are gathered and written together, at least this often: one write per
// request line cost the hot path a sixth of its time.
const FLUSH_EVERY_MS = 200;
const BATCH_BYTES = 8 * 1024;
// a standard output that stops draining (a stuck log collector) costs at most this much memory;
// lines beyond it are dropped rather than let a flood of requests grow the buffer without end
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

let lastMs = -1;
let lastTime = '';
/** pino's ISO time, formatted once per millisecond (several request lines share one under load). */
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/**
 * `stream` absent: standard output, written asynchronously in batches (at most FLUSH_EVERY_MS late),
 * and flushed before the process exits (flushLogger).
 * Tokens and keys are never put in a log line; in case one ever carries request headers, redacted.
 */
export function createLogger(level: string, stream?: { write(line: string): void }): Logger {
  const options = {
    level,
    redact: ['req.headers.authorization', 'req.headers["x-user-token"]'],
    // levels by name and times as ISO strings: what an operator reads
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: isoTime,
  };
  return pino(options, stream ?? batchedStdout());
}

function batchedStdout() {
  const dest = pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES, maxLength: MAX_BUFFERED_BYTES });
  setInterval(() => {
    try {
      dest.flush();
    } catch {
      // not open yet, or a write under way: the next tick takes it
    }
  }, FLUSH_EVERY_MS).unref();
  return dest;
}

/** Writes what the asynchronous destination still holds (before process.exit). */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
    (logger as unknown as { [pino.symbols.streamSym]: { flushSync?: () => void } })[pino.symbols.streamSym].flushSync?.();
  } catch {
    // nothing to flush, or not yet ready: a line may be lost, the exit goes on
  }
}
