// PROJECT_MAX_BYTES on PostgreSQL. A schema has no size limit of its own, and measuring it inside
// every write (statement triggers) cost a third of PostgreSQL's single-row insert rate here, so the
// bound is kept from a measure: the bytes of the project's tables with their indexes and TOAST
// (`pg_total_relation_size`), taken at most once a second per project on each node, while the
// project writes. Below its bound a write runs as it is; at or past it, a write runs in a
// transaction that measures before and after, and is rolled back (507 storage_full, reason
// project_quota) if the store grew. So deleting rows makes room again once PostgreSQL has vacuumed
// them (autovacuum does, within minutes), as on the embedded engine, whose files stop growing at
// the bound by themselves. A project can pass its bound by what it writes before the next measure.
import { quoteIdent, StorageFull, type Db } from '../engine.ts';

/** One of the service's own table names as an SQL literal (they are plain identifiers). */
const quoteLiteral = (name: string) => {
  if (!/^\w+$/.test(name)) throw new Error(`internal: table name ${name}`);
  return `'${name}'`;
};

/** How old a node's measure of a project may be when it decides whether a write must be checked */
const MEASURE_EVERY_MS = 1000;
/** Projects remembered beyond this are forgotten once their measure is due again */
const REMEMBERED = 4096;
/** How long a measure waits for a lock on a table before it gives up until a later write */
const LOCK_WAIT_MS = 100;

interface Measure {
  at: number;
  full: boolean;
  /** a measure under way */
  pending: boolean;
}

export class StorageBound {
  private readonly measures = new Map<string, Measure>();

  constructor(
    /** PROJECT_MAX_BYTES */
    readonly limit: number,
    /** the project's schema */
    private readonly schemaOf: (projectId: string) => string,
    /** the project's own tables, besides those its owner created (_bp_tables) */
    private readonly ownTables: readonly string[],
    /** a connection counted against the project's share of the pool */
    private readonly store: (projectId: string) => Promise<Db>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Whether the project was at its bound at the last measure. A measure due is taken in the
   * background: no write waits for one (the first write of a project on a node counts as below).
   */
  full(projectId: string): boolean {
    const known = this.measures.get(projectId);
    if (!known || (!known.pending && this.now() - known.at >= MEASURE_EVERY_MS)) this.refresh(projectId, known?.full ?? false);
    return known?.full ?? false;
  }

  /** `write` on `tx` (a transaction), refused and so rolled back if the project at its bound grew. */
  async growing<T>(projectId: string, tx: Db, write: (tx: Db) => Promise<T>): Promise<T> {
    if (!this.full(projectId)) return write(tx);
    const before = await this.used(tx, projectId);
    const out = await write(tx);
    if ((await this.used(tx, projectId)) > before) throw new StorageFull(this.limit);
    return out;
  }

  private refresh(projectId: string, full: boolean): void {
    this.forgetSome();
    const entry: Measure = { at: this.now(), full, pending: true };
    this.measures.set(projectId, entry);
    this.measure(projectId).then(
      (isFull) => Object.assign(entry, { at: this.now(), full: isFull, pending: false }),
      // due again at the next write (a table locked, the database away), what was known kept
      () => Object.assign(entry, { at: Number.NEGATIVE_INFINITY, pending: false }),
    );
  }

  /**
   * A measure that never waits behind a lock (`pg_total_relation_size` takes the tables' weakest
   * one, which a column being added holds off): it is tried again at a later write.
   */
  private async measure(projectId: string): Promise<boolean> {
    const db = await this.store(projectId);
    return db.tx(async (tx) => {
      await tx.run(`SET LOCAL lock_timeout = ${LOCK_WAIT_MS}`);
      return (await this.used(tx, projectId)) >= this.limit;
    });
  }

  /** The bytes of the project's tables as `db` sees them (a transaction's own growth included). */
  private async used(db: Db, projectId: string): Promise<number> {
    const schema = this.schemaOf(projectId);
    const row = await db.get<{ used: string | number }>(this.usedSql(schema), [schema]);
    return Number(row?.used ?? 0);
  }

  /** Each name looked up on its own (to_regclass): filtering pg_class by schema alone reads all of it. */
  private usedSql(schema: string): string {
    const own = this.ownTables.map((n) => `(${quoteLiteral(n)})`).join(', ');
    return `SELECT coalesce(sum(pg_total_relation_size(to_regclass(format('%I.%I', CAST(? AS text), n)))), 0) AS used
      FROM (SELECT name AS n FROM ${quoteIdent(schema)}."_bp_tables" UNION ALL VALUES ${own}) AS names`;
  }

  private forgetSome(): void {
    if (this.measures.size < REMEMBERED) return;
    const due = this.now() - MEASURE_EVERY_MS;
    for (const [id, m] of this.measures) if (!m.pending && m.at < due) this.measures.delete(id);
  }
}
