// Sandbox processes for edge functions. Each process runs one invocation at a time; at most `size`
// run at once, at most `perProject` of one project, and the rest wait in line (gate.ts; up to the
// function timeout, then 503 `function_busy`). A process that dies (V8 abort, memory watchdog) or
// overruns its deadline is killed and replaced, and only the invocation it was running fails.
// Processes are started on demand with an empty environment and a lower CPU priority than the
// service; a process that kept the memory an invocation grew is retired after it, and idle ones
// beyond a warm one are stopped after `idleMs`.
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { workerScript } from '../bundles.ts';
import { AppError } from '../errors.ts';
import { Gate } from './gate.ts';
import { FunctionFailure, FunctionInvalid, type Bridge, type FailureCode, type FunctionRequest, type FunctionResponse, type SandboxLimits } from './invocation.ts';
import { RSS_EXIT_CODE, type FromWorker, type ToWorker } from './protocol.ts';

// beyond the sandbox's own deadline, how long a process may stay silent before it is killed
const KILL_GRACE_MS = 1000;
/** context.db calls of one invocation: at once, in all, and the size of one call */
export const DB_CALLS_IN_FLIGHT = 8;
export const DB_CALLS_TOTAL = 1000;
export const DB_CALL_MAX_BYTES = 1024 * 1024;

export interface PoolOptions {
  /** sandbox processes, i.e. invocations running at once */
  size: number;
  /** invocations of one project running at once */
  perProject: number;
  /** a process whose resident memory grew by more than this since it started is retired after its job */
  recycleGrowthMb: number;
  /** an idle process unused this long is stopped (one is kept warm) */
  idleMs: number;
  /** niceness added to the service's own for the sandbox processes (the result is at most 19) */
  niceness: number;
}

/** How a context.db call that failed reaches the function: the error's status, code, message and details. */
export const callError = (err: AppError) => ({ error: { status: err.status, code: err.code, message: err.message, details: err.details ?? null } });
const callErrorJson = (err: AppError) => JSON.stringify(callError(err));

/**
 * Sets every thread of the process to `niceness`. Linux priority is per thread and a new thread
 * inherits its creator's, so the main thread is lowered right after the fork (the threads it starts
 * later follow) and, once the process is ready, any thread started before that too.
 */
function lowerPriority(pid: number, niceness: number): void {
  let threads: string[] = [];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    // no /proc (not Linux): setPriority applies to the whole process
  }
  for (const id of new Set([String(pid), ...threads])) {
    try {
      setPriority(Number(id), niceness);
    } catch {
      // the thread or the process has ended
    }
  }
}

interface Job {
  id: number;
  message: ToWorker;
  bridge: Bridge | null;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  inFlight?: number;
  calls?: number;
}

class Worker {
  readonly proc: ChildProcess;
  private readonly ready: Promise<void>;
  job: Job | null = null;
  dead = false;
  idleTimer: NodeJS.Timeout | undefined;
  private memoryExceeded = false;
  private startRss = 0;
  private rss = 0;

  constructor(niceness: number, onExit: (w: Worker) => void) {
    // env: the service's secrets (MASTER_KEY, DATABASE_URL) stay with the service; fork adds only
    // what the IPC channel needs (NODE_CHANNEL_FD, NODE_CHANNEL_SERIALIZATION_MODE)
    // plain JavaScript: a process that loaded the TypeScript loader would cost about 35 MiB more
    this.proc = fork(workerScript('function-worker'), [], { execArgv: ['--no-node-snapshot'], serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: {} });
    if (this.proc.pid !== undefined) lowerPriority(this.proc.pid, niceness);
    this.ready = new Promise<void>((resolve, reject) => {
      this.proc.once('message', (m: FromWorker) => {
        if (m.type === 'ready') this.startRss = this.rss = m.rss;
        lowerPriority(this.proc.pid!, niceness);
        resolve();
      });
      this.proc.once('exit', () => reject(new FunctionFailure('function_error', 'The sandbox process could not start.')));
    });
    this.ready.catch(() => undefined);
    // a process that died may still be written to (a late db reply): its EPIPE is not the service's problem
    this.proc.on('error', () => undefined);
    this.proc.on('message', (m: FromWorker) => this.onMessage(m));
    this.proc.on('exit', (code, signal) => {
      this.dead = true;
      const job = this.job;
      this.job = null;
      if (job) job.reject(this.memoryExceeded ? exitFailure(RSS_EXIT_CODE, null) : exitFailure(code, signal));
      onExit(this);
    });
  }

  async run(job: Job, deadlineMs: number): Promise<unknown> {
    // the deadline covers the start-up too: a process that never becomes ready is killed
    const startBy = setTimeout(() => this.kill(), deadlineMs + 5000);
    try {
      await this.ready;
    } finally {
      clearTimeout(startBy);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.job === current) this.kill();
      }, deadlineMs);
      const current: Job = {
        ...job,
        inFlight: 0,
        calls: 0,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.job = current;
      this.send(job.message);
    });
  }

  private send(m: ToWorker): void {
    if (!this.dead && this.proc.connected) this.proc.send(m, (err) => void err);
  }

  kill(): void {
    if (!this.dead) this.proc.kill('SIGKILL');
  }

  /** how much the process's resident memory grew since it was ready, as of its last job */
  grownBytes(): number {
    return this.rss - this.startRss;
  }

  private onMessage(m: FromWorker): void {
    if (m.type === 'memory_exceeded') {
      this.memoryExceeded = true;
      return;
    }
    const job = this.job;
    if (m.type === 'ready' || !job || m.id !== job.id) return;
    if (m.type === 'db') {
      const reply = (json: string) => {
        // only the job that asked gets an answer; a finished job's late calls are dropped
        if (this.job === job) this.send({ type: 'db-reply', callId: m.callId, json });
      };
      if (!job.bridge) return reply(callErrorJson(new AppError('bad_request.no_database')));
      if (job.calls! >= DB_CALLS_TOTAL) return reply(callErrorJson(new AppError('too_many_calls.total', { max: DB_CALLS_TOTAL })));
      if (job.inFlight! >= DB_CALLS_IN_FLIGHT) return reply(callErrorJson(new AppError('too_many_calls.in_flight', { max: DB_CALLS_IN_FLIGHT })));
      if (Buffer.byteLength(m.json) > DB_CALL_MAX_BYTES) return reply(callErrorJson(new AppError('payload_too_large.db_call')));
      job.calls!++;
      job.inFlight!++;
      job
        .bridge(m.json)
        .catch(() => callErrorJson(new AppError('internal_error.db_call')))
        .then((json) => {
          job.inFlight!--;
          reply(json);
        });
      return;
    }
    this.job = null;
    this.rss = m.rss;
    if (m.ok) job.resolve(m.response);
    else if (m.failure.kind === 'invalid') job.reject(new FunctionInvalid(m.failure.message));
    else job.reject(new FunctionFailure(m.failure.code as FailureCode, m.failure.message, m.failure.detail ?? null));
  }
}

function exitFailure(code: number | null, signal: NodeJS.Signals | null): FunctionFailure {
  if (signal === 'SIGKILL') return new FunctionFailure('function_timeout', 'The function did not finish in time.');
  if (code === RSS_EXIT_CODE || signal === 'SIGABRT' || code === 134) return new FunctionFailure('function_out_of_memory', 'The function ran out of memory.');
  return new FunctionFailure('function_error', 'The function crashed its sandbox.');
}

export class SandboxPool {
  /** most recently used last: busy times reuse the warm end, the cold end ages into reaping */
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly gate: Gate;
  // CPU-bound functions get what the service leaves rather than what it needs
  private readonly niceness: number;
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly options: PoolOptions,
  ) {
    this.gate = new Gate(options.size, options.perProject, limits.timeoutMs);
    this.niceness = Math.min(19, getPriority() + options.niceness);
  }

  run(projectId: string, code: string, request: FunctionRequest, auth: unknown, bridge: Bridge): Promise<FunctionResponse> {
    return this.submit(projectId, { type: 'run', id: 0, code, request, auth, limits: this.limits }, bridge) as Promise<FunctionResponse>;
  }

  async check(projectId: string, code: string): Promise<void> {
    await this.submit(projectId, { type: 'check', id: 0, code, limits: this.limits }, null);
  }

  private submit(projectId: string, message: Exclude<ToWorker, { type: 'db-reply' }>, bridge: Bridge | null): Promise<unknown> {
    return this.gate.run(projectId, async () => {
      if (this.closed) throw new AppError('function_busy.closing');
      const worker = this.take();
      const id = ++this.nextId;
      try {
        return await worker.run({ id, message: { ...message, id }, bridge, resolve: () => undefined, reject: () => undefined }, this.limits.timeoutMs + KILL_GRACE_MS);
      } finally {
        this.release(worker);
      }
    });
  }

  private take(): Worker {
    const w = this.idle.pop();
    if (!w) return this.spawn();
    clearTimeout(w.idleTimer);
    return w;
  }

  private release(w: Worker): void {
    if (w.dead || this.closed) return;
    // what a process keeps after an invocation (its own heap grown by large context.db calls and
    // responses, allocator arenas) is only given back by ending it; the next invocation that finds
    // no idle process starts a fresh one
    if (w.grownBytes() > this.options.recycleGrowthMb * 1024 * 1024) return w.kill();
    this.idle.push(w);
    w.idleTimer = setTimeout(() => this.reap(w), this.options.idleMs).unref();
  }

  private reap(w: Worker): void {
    const i = this.idle.indexOf(w);
    // one process stays warm, so that a quiet service's next invocation does not wait for a start
    if (i < 0 || this.idle.length <= 1) return;
    // out of the idle list before the kill, so that no job is handed to a dying process
    this.idle.splice(i, 1);
    w.kill();
  }

  private spawn(): Worker {
    const w = new Worker(this.niceness, (dead) => {
      clearTimeout(dead.idleTimer);
      this.all.delete(dead);
      const i = this.idle.indexOf(dead);
      if (i >= 0) this.idle.splice(i, 1);
    });
    this.all.add(w);
    return w;
  }

  /** Sandbox processes (and how many wait idle), invocations running and waiting for a slot (metrics). */
  stats(): { processes: number; idle: number; running: number; queued: number } {
    return { processes: this.all.size, idle: this.idle.length, ...this.gate.stats() };
  }

  /** Kills every sandbox process (the service is stopping). */
  async close(): Promise<void> {
    this.closed = true;
    const exits = [...this.all].map((w) => new Promise<void>((resolve) => (w.dead ? resolve() : w.proc.once('exit', () => resolve()))));
    for (const w of this.all) w.kill();
    await Promise.all(exits);
  }
}
