// Connections handed out by schema (a project's, or the platform's). A statement for a project runs,
// when it can, on a connection that served the project recently: its prepared statements are
// there, and so are its server process's caches of the project's relations (a backend that meets a
// relation for the first time reads its definition from the catalogs, and a statement named on
// another connection is parsed and planned again). Taken in any order, the connections of one pool
// spread every project over all of them, and a thousand projects read at random found neither
// most of the time: measured, a random project's p50 1.6-1.9x one project's with 20 connections,
// 1.05x with 4 (each connection then serves every project often).
// pg's pool stays the factory and owner of the connections; this layer keeps the idle ones and
// chooses among them. It checks out at most `max` at once, so pg's pool never has to queue: a
// request waits here, first come first served, whatever its schema.
import type { Pool, PoolClient } from './pg-driver.ts';

/** Schemas a connection remembers having served, the most recent. */
const REMEMBERED = 128;
/** An idle connection unused this long is closed. */
const IDLE_MS = 10_000;

interface Idle {
  client: PoolClient;
  timer: NodeJS.Timeout;
}

interface Waiter {
  resolve(client: PoolClient): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

export interface AffinePoolOptions {
  /** the most connections checked out at once (pg's pool's max) */
  max: number;
  /** how long a request waits for a connection before it fails */
  waitMs: number;
  /** whether a connection has failed (it is then discarded rather than handed out) */
  broken(client: PoolClient): boolean;
}

export class WaitTimeout extends Error {
  constructor(ms: number) {
    super(`no connection free within ${ms} ms`);
  }
}

export class AffinePool {
  /** most recently released last */
  private readonly idle: Idle[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly served = new WeakMap<PoolClient, Map<string, true>>();
  /** connections handed out and not yet released (a second release is a bug, refused) */
  private readonly out = new Set<PoolClient>();
  /** connections checked out of pg's pool: in use, idle here, or connecting */
  private held = 0;
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly opts: AffinePoolOptions,
  ) {}

  async acquire(schema: string): Promise<PoolClient> {
    this.dropBroken();
    const client = this.takeIdle(schema) ?? (await this.another());
    this.remember(client, schema);
    this.out.add(client);
    return client;
  }

  /** `discard`: the connection failed (or holds too much): closed rather than kept. */
  release(client: PoolClient, discard?: Error | true): void {
    if (!this.out.delete(client)) throw new Error('internal: a connection released twice, or not from this pool');
    if (discard !== undefined || this.closed) return this.giveBack(client, discard);
    const waiter = this.waiters.shift();
    if (waiter) {
      clearTimeout(waiter.timer);
      return waiter.resolve(client);
    }
    this.idle.push({ client, timer: setTimeout(() => this.expire(client), IDLE_MS).unref() });
  }

  get stats(): { total: number; idle: number; waiting: number; max: number } {
    return { total: this.pool.totalCount, idle: this.idle.length + this.pool.idleCount, waiting: this.waiters.length, max: this.opts.max };
  }

  /** Fails the waiting requests and closes every connection, once those in use are released. */
  async end(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new Error('the pool is closed'));
    }
    for (const { client, timer } of this.idle.splice(0)) {
      clearTimeout(timer);
      this.giveBack(client);
    }
    await this.pool.end();
  }

  /**
   * An idle connection that served `schema` (the most recently used such); else none while fewer
   * than `max` are open (a new one then becomes this schema's: another() falls back on the idle
   * ones if it cannot be had); else the least recently used. So many schemas spread over the pool,
   * each connection serving a few of them rather than all.
   */
  private takeIdle(schema: string): PoolClient | null {
    let at = -1;
    for (let i = this.idle.length - 1; i >= 0 && at < 0; i--) if (this.served.get(this.idle[i]!.client)?.has(schema)) at = i;
    if (at < 0 && this.held < this.opts.max) return null;
    return at < 0 ? this.takeIdleAt(0) : this.takeIdleAt(at);
  }

  private takeIdleAt(at: number): PoolClient | null {
    const [taken] = this.idle.splice(at, 1);
    if (!taken) return null;
    clearTimeout(taken.timer);
    return taken.client;
  }

  /**
   * A new connection from pg's pool when fewer than `max` are out (one that cannot be had now is
   * replaced by an idle one, if any), else the next one released here.
   */
  private async another(): Promise<PoolClient> {
    if (this.closed) throw new Error('the pool is closed');
    if (this.held < this.opts.max) {
      try {
        return await this.connect();
      } catch (err) {
        const idle = this.takeIdleAt(0);
        if (idle) return idle;
        throw err;
      }
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          reject(new WaitTimeout(this.opts.waitMs));
        }, this.opts.waitMs),
      };
      this.waiters.push(waiter);
    });
  }

  private async connect(): Promise<PoolClient> {
    this.held++;
    try {
      return await this.pool.connect();
    } catch (err) {
      this.held--;
      this.pump();
      throw err;
    }
  }

  private giveBack(client: PoolClient, discard?: Error | true): void {
    this.held--;
    client.release(discard);
    this.pump();
  }

  /** Room left by a connection closed or never opened goes to the waiters, first come first: new connections (or their failures). */
  private pump(): void {
    while (this.waiters.length > 0 && this.held < this.opts.max && !this.closed) {
      const waiter = this.waiters.shift()!;
      clearTimeout(waiter.timer);
      this.connect().then(waiter.resolve, waiter.reject);
    }
  }

  /** Unused for IDLE_MS: closed (a process that served many projects keeps only what it uses). */
  private expire(client: PoolClient): void {
    const at = this.idle.findIndex((i) => i.client === client);
    if (at < 0) return;
    this.idle.splice(at, 1);
    this.giveBack(client, true);
  }

  /** Idle connections that failed meanwhile (the server restarted, a network reset) are closed. */
  private dropBroken(): void {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const { client, timer } = this.idle[i]!;
      if (!this.opts.broken(client)) continue;
      clearTimeout(timer);
      this.idle.splice(i, 1);
      this.giveBack(client, true);
    }
  }

  private remember(client: PoolClient, schema: string): void {
    let schemas = this.served.get(client);
    if (!schemas) this.served.set(client, (schemas = new Map()));
    schemas.delete(schema);
    schemas.set(schema, true);
    if (schemas.size > REMEMBERED) schemas.delete(schemas.keys().next().value!);
  }
}
