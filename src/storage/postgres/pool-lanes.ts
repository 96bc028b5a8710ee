// The engine's connections, each in a lane of its own (a pool of one), every project with a lane of
// its own (by a hash of its schema): a statement runs on its project's connection unless that one
// is busy, and then on the next free one along the project's own step (LaneRoute).
//
// Why: a connection keeps the prepared statements of the projects it serves (prepared-names.ts, at
// most 256), and PostgreSQL plans a prepared statement for its values the first five times it
// runs on that connection, then keeps a generic plan. One pool hands out its most recently used
// connection first: under a light load spread over many projects, the same two connections served
// a thousand projects, their statements did not fit, and reads were planned again and again (p50
// 2.1-2.6x one project's, measured). In lanes, each connection serves its share of the projects (a
// twentieth with the default pool size) and keeps their statements and plans; lanes of two
// connections spread each project's statements over both and stayed at 1.8x.
//
// A statement waits only when no connection is free, for the first one released. The engine's fair
// gate admits PLATFORM_RESERVE fewer data statements than there are connections, but the
// statements that resolve a caller (its key, its session) are not gated: a flood of requests can
// still take every connection, as with one pool. The platform's statements (no project) take the
// first free lane.
import { pg, type Pool, type PoolClient } from './pg-driver.ts';

type PoolConfig = ConstructorParameters<typeof pg.Pool>[0] & { max: number };

interface Waiter {
  resolve(client: PoolClient): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
  /** the connect timeout passed (while waiting, or while the connection it was given was opening) */
  timedOut: boolean;
}

const TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';
const ENDING_MESSAGE = 'Client was closed: the pool is ending';

export class PoolLanes {
  private readonly lanes: Pool[];
  /** statements waiting for any lane, first come first served */
  private readonly waiters: Waiter[] = [];
  private ending = false;

  constructor(private readonly config: PoolConfig) {
    this.lanes = Array.from({ length: Math.max(1, config.max) }, () => new pg.Pool({ ...config, max: 1 }));
    // pg-pool tells of a release before the connection is idle again (or gone, if it broke); with
    // nobody waiting (nearly always) there is nothing to do, on the path of every statement
    for (const lane of this.lanes) lane.on('release', () => this.waiters.length > 0 && process.nextTick(() => this.serve()));
  }

  /** Every lane's pool, for listeners that each pool needs (postgres-db.ts watchPool). */
  get pools(): readonly Pool[] {
    return this.lanes;
  }

  get max(): number {
    return this.lanes.length;
  }

  get totalCount(): number {
    return this.sum((p) => p.totalCount);
  }

  get idleCount(): number {
    return this.sum((p) => p.idleCount);
  }

  get waitingCount(): number {
    return this.waiters.length + this.sum((p) => p.waitingCount);
  }

  /**
   * A connection for a statement of `key` (a project's schema; none: the platform's): its own
   * lane's if free, else the next free one; when none is, the first released. The connect timeout
   * bounds the whole: the wait and the connection's opening.
   */
  connect(key?: string): Promise<PoolClient> {
    if (this.ending) return Promise.reject(new Error(ENDING_MESSAGE));
    const lane = this.waiters.length === 0 ? this.free(key === undefined ? PLATFORM_ROUTE : laneRoute(key, this.lanes.length)) : undefined;
    if (lane) return this.take(lane);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timedOut: false };
      const ms = this.config.connectionTimeoutMillis;
      if (ms) waiter.timer = setTimeout(() => this.giveUp(waiter), ms).unref();
      this.waiters.push(waiter);
    });
  }

  async end(): Promise<void> {
    this.ending = true;
    for (const w of this.waiters.splice(0)) this.fail(w, new Error(ENDING_MESSAGE));
    await Promise.all(this.lanes.map((p) => p.end()));
  }

  /** The route's own lane if it is free, else the next free one along its step. */
  private free({ own, step }: LaneRoute): Pool | undefined {
    const n = this.lanes.length;
    for (let i = 0; i < n; i++) {
      const lane = this.lanes[(own + i * step) % n]!;
      if (lane.waitingCount === 0 && (lane.idleCount > 0 || lane.totalCount === 0)) return lane;
    }
    return undefined;
  }

  /** A failed connection attempt frees its lane without a release: the waiters may take it. */
  private take(lane: Pool): Promise<PoolClient> {
    let client: Promise<PoolClient>;
    try {
      client = lane.connect();
    } catch (err) {
      client = Promise.reject(err);
    }
    client.catch(() => process.nextTick(() => this.serve()));
    return client;
  }

  private serve(): void {
    while (this.waiters.length > 0) {
      const lane = this.free(PLATFORM_ROUTE);
      if (!lane) return;
      const w = this.waiters.shift()!;
      this.take(lane).then(
        (client) => {
          if (w.timedOut) return client.release(); // given up meanwhile: the connection goes back
          clearTimeout(w.timer);
          w.resolve(client);
        },
        (err: Error) => this.fail(w, err),
      );
    }
  }

  private giveUp(w: Waiter): void {
    w.timedOut = true;
    const i = this.waiters.indexOf(w);
    // still waiting: refused now; being given a connection: refused now, the connection released when it comes
    if (i >= 0) this.waiters.splice(i, 1);
    w.reject(new Error(TIMEOUT_MESSAGE));
  }

  private fail(w: Waiter, err: Error): void {
    clearTimeout(w.timer);
    w.reject(err);
  }

  private sum(f: (p: Pool) => number): number {
    let total = 0;
    for (const p of this.lanes) total += f(p);
    return total;
  }
}

/**
 * Where a key's statements go: its own lane, and when that one is busy the next free one `step`
 * lanes on, and so on round. The step is the key's too (prime to the number of lanes, so that the
 * round meets every lane): the projects whose lanes a busy project has taken spill over different
 * lanes, rather than all onto the first free one after them, whose named statements they would
 * turn over.
 */
export interface LaneRoute {
  own: number;
  step: number;
}

const PLATFORM_ROUTE: LaneRoute = { own: 0, step: 1 };

/** FNV-1a of a key's UTF-16 units: the same on every node and after every restart. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** The steps prime to `lanes`, by number of lanes. */
const STEPS = new Map<number, number[]>();
function stepsOf(lanes: number): number[] {
  let steps = STEPS.get(lanes);
  if (!steps) STEPS.set(lanes, (steps = Array.from({ length: Math.max(1, lanes - 1) }, (_, i) => i + 1).filter((k) => gcd(k, lanes) === 1)));
  return steps;
}

export function laneRoute(key: string, lanes: number): LaneRoute {
  const h = hashOf(key);
  const steps = stepsOf(lanes);
  return { own: h % lanes, step: steps[(h >>> 16) % steps.length]! };
}

/** A key's own lane. */
export const laneOf = (key: string, lanes: number): number => laneRoute(key, lanes).own;
