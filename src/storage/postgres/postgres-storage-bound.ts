// PROJECT_MAX_BYTES on PostgreSQL. A schema has no size limit of its own, and measuring it inside
// every write (statement triggers) cost a third of PostgreSQL's single-row insert rate here, so the
// bound is kept from a measure: the bytes of the project's tables with their indexes and TOAST
// (`pg_total_relation_size`), taken in the background at most once a second per project on each
// node while the project writes, plus what writes added since (`grew`). An insert whose body keeps
// the project below the bound runs as it is; others (updates, which write every row they reach,
// upserts, rows with wide defaults, columns added with a default, new tables and functions), and
// every write reaching the bound, measure what they write before and after in their transaction,
// one at a time per project, and are rolled back (507 storage_full, reason project_quota) if they
// grew it past the bound. So deleting rows makes room again once PostgreSQL has vacuumed them
// (autovacuum does, within minutes), as on the embedded engine, whose files stop at the bound by
// themselves. A refused write leaves the space it took, which PostgreSQL uses again once vacuumed
// but which counts until then: the project's growing writes are refused for a while after one.
import { quoteIdent, StorageFull, type Db, type GrowingOptions } from '../engine.ts';

/** The service's own table names as an SQL VALUES list (they are plain identifiers, never user text). */
function ownValues(names: readonly string[]): string {
  for (const n of names) if (!/^\w+$/.test(n)) throw new Error(`internal: table name ${n}`);
  return names.map((n) => `('${n}')`).join(', ');
}

/** How old a node's measure of a project may be when it decides whether a write must be checked */
const MEASURE_EVERY_MS = 1000;
/** Projects remembered beyond this are forgotten once their measure is due again */
const REMEMBERED = 4096;
/** After a refused write, how long the project's growing writes are refused before they write (unless it deletes rows) */
const REFUSED_FOR_MS = 5000;
/** How long a measure waits for a lock on a table before it gives up until a later write */
const LOCK_WAIT_MS = 100;

interface Measure {
  /** when the last measure began (0: never measured on this node) */
  at: number;
  /** the project's bytes at the last measure, and what measured writes added since */
  used: number;
  /** a measure under way */
  pending: boolean;
  /** what measured writes added while the measure is under way (it may not see them) */
  noted: number;
}

export class StorageBound {
  private readonly measures = new Map<string, Measure>();
  /** the end of each project's queue of measured writes (inTurn) */
  private readonly turns = new Map<string, Promise<void>>();
  /** projects whose growing writes are refused before they write until then (coolingDown) */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    /** PROJECT_MAX_BYTES */
    readonly limit: number,
    /** the project's schema */
    private readonly schemaOf: (projectId: string) => string,
    /** the project's own tables, besides those its owner created (_bp_tables) */
    ownTables: readonly string[],
    /** a connection counted against the project's share of the pool */
    private readonly store: (projectId: string) => Promise<Db>,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.ownValues = ownValues(ownTables);
  }

  /** the project's own tables as a VALUES list, for `used` */
  private readonly ownValues: string;

  /**
   * Engine.storageRoom: a write of about `adding` bytes that keeps the project below its bound runs
   * as it is; one that reaches it is measured (the space it needs may be free: rows deleted and
   * vacuumed); within the refusal window it is refused before it writes.
   */
  room(projectId: string, adding: number): 'free' | 'measure' {
    this.coolingDown(projectId);
    return this.known(projectId) + adding >= this.limit ? 'measure' : 'free';
  }

  /** Rows were deleted: the space they held may be free again, so the next write is measured rather than refused. */
  freed(projectId: string): void {
    this.refusedUntil.delete(projectId);
  }

  /**
   * After a write was refused, the project's growing writes are refused before they write for a
   * while: a refused write's space stays taken until PostgreSQL vacuums it, so refused writes in a
   * row grew the files as fast as accepted ones would (a hostile review).
   */
  private coolingDown(projectId: string): void {
    const until = this.refusedUntil.get(projectId);
    if (until === undefined) return;
    if (this.now() < until) throw new StorageFull(this.limit);
    this.refusedUntil.delete(projectId);
  }

  /**
   * `write` on `tx` (a transaction), refused (and so rolled back) if it grew what it writes past
   * the bound: measured before and after when the project is at its bound, or `always` (a write
   * whose size its request does not tell: an update of many rows, a bulk insert, a column's default).
   */
  async growing<T>(projectId: string, tx: Db, write: (tx: Db) => Promise<T>, opts: GrowingOptions = {}): Promise<T> {
    this.coolingDown(projectId);
    if (this.known(projectId) < this.limit && !opts.always) return write(tx);
    return this.inTurn(projectId, () => this.measured(projectId, tx, write, opts));
  }

  /**
   * A project's measured writes run one at a time on a node: each then measures its own growth, not
   * its neighbours' (concurrent bulk inserts each counted all of them, and were refused far below
   * the bound), and one refused stops those queued behind it before they write (each in flight wrote
   * and was refused, and the space stayed). A write waits holding its transaction, which has taken
   * no lock yet (every caller starts one for the write alone).
   */
  private async inTurn<T>(projectId: string, run: () => Promise<T>): Promise<T> {
    const previous = this.turns.get(projectId) ?? Promise.resolve();
    let release!: () => void;
    const chain = previous.then(() => new Promise<void>((r) => (release = r)));
    this.turns.set(projectId, chain);
    await previous;
    try {
      this.coolingDown(projectId);
      return await run();
    } finally {
      release();
      if (this.turns.get(projectId) === chain) this.turns.delete(projectId);
    }
  }

  private async measured<T>(projectId: string, tx: Db, write: (tx: Db) => Promise<T>, opts: GrowingOptions): Promise<T> {
    this.known(projectId); // (the entry may have been forgotten while this write waited its turn)
    const m = this.measures.get(projectId)!;
    // never measured on this node: measured now, not counted as empty
    if (m.at === 0) m.used = Math.max(m.used, await this.used(tx, projectId));
    const size = () => (opts.table === undefined ? this.used(tx, projectId) : this.tableSize(tx, projectId, opts.table));
    const before = await size();
    const out = await write(tx);
    const grown = (await size()) - before;
    if (grown > 0 && this.known(projectId) + grown > this.limit) {
      this.refusedUntil.set(projectId, this.now() + REFUSED_FOR_MS);
      throw new StorageFull(this.limit);
    }
    this.grew(projectId, grown);
    return out;
  }

  /**
   * Counts what a write added until the next measure replaces the figure, so that a burst of
   * writes, each within the bound on its own, is not each compared with the same old measure.
   */
  grew(projectId: string, bytes: number): void {
    const m = this.measures.get(projectId);
    if (!m || bytes <= 0) return;
    m.used += bytes;
    if (m.pending) m.noted += bytes;
  }

  /**
   * The project's bytes at the last measure. A measure due is taken in the background: no write
   * waits for one (the first write of a project on a node counts as none).
   */
  private known(projectId: string): number {
    const m = this.measures.get(projectId);
    if (!m || (!m.pending && this.now() - m.at >= MEASURE_EVERY_MS)) this.refresh(projectId, m?.used ?? 0);
    return this.measures.get(projectId)!.used;
  }

  private refresh(projectId: string, used: number): void {
    this.forgetSome();
    const entry: Measure = { at: this.measures.get(projectId)?.at ?? 0, used, pending: true, noted: 0 };
    this.measures.set(projectId, entry);
    const started = this.now();
    this.measure(projectId).then(
      (bytes) => Object.assign(entry, { at: started, used: bytes + entry.noted, pending: false, noted: 0 }),
      // due again at the next write (a table locked, the database away), what was known kept
      () => Object.assign(entry, { at: entry.at === 0 ? 0 : Number.NEGATIVE_INFINITY, pending: false, noted: 0 }),
    );
  }

  /**
   * A measure that never waits behind a lock (`pg_total_relation_size` takes the tables' weakest
   * one, which a column being added holds off): it is tried again at a later write.
   */
  private async measure(projectId: string): Promise<number> {
    const db = await this.store(projectId);
    return db.tx(async (tx) => {
      await tx.run(`SET LOCAL lock_timeout = ${LOCK_WAIT_MS}`);
      return this.used(tx, projectId);
    });
  }

  /** One table's bytes (0 when it does not exist), as `db` sees them. */
  private async tableSize(db: Db, projectId: string, table: string): Promise<number> {
    const row = await db.get<{ size: string | number | null }>(
      "SELECT pg_total_relation_size(to_regclass(format('%I.%I', CAST(? AS text), CAST(? AS text)))) AS size",
      [this.schemaOf(projectId), table],
    );
    return Number(row?.size ?? 0);
  }

  /** The bytes of the project's tables as `db` sees them (a transaction's own growth included). */
  private async used(db: Db, projectId: string): Promise<number> {
    const schema = this.schemaOf(projectId);
    const row = await db.get<{ used: string | number }>(this.usedSql(schema), [schema]);
    return Number(row?.used ?? 0);
  }

  /** Each name looked up on its own (to_regclass): filtering pg_class by schema alone reads all of it. */
  private usedSql(schema: string): string {
    return `SELECT coalesce(sum(pg_total_relation_size(to_regclass(format('%I.%I', CAST(? AS text), n)))), 0) AS used
      FROM (SELECT name AS n FROM ${quoteIdent(schema)}."_bp_tables" UNION ALL VALUES ${this.ownValues}) AS names`;
  }

  private forgetSome(): void {
    if (this.refusedUntil.size >= REMEMBERED) for (const [id, until] of this.refusedUntil) if (until <= this.now()) this.refusedUntil.delete(id);
    if (this.measures.size < REMEMBERED) return;
    const due = this.now() - MEASURE_EVERY_MS;
    for (const [id, m] of this.measures) if (!m.pending && m.at < due) this.measures.delete(id);
  }
}
