// Sandbox processes for edge functions. Each process runs one invocation at a time; at most `size`
// run at once, at most `perProject` of one project, and the rest wait in line (gate.ts; up to the
// function timeout, then 503 `function_busy`). A process
// that dies (V8 abort, memory watchdog) or overruns its deadline is killed and replaced, and only
// the invocation it was running fails.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors.ts';
import { Gate } from './gate.ts';
import { FunctionFailure, FunctionInvalid, type Bridge, type FailureCode, type FunctionRequest, type FunctionResponse, type SandboxLimits } from './sandbox.ts';
import { RSS_EXIT_CODE, type FromWorker, type ToWorker } from './protocol.ts';

const WORKER = fileURLToPath(new URL('./worker-main.ts', import.meta.url));
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
}

const callError = (status: number, code: string, message: string) => JSON.stringify({ error: { status, code, message, details: null } });

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
  private memoryExceeded = false;

  constructor(onExit: (w: Worker) => void) {
    this.proc = fork(WORKER, [], { execArgv: ['--no-node-snapshot', '--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    this.ready = new Promise<void>((resolve, reject) => {
      this.proc.once('message', () => resolve());
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
      if (!job.bridge) return reply(callError(400, 'bad_request', 'There is no database here.'));
      if (job.calls! >= DB_CALLS_TOTAL) return reply(callError(429, 'too_many_calls', `A function may make at most ${DB_CALLS_TOTAL} context.db calls.`));
      if (job.inFlight! >= DB_CALLS_IN_FLIGHT) return reply(callError(429, 'too_many_calls', `At most ${DB_CALLS_IN_FLIGHT} context.db calls may run at once; await them.`));
      if (Buffer.byteLength(m.json) > DB_CALL_MAX_BYTES) return reply(callError(413, 'payload_too_large', 'A context.db call is larger than 1 MiB.'));
      job.calls!++;
      job.inFlight!++;
      job
        .bridge(m.json)
        .catch(() => callError(500, 'internal_error', 'The database call failed.'))
        .then((json) => {
          job.inFlight!--;
          reply(json);
        });
      return;
    }
    this.job = null;
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
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly gate: Gate;
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    options: PoolOptions,
  ) {
    this.gate = new Gate(options.size, options.perProject, limits.timeoutMs);
  }

  run(projectId: string, code: string, request: FunctionRequest, auth: unknown, bridge: Bridge): Promise<FunctionResponse> {
    return this.submit(projectId, { type: 'run', id: 0, code, request, auth, limits: this.limits }, bridge) as Promise<FunctionResponse>;
  }

  async check(projectId: string, code: string): Promise<void> {
    await this.submit(projectId, { type: 'check', id: 0, code, limits: this.limits }, null);
  }

  private submit(projectId: string, message: Exclude<ToWorker, { type: 'db-reply' }>, bridge: Bridge | null): Promise<unknown> {
    return this.gate.run(projectId, async () => {
      if (this.closed) throw new AppError(503, 'function_busy', 'The service is shutting down.');
      const worker = this.idle.pop() ?? this.spawn();
      const id = ++this.nextId;
      try {
        return await worker.run({ id, message: { ...message, id }, bridge, resolve: () => undefined, reject: () => undefined }, this.limits.timeoutMs + KILL_GRACE_MS);
      } finally {
        if (!worker.dead && !this.closed) this.idle.push(worker);
      }
    });
  }

  private spawn(): Worker {
    const w = new Worker((dead) => {
      this.all.delete(dead);
      const i = this.idle.indexOf(dead);
      if (i >= 0) this.idle.splice(i, 1);
    });
    this.all.add(w);
    return w;
  }

  /** Kills every sandbox process (the service is stopping). */
  async close(): Promise<void> {
    this.closed = true;
    const exits = [...this.all].map((w) => new Promise<void>((resolve) => (w.dead ? resolve() : w.proc.once('exit', () => resolve()))));
    for (const w of this.all) w.kill();
    await Promise.all(exits);
  }
}
