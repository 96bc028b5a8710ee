// Shares a fixed number of slots (worker threads, database connections) among tenants. A tenant
// holds at most `perKey` slots at once; when a slot frees up, the tenants that wait are served in
// turn (round robin), so a tenant with a long queue of slow work delays only itself. The last
// `reserve` free slots go only to tenants with nothing running, so that tenants at their share
// cannot fill every slot. A job that cannot start within `maxWaitMs`, or that would queue behind
// `maxQueue` jobs of its own tenant, is refused (503 `project_busy` unless told otherwise).

import { AppError } from '../errors.ts';

export interface FairGateOptions {
  capacity: number;
  perKey: number;
  maxWaitMs: number;
  /** slots kept for tenants with nothing running (default: a quarter of the capacity, rounded down) */
  reserve?: number;
  /** jobs of one tenant that may wait (default: 8 per slot of its share, at least 64) */
  maxQueue?: number;
  /** the refusal of a job that cannot wait (default: 503 project_busy) */
  busy?: (key: string) => Error;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
  /** performance.now() when it began to wait */
  since: number;
}

/** What the gate is doing, for the metrics: read when scraped, so the hot path only counts. */
export interface GateStats {
  capacity: number;
  inUse: number;
  /** jobs waiting for a slot, and the tenants they belong to */
  queued: number;
  queuedKeys: number;
  /** since the start: jobs that had to wait (served or refused), and their waits added up */
  waits: number;
  waitSeconds: number;
}

export const projectBusy = () => new AppError('project_busy');

/** Jobs of one tenant that may wait, at least: a busy application's clients (32 at once, say) must
 * queue rather than be refused; bounded, since each holds its request. */
const MIN_QUEUE = 64;

export class FairGate {
  private readonly running = new Map<string, number>();
  /** Waiting tenants in service order: Map iteration order is the round-robin ring. */
  private readonly queues = new Map<string, Waiter[]>();
  private total = 0;
  private readonly reserve: number;
  private readonly maxQueue: number;
  private readonly busy: (key: string) => Error;
  private waits = 0;
  private waitMs = 0;

  constructor(private readonly opts: FairGateOptions) {
    if (opts.capacity < 1 || opts.perKey < 1) throw new Error('a fair gate needs at least one slot');
    this.reserve = Math.min(opts.reserve ?? Math.floor(opts.capacity / 4), opts.capacity - 1);
    this.maxQueue = opts.maxQueue ?? Math.max(MIN_QUEUE, 8 * opts.perKey);
    this.busy = opts.busy ?? projectBusy;
  }

  async run<T>(key: string, job: () => Promise<T>): Promise<T> {
    await this.acquire(key);
    try {
      return await job();
    } finally {
      this.release(key);
    }
  }

  /** Runs `job` if `key` can take a slot now (none of its jobs waiting), else skips it: undefined. */
  async runIfFree<T>(key: string, job: () => Promise<T>): Promise<T | undefined> {
    if (this.queues.has(key) || !this.hasRoom(key)) return undefined;
    this.take(key);
    try {
      return await job();
    } finally {
      this.release(key);
    }
  }

  /** Resolves once `key` holds a slot; the caller must `release(key)` exactly once. */
  acquire(key: string): Promise<void> {
    // a tenant that already waits queues behind itself, whatever is free
    if (!this.queues.has(key) && this.hasRoom(key)) {
      this.take(key);
      return Promise.resolve();
    }
    const queued = this.queues.get(key)?.length ?? 0;
    // a waiting job holds its request (body included) in memory: a tenant's queue is bounded
    if (queued >= this.maxQueue) return Promise.reject(this.busy(key));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => this.giveUp(key, waiter), this.opts.maxWaitMs),
        since: performance.now(),
      };
      const q = this.queues.get(key);
      if (q) q.push(waiter);
      else this.queues.set(key, [waiter]);
    });
  }

  release(key: string): void {
    const n = this.running.get(key) ?? 0;
    if (n <= 1) this.running.delete(key);
    else this.running.set(key, n - 1);
    this.total--;
    this.dispatch();
  }

  /** Slots in use by `key` (tests and metrics). */
  inUse(key?: string): number {
    return key === undefined ? this.total : (this.running.get(key) ?? 0);
  }

  stats(): GateStats {
    let queued = 0;
    for (const q of this.queues.values()) queued += q.length;
    return { capacity: this.opts.capacity, inUse: this.total, queued, queuedKeys: this.queues.size, waits: this.waits, waitSeconds: this.waitMs / 1000 };
  }

  private waited(waiter: Waiter): void {
    this.waits++;
    this.waitMs += performance.now() - waiter.since;
  }

  private hasRoom(key: string): boolean {
    const running = this.running.get(key) ?? 0;
    const free = this.opts.capacity - this.total;
    return free > 0 && running < this.opts.perKey && (running === 0 || free > this.reserve);
  }

  private take(key: string): void {
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    this.total++;
  }

  private dispatch(): void {
    while (this.total < this.opts.capacity) {
      const key = [...this.queues.keys()].find((k) => this.hasRoom(k));
      if (key === undefined) return;
      const q = this.queues.get(key)!;
      const waiter = q.shift()!;
      // served: to the back of the ring (or out of it)
      this.queues.delete(key);
      if (q.length > 0) this.queues.set(key, q);
      clearTimeout(waiter.timer);
      this.waited(waiter);
      this.take(key);
      waiter.resolve();
    }
  }

  private giveUp(key: string, waiter: Waiter): void {
    const q = this.queues.get(key);
    const i = q?.indexOf(waiter) ?? -1;
    if (!q || i < 0) return;
    q.splice(i, 1);
    if (q.length === 0) this.queues.delete(key);
    this.waited(waiter);
    waiter.reject(this.busy(key));
  }
}
