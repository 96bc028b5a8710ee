// The service's one logger: start-up, requests, warnings of the services. JSON lines (pino).
import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * `stream` absent: standard output, written off the event loop (pino's asynchronous destination:
 * lines that arrive while a write is under way go out together), flushed before the process exits.
 * Tokens and keys are never put in a log line; in case one ever carries request headers, redacted.
 */
export function createLogger(level: string, stream?: { write(line: string): void }): Logger {
  const options = {
    level,
    redact: ['req.headers.authorization', 'req.headers["x-user-token"]'],
    // levels by name and times as ISO strings: what an operator reads
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(options, stream ?? pino.destination({ dest: 1, sync: false }));
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
