// A sandbox process: runs one function invocation at a time for the parent (pool.ts). V8 can abort
// a whole process on some out-of-memory paths and a hostile thrown value can wedge a thread, so
// isolates live here, where the parent can kill and replace the process without losing the service.
import { checkFunctionCode, runFunction } from './sandbox.ts';
import { FunctionFailure, FunctionInvalid } from './invocation.ts';

import { RSS_EXIT_CODE, type FromWorker, type ToWorker } from './protocol.ts';

const send = (m: FromWorker) => process.send!(m);
const pendingCalls = new Map<number, (json: string) => void>();
let nextCall = 0;
const baseline = process.memoryUsage().rss;
let rssLimit = Number.POSITIVE_INFINITY;

// memory the heap limit does not see (WebAssembly memories, external buffers) is bounded here
// (the parent is told first: exiting with isolate threads still running may end in a signal)
let exiting = false;
setInterval(() => {
  if (exiting || process.memoryUsage().rss <= rssLimit) return;
  exiting = true;
  process.send!({ type: 'memory_exceeded' } satisfies FromWorker, () => process.exit(RSS_EXIT_CODE));
}, 25).unref();

process.on('disconnect', () => process.exit(0));
// Ctrl-C in a terminal (SIGINT) and a service manager stopping the service (SIGTERM to its whole
// group) reach this process too: the service stops its sandboxes itself, after the invocations in
// flight, and a sandbox whose service died exits on the disconnect above
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
process.on('message', (m: ToWorker) => {
  if (m.type === 'db-reply') {
    pendingCalls.get(m.callId)?.(m.json);
    pendingCalls.delete(m.callId);
    return;
  }
  rssLimit = baseline + m.limits.memoryMb * 3 * 1024 * 1024 + 64 * 1024 * 1024;
  void handle(m);
});

async function handle(m: Exclude<ToWorker, { type: 'db-reply' }>): Promise<void> {
  try {
    if (m.type === 'check') {
      await checkFunctionCode(m.code, m.limits);
      send({ type: 'done', id: m.id, rss: process.memoryUsage.rss(), ok: true });
      return;
    }
    const bridge = (json: string) =>
      new Promise<string>((resolve) => {
        const callId = ++nextCall;
        pendingCalls.set(callId, resolve);
        send({ type: 'db', id: m.id, callId, json });
      });
    const response = await runFunction(m.code, m.request, m.auth, bridge, m.limits);
    send({ type: 'done', id: m.id, rss: process.memoryUsage.rss(), ok: true, response });
  } catch (err) {
    report(m.id, err);
  } finally {
    // calls of a finished invocation are never answered: forget them
    pendingCalls.clear();
  }
}

function report(id: number, err: unknown): void {
  const rss = process.memoryUsage.rss();
  if (err instanceof FunctionFailure) send({ type: 'done', id, rss, ok: false, failure: { kind: 'failure', code: err.code, message: err.message, detail: err.detail } });
  else if (err instanceof FunctionInvalid) send({ type: 'done', id, rss, ok: false, failure: { kind: 'invalid', message: err.message } });
  else send({ type: 'done', id, rss, ok: false, failure: { kind: 'failure', code: 'function_error', message: 'The function failed.', detail: String((err as Error)?.message ?? err).slice(0, 500) } });
}

send({ type: 'ready', rss: baseline });
