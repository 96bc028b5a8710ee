// The main-thread side of the SQLite worker threads. Statements over a project's own tables run in
// a worker (sqlite-worker.ts), never on the event loop: a full scan or a 100,000-row insert of one
// project costs that project a worker, not every project its latency. Workers are shared through a
// FairGate, so one project holds at most its share of them, and each statement is bounded by the
// statement timeout (the native deadline, with a watchdog here for a worker that stops answering).
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { Db, RowTally, SqlParam } from '../engine.ts';
import { quoteIdent, QueryTimeout, StorageFull } from '../engine.ts';
import { AppError } from '../../errors.ts';
import { FairGate, type GateStats } from '../fair-gate.ts';
import type { FromWorker, ToWorker, WorkerSetup } from './sqlite-worker-protocol.ts';
import { toSqlite, translateSqliteError } from './sqlite-db.ts';
import { SEMI_SPACE_MIB } from '../../lib/young-generation.ts';
// beyond the statement timeout, how long a worker may stay silent before it is replaced
export const STUCK_GRACE_MS = 5000;
// A worker's young generation, bounded as the main thread's (lib/young-generation.ts): V8 counts it
// as two semi-spaces and a large-object space of the same size.
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MIB };

type Request = ToWorker extends infer M ? (M extends { id: number } ? Omit<M, 'id'> : never) : never;

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | null;
}

class SqlWorker {
  private readonly thread: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  dead = false;
  /** projects this worker has (or may have) a connection to */
  readonly projects = new Set<string>();
  private readonly exited: Promise<void>;

  constructor(script: URL, setup: WorkerSetup, stuckGraceMs: number) {
    this.thread = new Worker(script, { workerData: setup, resourceLimits: WORKER_LIMITS });
    this.stuckGraceMs = stuckGraceMs;
    this.thread.on('message', (m: FromWorker) => this.settle(m));
    this.thread.on('error', (err) => this.fail(err));
    this.exited = new Promise((resolve) =>
      this.thread.once('exit', () => {
        this.fail(new Error('the SQLite worker thread exited'));
        resolve();
      }),
    );
  }

  private readonly stuckGraceMs: number;

  call(request: Request, timeoutMs: number): Promise<unknown> {
    if (this.dead) return Promise.reject(new Error('the SQLite worker thread is gone'));
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      // a statement past its deadline is interrupted natively; a worker that still does not
      // answer (stuck in one long function call) is replaced
      const timer = timeoutMs > 0 ? setTimeout(() => this.fail(new QueryTimeout()), timeoutMs + this.stuckGraceMs) : null;
      this.pending.set(id, { resolve, reject, timer });
      this.thread.postMessage({ ...request, id });
    });
  }

  private settle(m: FromWorker): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (p.timer) clearTimeout(p.timer);
    if (m.ok) p.resolve(m.value);
    else p.reject(translateSqliteError(Object.assign(new Error(m.message), { code: m.code })));
  }

  /** Every pending call fails with `err`; the thread is never used again and ends (retire). */
  fail(err: unknown): void {
    if (!this.dead) {
      this.dead = true;
      this.retire();
    }
    for (const p of this.pending.values()) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  /** Ends the thread, once what it runs now has returned. */
  async stop(): Promise<void> {
    this.dead = true;
    this.retire();
    await this.exited;
  }

  /**
   * Asks the thread to end rather than terminating it: a thread terminated inside a native call (a
   * long SQLite function, past its statement's deadline) aborted the whole process once the call
   * returned into JavaScript (better-sqlite3 met V8's termination; a hostile review). Asked, the
   * thread ends when the call has returned, closing its connections (a transaction rolls back).
   */
  private retire(): void {
    try {
      this.thread.postMessage({ t: 'exit', id: 0 } satisfies ToWorker);
    } catch {
      // the thread has ended already
    }
  }
}

export interface WorkerPoolOptions extends WorkerSetup {
  /** the worker script (sqlite-build.ts bundles it) */
  script: string;
  workers: number;
  /** workers one project may hold at once */
  perProject: number;
  /** per statement; 0: unbounded */
  statementTimeoutMs: number;
  /** ms without a job after which the workers exit (0: never) */
  idleMs: number;
  /** beyond the statement timeout, how long a worker may stay silent before it is replaced (default STUCK_GRACE_MS) */
  stuckGraceMs?: number;
}

export class SqliteWorkerPool {
  private readonly idle: SqlWorker[] = [];
  private readonly live = new Set<SqlWorker>();
  private readonly gate: FairGate;

  /** worker threads started so far (a replaced worker counts again, and each start of them all) */
  started = 0;
  /** of those, started in place of one that failed */
  replaced = 0;
  /** performance.now() when the latest job ended */
  private lastJobEnd = 0;
  private idleCheck: NodeJS.Timeout | null = null;

  constructor(private readonly opts: WorkerPoolOptions) {
    // waiting for a worker is bounded like a statement (30 s when statements are unbounded)
    this.gate = new FairGate({ capacity: opts.workers, perKey: opts.perProject, maxWaitMs: opts.statementTimeoutMs || 30000 });
  }

  db(projectId: string): Db {
    return new WorkerDb(this, projectId, null);
  }

  get statementTimeoutMs(): number {
    return this.opts.statementTimeoutMs;
  }

  /** the gate over the workers, and the threads running now (metrics) */
  stats(): { gate: GateStats; threads: number } {
    return { gate: this.gate.stats(), threads: this.live.size };
  }

  /**
   * Runs `job` on a worker of the project's share. All workers start together on first use: a
   * thread takes a while to start, and that wait must not fall on whichever project comes second.
   * They exit together once no job has run for `idleMs` (stopIfIdle).
   */
  async withWorker<T>(projectId: string, job: (w: SqlWorker) => Promise<T>): Promise<T> {
    if (this.live.size === 0) this.startAll();
    return this.gate.run(projectId, async () => {
      const w = this.idle.pop() ?? this.replace();
      w.projects.add(projectId);
      try {
        return await job(w);
      } finally {
        this.lastJobEnd = performance.now();
        if (w.dead) this.live.delete(w);
        else this.idle.push(w);
      }
    });
  }

  private startAll(): void {
    for (let i = 0; i < this.opts.workers; i++) this.idle.push(this.spawn());
    this.lastJobEnd = performance.now();
    if (this.opts.idleMs > 0) this.checkIdleIn(this.opts.idleMs);
  }

  private replace(): SqlWorker {
    this.replaced++;
    return this.spawn();
  }

  private checkIdleIn(ms: number): void {
    if (this.idleCheck) clearTimeout(this.idleCheck); // (all workers failed and restarted meanwhile)
    this.idleCheck = setTimeout(() => this.stopIfIdle(), ms);
    this.idleCheck.unref();
  }

  /**
   * Each thread holds about 10 MiB (its V8 isolate and Node.js environment) whether it works or
   * not: once no job has run for `idleMs`, and none runs or waits, the threads exit, with their
   * connections. The next job starts them all again (tens of milliseconds).
   */
  private stopIfIdle(): void {
    this.idleCheck = null;
    const quiet = performance.now() - this.lastJobEnd;
    const busy = this.gate.inUse() > 0 || this.gate.stats().queued > 0;
    if (busy || quiet < this.opts.idleMs) return this.checkIdleIn(busy ? this.opts.idleMs : this.opts.idleMs - quiet);
    void this.stopAll();
  }

  private stopAll(): Promise<unknown> {
    const all = [...this.live];
    this.live.clear();
    this.idle.length = 0;
    return Promise.all(all.map((w) => w.stop()));
  }

  private spawn(): SqlWorker {
    const { projectDir, maxConnections, deadlineLibrary, busyTimeoutMs, maxResultBytes, projectMaxBytes } = this.opts;
    const setup = { projectDir, maxConnections, deadlineLibrary, busyTimeoutMs, maxResultBytes, projectMaxBytes };
    const w = new SqlWorker(pathToFileURL(this.opts.script), setup, this.opts.stuckGraceMs ?? STUCK_GRACE_MS);
    this.live.add(w);
    this.started++;
    return w;
  }

  /**
   * Asks the workers that opened a project to close it (its files are being deleted). Not awaited:
   * a worker busy with another project's long statement would make the deletion wait for it, and
   * an open connection to a deleted file harms nothing (a worker inside the project's transaction
   * closes after it ends).
   */
  closeProject(projectId: string): void {
    for (const w of this.live) {
      if (!w.projects.delete(projectId)) continue;
      w.call({ t: 'close', project: projectId }, 0).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.idleCheck) clearTimeout(this.idleCheck);
    await this.stopAll();
  }
}

/** A Db whose statements run in the pool; inside `tx` every statement goes to the one pinned worker. */
class WorkerDb implements Db {
  readonly kind = 'sqlite' as const;

  constructor(
    private readonly pool: SqliteWorkerPool,
    private readonly projectId: string,
    private readonly pinned: SqlWorker | null,
  ) {}

  t(name: string): string {
    return quoteIdent(name);
  }

  /** One statement, on the pinned worker inside a transaction, else on any of the project's share. */
  private send(request: Extract<Request, { t: 'q' | 'tally' }>): Promise<unknown> {
    if (this.pinned) return this.pinned.call(request, request.timeoutMs);
    return this.pool.withWorker(this.projectId, (w) => w.call(request, request.timeoutMs));
  }

  private query(sql: string, params: readonly SqlParam[], mode: 'all' | 'get' | 'run'): Promise<unknown> {
    const timeoutMs = this.pool.statementTimeoutMs;
    return this.send({ t: 'q', project: this.projectId, sql, params: toSqlite(params) as SqlParam[], mode, timeoutMs });
  }

  all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.query(sql, params, 'all') as Promise<T[]>;
  }

  get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return this.query(sql, params, 'get') as Promise<T | undefined>;
  }

  run(sql: string, params: readonly SqlParam[] = []): Promise<{ changes: number }> {
    return this.query(sql, params, 'run') as Promise<{ changes: number }>;
  }

  async runBestEffort(sql: string, params: readonly SqlParam[] = []): Promise<void> {
    try {
      await this.run(sql, params);
    } catch (err) {
      if (!(err instanceof StorageFull) && !(err instanceof AppError && err.code === 'project_busy')) throw err;
    }
  }

  tally(sql: string, params: readonly SqlParam[], keep: number): Promise<RowTally> {
    const timeoutMs = this.pool.statementTimeoutMs;
    return this.send({ t: 'tally', project: this.projectId, sql, params: toSqlite(params) as SqlParam[], keep, timeoutMs }) as Promise<RowTally>;
  }

  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.pinned) return fn(this);
    return this.pool.withWorker(this.projectId, async (w) => {
      try {
        await w.call({ t: 'begin', project: this.projectId, timeoutMs: this.pool.statementTimeoutMs }, this.pool.statementTimeoutMs);
        const result = await fn(new WorkerDb(this.pool, this.projectId, w));
        await w.call({ t: 'commit', project: this.projectId }, 0);
        return result;
      } catch (err) {
        await w.call({ t: 'rollback', project: this.projectId }, 0).catch(() => undefined);
        throw err;
      }
    });
  }
}
