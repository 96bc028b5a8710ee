// A Db whose statements and transactions each hold one of the project's slots in a FairGate while
// they run (the PostgreSQL engine's share of its pool; SQLite's worker pool gates its own threads).
import type { Db, SqlParam } from './engine.ts';
import type { FairGate } from './fair-gate.ts';

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

  /** A write whose loss is harmless waits for no slot either: with none free now, it is skipped. */
  async runBestEffort(sql: string, params?: readonly SqlParam[]): Promise<void> {
    await this.gate.runIfFree(this.key, () => this.inner.runBestEffort(sql, params));
  }

  /** One slot for the whole transaction: its statements run on the connection it holds. */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.gate.run(this.key, () => this.inner.tx(fn));
  }
}
