// INSERT statements of the passthrough: bulk inserts and upserts, a slice of at most 1024 rows a
// statement. The body is checked once before any statement; rows are completed (every column
// filled) a slice at a time, so that beyond the body itself memory is bounded by a slice and what
// the response returns. Rows with an explicit id are written first, then the id generator is moved
// past them once, then the rows whose ids it generates. Every statement's RETURNING carries the
// post-write check and the representation, so rows are never read back by a re-computed id; the
// rows returned are put back in input order.
import type { Db, Dialect, Engine, SqlParam } from '../../storage/engine.ts';
import { NotNullViolation, quoteIdent, ROW_FAILURE_CODES, UniqueViolation } from '../../storage/engine.ts';
import { AppError } from '../../errors.ts';
import type { SelectItem } from '../../rest-query/index.ts';
import type { AuthContext } from '../end-users.ts';
import { toParam } from '../column-values.ts';
import { canonicalJson } from '../../lib/jsonb.ts';
import { checkObject, completeForInsert, idTooLarge, inputOptions, MAX_EXPLICIT_ID, type InputOptions, type RowValues } from './row-input.ts';
import { rlsViolation, type Returned, type Returning, type Scope, type Written } from './scope.ts';
import { transact } from './dry-run.ts';
import { StaleGuess, type CallerGuess } from '../data-plane.ts';

/** Bound parameters in one statement: SQLite's limit (SQLITE_MAX_VARIABLE_NUMBER); PostgreSQL's is 65535. */
export const MAX_BOUND_PARAMS = 32766;
/** Rows in one statement: past this, fewer statements save little, while one statement holds its
 * connection longer and a prepared statement grows with it. */
export const MAX_ROWS_PER_STATEMENT = 1024;

/**
 * Slices of at most `max` items whose sizes are powers of two: the engines cache prepared statements
 * by their text, so a table sees a dozen statement shapes rather than one per row count.
 */
function slices<T>(items: T[], max: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; ) {
    let size = 1;
    while (size * 2 <= Math.min(max, items.length - i)) size *= 2;
    out.push(items.slice(i, i + size));
    i += size;
  }
  return out;
}

export interface InsertRequest {
  body: unknown[];
  /** `columns=`: the keys taken from each row. */
  only: string[] | null;
  /** The upsert's conflict column (`id` or a unique one); null: a plain insert. */
  target: string | null;
  /** merge-duplicates (else ignore-duplicates, when `target` is set). */
  merge: boolean;
  missingDefault: boolean;
  auth: AuthContext | null;
  now: Date;
  /**
   * The caller was guessed (data-plane.ts CallerGuess): a plain insert of one row then writes it
   * only where the guard holds, in the same statement; any other insert is refused with StaleGuess
   * before it writes anything, to be run the long way.
   */
  guess: CallerGuess | null;
  /** a single object (CONTRACT §5): a written row the caller may not see fails its statement (406) */
  mustShow: boolean;
  /** Prefer: tx=rollback: written in a transaction that is rolled back once the answer is known */
  dryRun: boolean;
}

/** What the first pass over a body found: the columns it names, and the input positions of rows with and without an explicit id. */
export interface InsertPlan {
  present: Set<string>;
  explicit: number[];
  generated: number[];
}

/** A row of a statement: its input position, its complete values, and the key its RETURNING row is
 * matched by (the conflict column's value, or an explicit id; null: matched by generated id). */
interface Slot {
  pos: number;
  row: RowValues;
  key: unknown;
}

/** How a statement's RETURNING rows are matched to its slots: by the conflict column, by id, or by generated-id order. */
type KeyedBy = 'column' | 'id' | null;

const repeatedKey = (column: string) =>
  new AppError('invalid_body.repeated_key', { column });

const idBesideUniqueTarget = (column: string) =>
  new AppError('read_only_column.upsert_id', { column });

/** A failure that only a written row can cause: its post-write check, or a constraint. */
const isRowFailure = (err: unknown) =>
  err instanceof UniqueViolation || err instanceof NotNullViolation || (err instanceof AppError && ROW_FAILURE_CODES.has(err.code));

/** A conflict key as compared in JavaScript: json by its canonical text, every other type by its checked value. */
function keyOf(type: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return type === 'json' ? canonicalJson(value) : value;
}

/** Where returned rows go: counted, and those shown kept at their input position. */
class Placement {
  count = 0;
  private readonly rows: (Record<string, unknown> | undefined)[];

  constructor(size: number) {
    this.rows = new Array(size);
  }

  /** Matches a statement's returned rows to its slots; returns the slots that got none. */
  take(slots: Slot[], returned: Returned[], keyOfReturned: (r: Returned) => unknown): Slot[] {
    const byKey = new Map<unknown, Slot[]>();
    const unkeyed: Slot[] = [];
    for (const s of slots) {
      const same = s.key === null ? unkeyed : byKey.get(s.key);
      if (same) same.push(s);
      else byKey.set(s.key, [s]);
    }
    const filled = new Set<Slot>();
    const fill = (s: Slot | undefined, r: Returned) => {
      if (!s) throw new Error('a RETURNING row matches no row of its statement');
      filled.add(s);
      this.count++;
      if (r.row) this.rows[s.pos] = r.row;
    };
    const generated: Returned[] = [];
    for (const r of returned) {
      const key = keyOfReturned(r);
      if (key === null) generated.push(r);
      else fill(byKey.get(key)?.shift(), r);
    }
    // the engines generate ids in VALUES order, which is the slots' order
    generated.sort((a, b) => a.id - b.id).forEach((r, i) => fill(unkeyed[i], r));
    return slots.filter((s) => !filled.has(s));
  }

  written(): Written {
    return { count: this.count, rows: this.rows.filter((r) => r !== undefined) };
  }
}

export class Inserter {
  constructor(private readonly engine: Engine) {}

  /**
   * Checks every row before any statement (types, unknown columns, ids; an upsert's rules), and
   * notes what the statements need. A row's missing NOT NULL columns show when it is completed.
   */
  plan(scope: Scope, req: InsertRequest): InsertPlan {
    const opts = this.inputOptions(scope, req);
    const plan: InsertPlan = { present: new Set(req.only ?? []), explicit: [], generated: [] };
    const keys = new Set<unknown>();
    req.body.forEach((body, pos) => {
      const row = checkObject(body, opts);
      if (!req.only) for (const k of row.keys()) plan.present.add(k);
      if (row.has('id') && req.target !== null && req.target !== 'id') throw idBesideUniqueTarget(req.target);
      (row.has('id') ? plan.explicit : plan.generated).push(pos);
      if (!req.merge) return;
      // as PostgreSQL's ON CONFLICT DO UPDATE, which cannot affect a row twice in one statement
      const key = keyOf(scope.types.get(req.target!)!, row.get(req.target!));
      if (key !== null && keys.has(key)) throw repeatedKey(req.target!);
      keys.add(key);
    });
    plan.present.delete('id');
    return plan;
  }

  /**
   * Writes a planned body, all or nothing; `show`: the representation to return, or null. `check`
   * sees how many rows were written before they are committed (a failure rolls the write back). A
   * plain insert of generated ids that is one statement (one slice: a single row, or a power of two
   * of them up to a statement's rows) is that statement alone, outside any
   * transaction: the statement checks its own rows (Scope.returning), so it is atomic by itself,
   * and on PostgreSQL it saves the BEGIN and COMMIT round trips. Such an insert writes every row or
   * fails, so `check` runs before it, on the body's length.
   */
  async write(db: Db, scope: Scope, req: InsertRequest, plan: InsertPlan, show: { select: SelectItem[] | null } | null, check: (count: number) => void): Promise<Written> {
    // a batch per attempt: an engine may run a transaction twice (Engine.data)
    const newBatch = () => new Batch(this.engine.dialect, scope, req, plan, new Placement(show ? req.body.length : 0), this.inputOptions(scope, req), show);
    const generatedBy: KeyedBy = req.target !== null && req.target !== 'id' ? 'column' : null;
    const run = async (tx: Db) => {
      const batch = newBatch();
      // explicit ids first (an upsert on id matches them), then the generator moves past them once
      await batch.pass(tx, plan.explicit, 'id');
      if (plan.explicit.length > 0) await this.engine.dialect.afterExplicitIds(tx, scope.t);
      await batch.pass(tx, plan.generated, generatedBy);
      return batch.placement.written();
    };
    // one slice is one statement (slices are powers of two: three rows are two statements)
    const oneStatement = !req.dryRun && req.target === null && plan.explicit.length === 0 && slices(plan.generated, newBatch().rowsPerStatement(generatedBy)).length <= 1;
    // a project at its storage bound writes in a transaction that can tell whether it grew (Engine.growing)
    // estimated only for an engine that counts writes (PostgreSQL's storage bound)
    let estimate: number | undefined;
    const adding = () => (estimate ??= rowBytes(req.body) + req.body.length * defaultsBytes(scope));
    const direct = this.room(scope, req, adding) === 'free' && oneStatement && !wideDefaults(scope);
    if (req.guess && !(direct && plan.generated.length === 1 && scope.table.columns.length > 0)) throw new StaleGuess();
    if (direct) {
      check(plan.generated.length);
      const written = await run(db);
      this.engine.grew(scope.projectId, adding);
      return written;
    }
    // several rows, or rows with their defaults: measured (Engine.growing)
    return transact(db, req.dryRun, (outer) =>
      scope.growing(
        outer,
        async (tx) => {
          const written = await run(tx);
          check(written.count);
          return written;
        },
        true,
      ),
    );
  }

  /** Engine.storageRoom; a refusal is told a guessed caller only once the caller is known (run the long way). */
  private room(scope: Scope, req: InsertRequest, adding: () => number): 'free' | 'measure' {
    try {
      return this.engine.storageRoom(scope.projectId, adding);
    } catch (err) {
      throw req.guess ? new StaleGuess() : err;
    }
  }

  private inputOptions(scope: Scope, req: InsertRequest): InputOptions {
    // an upsert on id may name a larger existing row; inserting it is refused (Batch.insert)
    return inputOptions(scope.table.columns, req.target === 'id' ? Number.MAX_SAFE_INTEGER : MAX_EXPLICIT_ID, req.only);
  }
}

/**
 * Whether a row's defaults alone are large (a column with a 1 MiB default makes a two-byte insert a
 * 1 MiB row): such an insert's size is not its body's, so it is measured (Engine.growing).
 */
function wideDefaults(scope: Scope): boolean {
  return defaultsBytes(scope) > WIDE_DEFAULTS;
}

/** What a row's literal defaults take at most (Engine.grew counts them for each row too) */
function defaultsBytes(scope: Scope): number {
  let bytes = defaultBytes.get(scope.table.columns);
  if (bytes === undefined) {
    bytes = 0;
    for (const c of scope.table.columns) bytes += writtenBytes(c.default);
    defaultBytes.set(scope.table.columns, bytes);
  }
  return bytes;
}
const WIDE_DEFAULTS = 64 * 1024;
const defaultBytes = new WeakMap<object, number>();

/** About what a body's rows take once written (Engine.grew): their values, and a little for each row. */
function rowBytes(rows: unknown[]): number {
  let bytes = 0;
  for (const row of rows) {
    bytes += 32;
    if (row !== null && typeof row === 'object') for (const v of Object.values(row)) bytes += writtenBytes(v);
  }
  return bytes;
}

/** About what a value takes once written: UTF-8 text, JSON text, 8 bytes for a scalar */
const writtenBytes = (v: unknown): number =>
  typeof v === 'string' ? Buffer.byteLength(v) : v === null || v === undefined ? 0 : typeof v === 'object' ? Buffer.byteLength(JSON.stringify(v)) : 8;

/** One request's inserts: its returning lists, its policies, and where the returned rows go. */
class Batch {
  private insertRet!: Returning;
  /** merge-duplicates: the UPDATE of existing rows. */
  private mergeRet: Returning | null = null;
  private mergeWhere: { sql: string; params: SqlParam[] } = { sql: '', params: [] };
  /** How the rows of the current pass are matched to what their statements return. */
  private keyedBy: KeyedBy = null;
  /** where the current pass writes */
  private tx!: Db;

  constructor(
    private readonly dialect: Dialect,
    private readonly scope: Scope,
    private readonly req: InsertRequest,
    private readonly plan: InsertPlan,
    readonly placement: Placement,
    private readonly opts: InputOptions,
    show: { select: SelectItem[] | null } | null,
  ) {
    this.prepare(show);
  }

  /** The RETURNING lists (with the conflict column, to match rows by) and the merge's policies. */
  private prepare(show: { select: SelectItem[] | null } | null): void {
    const { scope, req } = this;
    const key = req.target !== null && req.target !== 'id' ? `, ${quoteIdent(req.target)} AS "#key"` : '';
    const withKey = (r: Returning): Returning => ({ ...r, sql: r.sql + key });
    this.insertRet = withKey(scope.returning('INSERT', show, true, true, req.mustShow));
    if (!req.merge) return;
    this.mergeRet = withKey(scope.returning('UPDATE', show, true, false, req.mustShow));
    // an existing row is merged only if the caller may update it and see it
    const policies = [scope.policy('UPDATE'), scope.policy('SELECT')].filter((p) => p !== null);
    this.mergeWhere = { sql: policies.map((p) => ` AND (${p.sql})`).join(''), params: policies.flatMap((p) => p.params) };
  }

  /** Rows one statement may carry: its bound parameters (each row's, and the policies') stay within the engines' limit. */
  rowsPerStatement(keyedBy: KeyedBy): number {
    const width = Math.max(1, this.scope.table.columns.length + (keyedBy === 'id' ? 1 : 0));
    const fixed = this.insertRet.params.length + (this.mergeRet?.params.length ?? 0) + this.mergeWhere.params.length;
    return Math.min(MAX_ROWS_PER_STATEMENT, Math.floor((MAX_BOUND_PARAMS - fixed) / width));
  }

  /** Completes and writes the rows at `positions`, a slice a statement; upserts where the rows carry the conflict key. */
  async pass(tx: Db, positions: number[], keyedBy: KeyedBy): Promise<void> {
    this.keyedBy = keyedBy;
    this.tx = tx;
    const upsert = this.req.target !== null && (keyedBy === 'column' || this.req.target === keyedBy);
    for (const slice of slices(positions, this.rowsPerStatement(keyedBy))) {
      const slots = this.complete(slice);
      if (upsert) await this.upsert(slots);
      else await this.insert(slots, false);
    }
  }

  private complete(positions: number[]): Slot[] {
    const { scope, req } = this;
    const given = positions.map((pos) => checkObject(req.body[pos], this.opts));
    const rows = completeForInsert(given, scope.table.columns, this.plan.present, req.missingDefault, req.auth, req.now);
    const key = (row: RowValues) =>
      this.keyedBy === 'column' ? keyOf(scope.types.get(req.target!)!, row.get(req.target!)) : this.keyedBy === 'id' ? row.get('id') : null;
    return rows.map((row, i) => ({ pos: positions[i]!, row, key: key(row) }));
  }

  /** The key a returned row is matched by (see KeyedBy). */
  private returnedKey = (r: Returned): unknown => {
    if (this.keyedBy === 'id') return r.id;
    if (this.keyedBy === null) return null;
    const type = this.scope.types.get(this.req.target!)!;
    return keyOf(type, this.dialect.decodeValue(type, r.raw['#key']));
  };

  /**
   * One slice of an upsert. merge-duplicates: existing rows the caller may update and see are
   * updated; the rest are inserted unless their key exists, as a row the policies hide, or one
   * inserted concurrently since (the INSERT waited for it): that one is updated now, and a row
   * still left is hidden: 403, as PostgreSQL's ON CONFLICT DO UPDATE. ignore-duplicates: inserted
   * unless the key exists. Rows without a key are plain inserts.
   */
  private async upsert(slots: Slot[]): Promise<void> {
    let rest = slots;
    if (this.mergeRet) {
      const left = new Set(await this.update(slots.filter((s) => s.key !== null)));
      rest = slots.filter((s) => s.key === null || left.has(s));
    }
    rest = await this.insert(rest, true);
    if (this.mergeRet && rest.length > 0 && (await this.update(rest)).length > 0) throw rlsViolation();
  }

  /** One multi-row INSERT … RETURNING (ON CONFLICT DO NOTHING for an upsert); returns the slots not inserted. */
  private async insert(slots: Slot[], onConflict: boolean): Promise<Slot[]> {
    if (slots.length === 0) return [];
    const { tx, scope } = this;
    const cols = [...slots[0]!.row.keys()];
    const conflict = onConflict ? ` ON CONFLICT (${quoteIdent(this.req.target!)}) DO NOTHING` : '';
    // a table without columns: a VALUES entry that makes the engine generate the id (`DEFAULT
    // VALUES` inserts one row only)
    const tuple = `(${cols.length ? cols.map(() => '?').join(', ') : this.dialect.generatedId})`;
    const names = cols.length ? cols.map(quoteIdent).join(', ') : '"id"';
    const params = slots.flatMap((s) => cols.map((c) => toParam(scope.types.get(c)!, s.row.get(c))));
    const guard = this.req.guess?.guard;
    // under a guessed caller (one row): the row comes from a SELECT that yields it only where the
    // guard holds, so that a stale guess writes nothing (the target columns type its parameters)
    const rows = guard ? ` SELECT ${cols.map(() => '?').join(', ')} WHERE ${guard.sql}` : ` VALUES ${slots.map(() => tuple).join(', ')}`;
    const raw = await tx
      .all<Record<string, unknown>>(`INSERT INTO ${scope.t} (${names})${rows}${conflict} RETURNING ${this.insertRet.sql}`, [
        ...params,
        ...(guard?.params ?? []),
        ...this.insertRet.params,
      ])
      .catch((err) => {
        // only a row the guard let through can fail its checks or constraints: the guess held,
        // and running the insert again the long way would fail the same way (and spend an id)
        if (guard && isRowFailure(err)) this.req.guess!.confirmed = true;
        throw err;
      });
    if (guard) {
      if (raw.length === 0) throw new StaleGuess();
      this.req.guess!.confirmed = true;
    }
    const returned = scope.collect(raw, this.insertRet);
    // an upsert on id may name an id up to 2^53 - 1 to update it, never to insert it
    if (this.keyedBy === 'id' && returned.some((r) => r.id > MAX_EXPLICIT_ID)) throw idTooLarge();
    return this.placement.take(slots, returned, this.returnedKey);
  }

  /**
   * The UPDATE half of a merge, set-based: each existing row whose conflict key a slot names gets
   * the columns the body names, if the caller may update and see it. The key is set too, so that a
   * row naming nothing else still runs the checks. Returns the slots that updated nothing.
   */
  private async update(slots: Slot[]): Promise<Slot[]> {
    if (slots.length === 0) return [];
    const { tx, scope, req } = this;
    const ret = this.mergeRet!;
    const cols = [req.target!, ...[...this.plan.present].filter((c) => c !== req.target)];
    // PostgreSQL types a VALUES column by its first row: cast there, the other rows follow
    const cast = `(${cols.map((c) => `CAST(? AS ${this.dialect.columnType(scope.types.get(c)!)})`).join(', ')})`;
    const plain = `(${cols.map(() => '?').join(', ')})`;
    const values = [cast, ...slots.slice(1).map(() => plain)].join(', ');
    const sets = cols.map((c, i) => `${quoteIdent(c)} = "#v"."#v${i}"`).join(', ');
    const params = slots.flatMap((s) => cols.map((c) => toParam(scope.types.get(c)!, s.row.get(c))));
    const raw = await tx.all<Record<string, unknown>>(
      `WITH "#v"(${cols.map((_, i) => `"#v${i}"`).join(', ')}) AS (VALUES ${values})` +
        ` UPDATE ${scope.t} SET ${sets} FROM "#v" WHERE ${quoteIdent(req.target!)} = "#v"."#v0"${this.mergeWhere.sql} RETURNING ${ret.sql}`,
      [...params, ...this.mergeWhere.params, ...ret.params],
    );
    return this.placement.take(slots, scope.collect(raw, ret), this.returnedKey);
  }
}
