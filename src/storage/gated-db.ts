// A Db whose statements and transactions each hold one of the project's slots in a FairGate while
// they run (the PostgreSQL engine's share of its pool; SQLite's worker pool gates its own threads).
import type { Db, SqlParam } from './engine.ts';
import type { FairGate } from './fair-gate.ts';

/** Best-effort writes waiting for a slot (runBestEffort), by project and statement. */
const waitingWrites = new Set<string>();

export class GatedDb implements Db {
  constructor(
    private readonly inner: Db,
    private readonly gate: FairGate,
    private readonly key: string,
  ) {}

  get kind() {
    return this.inner.kind;
  }

  t(name: string): string {
    return this.inner.t(name);
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.gate.run(this.key, () => this.inner.all<T>(sql, params));
  }

  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.gate.run(this.key, () => this.inner.get<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<{ changes: number }> {
    return this.gate.run(this.key, () => this.inner.run(sql, params));
  }

  /**
   * A write whose loss is harmless never makes its request wait for a slot: it runs now if one is
   * free, else later, in the project's turn, without the request; one such statement of a project
   * waits at a time (a key's last use, whose values differ only by the time: a busy project's keys
   * would otherwise never record theirs, and its remembered callers, whose guard reads it, would
   * all go the long way).
   */
  async runBestEffort(sql: string, params?: readonly SqlParam[]): Promise<void> {
    const ran = await this.gate.runIfFree(this.key, async () => {
      await this.inner.runBestEffort(sql, params);
      return true;
    });
    if (ran) return;
    const waiting = `${this.key} ${sql}`;
    if (waitingWrites.has(waiting)) return;
    waitingWrites.add(waiting);
    void this.gate
      .run(this.key, () => this.inner.runBestEffort(sql, params))
      .catch(() => undefined)
      .finally(() => waitingWrites.delete(waiting));
  }

  /** One slot for the whole transaction: its statements run on the connection it holds. */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.gate.run(this.key, () => this.inner.tx(fn));
  }
}
