// Statements over a project's tables on the embedded engine: tried first on the main thread, under
// a deadline of a few milliseconds (INLINE_LIMITS), and given to a worker thread (sqlite-worker-pool.ts) when they
// prove expensive. A message round trip to a worker costs more CPU than most statements of a
// request (a 20-row read by index: tens of microseconds), so cheap statements stay where they are
// as fast as before; the main thread is never held longer than the deadline, and a project whose
// statements keep proving expensive, or keep using the main thread, goes straight to the workers.
import type { Db, RowTally, SqlParam } from '../engine.ts';
import { QueryTimeout, quoteIdent } from '../engine.ts';
import { InlineExceeded, type InlineProbe, type SqliteDb } from './sqlite-db.ts';

export interface InlineLimits {
  /** ms one statement may run on the main thread */
  statementMs: number;
  /** ms one attempt (a statement, or a whole transaction) may run on the main thread */
  attemptMs: number;
  /** main-thread ms per second one project may use, and the most it may save up */
  projectRate: number;
  projectBurst: number;
  /** main-thread ms per second all projects together may use, and the most saved up */
  totalRate: number;
  totalBurst: number;
  /** main-thread ms a failed attempt costs its project beyond what it used */
  failurePenaltyMs: number;
}

// The deadlines are wall-clock time, which a busy machine stretches by descheduling the thread, so
// one failure costs a project a little, and only repeated failures send it to the workers (for
// about a second). 10 ms is also the watchdog's resolution (native/sqlite-deadline.c).
export const INLINE_LIMITS: InlineLimits = {
  statementMs: 10,
  attemptMs: 20,
  projectRate: 250,
  projectBurst: 100,
  totalRate: 600,
  totalBurst: 200,
  failurePenaltyMs: 30,
};

/** A token bucket of main-thread milliseconds. */
class Bucket {
  private tokens: number;
  private at = performance.now();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  available(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.rate) / 1000);
    this.at = now;
    return this.tokens > 0;
  }

  take(ms: number): void {
    this.tokens -= ms;
  }
}

/** Who may use the main thread for data statements, and how much. */
export class InlineBudget {
  private readonly projects = new Map<string, Bucket>();
  private readonly total: Bucket;

  constructor(private readonly limits: InlineLimits = INLINE_LIMITS) {
    this.total = new Bucket(limits.totalRate, limits.totalBurst);
  }

  /** A probe for one attempt of `projectId`'s, or null: its statements go to a worker. */
  attempt(projectId: string): (InlineProbe & { failed(): void }) | null {
    const now = performance.now();
    let bucket = this.projects.get(projectId);
    if (!bucket) {
      bucket = new Bucket(this.limits.projectRate, this.limits.projectBurst);
      this.projects.set(projectId, bucket);
      // bounded memory: forgetting buckets refills them (a penalty may end early)
      if (this.projects.size > 10000) this.projects.clear();
    }
    if (!this.total.available(now) || !bucket.available(now)) return null;
    const { statementMs, attemptMs } = this.limits;
    const project = bucket;
    let used = 0;
    return {
      allowance: () => Math.min(statementMs, attemptMs - used),
      spent: (ms) => {
        used += ms;
        project.take(ms);
        this.total.take(ms);
      },
      failed: () => project.take(this.limits.failurePenaltyMs),
    };
  }
}

/**
 * The Db of `engine.data()` on SQLite. Its `tx(fn)` may run `fn` twice: a first attempt on the main
 * thread that outgrows its allowance is rolled back and the transaction runs again in a worker, so
 * `fn` must do nothing but issue statements and compute its result from them.
 */
export class HybridDb implements Db {
  readonly kind = 'sqlite' as const;

  constructor(
    private readonly main: SqliteDb,
    private readonly worker: Db,
    private readonly budget: InlineBudget,
    private readonly projectId: string,
  ) {}

  t(name: string): string {
    return quoteIdent(name);
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.either((db) => db.all<T>(sql, params));
  }

  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.either((db) => db.get<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<{ changes: number }> {
    return this.either((db) => db.run(sql, params));
  }

  runBestEffort(sql: string, params?: readonly SqlParam[]): Promise<void> {
    return this.either((db) => db.runBestEffort(sql, params));
  }

  tally(sql: string, params: readonly SqlParam[], keep: number): Promise<RowTally> {
    return this.either((db) => db.tally!(sql, params, keep));
  }

  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.either((db) => db.tx(fn));
  }

  private async either<T>(op: (db: Db) => Promise<T>): Promise<T> {
    const probe = this.budget.attempt(this.projectId);
    if (probe) {
      try {
        return await op(this.main.probing(probe));
      } catch (err) {
        // interrupted at its allowance, or out of time between statements: rolled back, retried
        if (!(err instanceof QueryTimeout) && !(err instanceof InlineExceeded)) throw err;
        probe.failed();
      }
    }
    return op(this.worker);
  }
}
