// The REST passthrough (SPEC 4.5, CONTRACT §5): PostgREST grammar in, rows out, with the key's
// permissions and the row-level-security policies applied on every route.
//
// Row security follows PostgreSQL's: a write that reads existing values (the filter of PATCH and
// DELETE, the id and filters of a per-row route, the existing row of an upsert) touches only rows
// that pass the SELECT policies too, and returns only rows that pass them after the write. Reading
// existing values needs the key's `select` permission (PostgreSQL: WHERE and RETURNING need
// SELECT), so without it a write gets no count and no representation, cannot ask for a single
// object, and its filter and order may name no column but `id`: whether a filter matched shows in
// the answer (404, a post-write check's 403, a unique violation's 409), so a filter on a value
// would read it a character at a time. Ids say only which rows exist, as an insert's 409 does.
import type { Db, Engine, Sql, SqlParam } from '../../storage/engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, SchemaMismatch } from '../../storage/engine.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../errors.ts';
import { filterToPolicy, parseQuery, parsePrefer, resolveRange, contentRange, type Filter, type ParsedQuery, type Prefer, type SelectItem } from '../../rest-query/index.ts';
import type { ColumnDef } from '../tables.ts';
import type { ProjectSchemaCache } from '../project-schema.ts';
import type { PolicyService } from '../policies.ts';
import type { AuthContext } from '../end-users.ts';
import type { KeyCaller, Permission } from '../keys.ts';
import { toParam } from '../column-values.ts';
import { checkObject, completeForReplace, inputOptions, invalidValue, parseBodyRows, type RowValues } from './row-input.ts';
import { Scope, type Operation, type Returning, type Written } from './scope.ts';
import { Inserter, type InsertRequest } from './insert.ts';
import { guardedRead } from './guarded-read.ts';
import { transact } from './dry-run.ts';
import { CSV_MEDIA, toCsv, wantsCsv } from './csv.ts';
import { StaleGuess, type CallerGuess } from '../data-plane.ts';
import { maxShownRows, tally, tooManyRows } from './tally.ts';

export type { Operation };

/** What a request asks of a table, whoever asks it. */
export interface RestTarget {
  projectId: string;
  table: string;
  rowId: string | null;
  method: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  query: URLSearchParams;
  prefer: string | string[] | undefined;
  accept: string | undefined;
  range: string | undefined;
  body: unknown;
  /** the project's schema version, read with the credentials; absent: read now (project-schema.ts) */
  version?: number;
  /** a read that assumes the caller and version above: its statement checks them (data-plane.ts) */
  guess?: CallerGuess;
}

/** What a request asks, whichever table it names. */
export type RestRequestParts = Pick<RestTarget, 'method' | 'query' | 'prefer' | 'accept' | 'range' | 'body'>;

/**
 * Who acts. A data-plane caller (`kind` absent or `key`: the passthrough, functions) has its API
 * key's permissions, under the table's policies for `auth`. The project's owner on the platform API
 * (`owner`, services/rows/owner-rows.ts) holds every table permission and acts either as a caller of
 * the passthrough (`policies: true`, `auth` that caller: anonymous or an end user) or as itself
 * (`policies: false`, `auth` null): every row, and no policy applies.
 */
export type RowCaller =
  | { kind?: 'key'; key: KeyCaller; auth: AuthContext | null }
  | { kind: 'owner'; policies: true; auth: AuthContext | null }
  | { kind: 'owner'; policies: false; auth: null };

export type RestRequest = RestTarget & RowCaller;

export interface RestResponse {
  status: number;
  body?: unknown;
  headers: Record<string, string>;
}

const OBJECT_MEDIA = 'application/vnd.pgrst.object+json';

const PERMISSION_OF: Record<RestRequest['method'], Permission> = {
  GET: 'select',
  HEAD: 'select',
  POST: 'insert',
  PATCH: 'update',
  PUT: 'update',
  DELETE: 'delete',
};

/** Every table permission: what functions' context.db and the owner hold. */
export const TABLE_PERMISSIONS: ReadonlySet<Permission> = new Set(['select', 'insert', 'update', 'delete']);

const permissionsOf = (r: RowCaller): ReadonlySet<Permission> => (r.kind === 'owner' ? TABLE_PERMISSIONS : r.key.permissions);

/** The row filters of a caller no policy restricts: every operation open. */
const NO_POLICIES = () => null;

const notSingle = (n: number) => new AppError('not_single', { rows: n });
const needsSelect = (why: string) => new AppError('insufficient_permission.select', { why });

/** `max-affected`, applied as PostgREST 13 applies it: under handling=strict, to PATCH, PUT and DELETE. */
const maxAffected = (prefer: Prefer, r: RestRequest): number | null =>
  prefer.handling === 'strict' && r.method !== 'POST' && r.method !== 'GET' && r.method !== 'HEAD' ? prefer.maxAffected : null;

const namesOnlyId = (f: Filter): boolean => (f.kind === 'cond' ? f.column === 'id' : f.items.every(namesOnlyId));

function where(parts: (Sql | null)[]): Sql {
  const present = parts.filter((p): p is Sql => p !== null);
  if (present.length === 0) return { sql: '', params: [] };
  return { sql: ` WHERE ${present.map((p) => `(${p.sql})`).join(' AND ')}`, params: present.flatMap((p) => p.params) };
}

/** How a write answers: its status, default return, and whether one row is the whole answer. */
interface ReplyShape {
  status: 200 | 201;
  defaultReturn: 'representation' | 'minimal';
  single: boolean;
}

export class RowService {
  private readonly inserter: Inserter;

  constructor(
    private readonly engine: Engine,
    private readonly schemas: ProjectSchemaCache,
    private readonly policies: PolicyService,
    private readonly clock: Clock,
    private readonly maxRows: number,
  ) {
    this.inserter = new Inserter(engine);
  }

  async handle(r: RestRequest): Promise<RestResponse> {
    const needed = PERMISSION_OF[r.method];
    if (!permissionsOf(r).has(needed)) throw new AppError('insufficient_permission', { permission: needed });
    const schema = await this.schemas.get(r.projectId, r.version);
    const table = schema.tables.get(r.table);
    if (!table) throw new AppError('not_found', { what: 'table' });
    const db = await this.engine.data(r.projectId, schema.version);
    const filters = r.kind === 'owner' && !r.policies ? NO_POLICIES : this.policies.rowFilters(schema.policies.get(table.id) ?? [], table, r.auth);
    const scope = new Scope(db, table, this.engine, filters, r.auth, r.projectId);
    const q = parseQuery(r.query, [...scope.types].map(([name, type]) => ({ name, type })));
    const prefer = parsePrefer(r.prefer);
    if (prefer.handling === 'strict' && prefer.rejected.length) throw new AppError('invalid_preference', { preference: prefer.rejected[0] });
    const accept = (r.accept ?? '').toLowerCase();
    const single = accept.includes(OBJECT_MEDIA);
    let rowId: number | null = null;
    if (r.rowId !== null) {
      if (!/^[1-9]\d{0,15}$/.test(r.rowId) || !Number.isSafeInteger(Number(r.rowId))) throw new AppError('not_found', { what: 'row' });
      rowId = Number(r.rowId);
    }
    if (r.method !== 'GET' && r.method !== 'HEAD') this.refuseBlindReads(r, q, prefer, single);
    // a guessed caller reads, or inserts one row, in one statement (insert.ts decides which inserts);
    // another write, or a read of two statements (a count), is not guessed
    if (r.guess && (!['GET', 'HEAD', 'POST'].includes(r.method) || prefer.count !== null || prefer.tx === 'rollback')) throw new StaleGuess();
    try {
      switch (r.method) {
        case 'GET':
        case 'HEAD':
          return rowId !== null ? await this.getOne(scope, q, rowId, r.guess) : await this.list(scope, q, prefer, r.range, single ? 'object' : wantsCsv(accept) ? 'csv' : 'json', r.guess);
        case 'POST':
          if (rowId !== null) throw new AppError('method_not_allowed.post_row');
          return await this.insert(scope, q, prefer, r, single);
        case 'PATCH':
        case 'PUT':
          return await this.update(scope, q, prefer, r, rowId, single);
        case 'DELETE':
          return await this.remove(scope, q, prefer, r, rowId, single);
      }
    } catch (err) {
      if (err instanceof UniqueViolation) throw new AppError('unique_violation.row');
      if (err instanceof NotNullViolation) throw invalidValue(err.column ?? 'unknown', 'not_null');
      // built for the version this request read: the owner changed the table since, or a fault of ours
      if (err instanceof SchemaMismatch) throw (await this.schemas.changedSince(r.projectId, schema.version)) ? new AppError('write_conflict.schema_changed') : err.original;
      throw err;
    }
  }

  /** A single-object write returns the written row, and a write's filter or order on a column
   * other than `id` reads the values it picks by: without `select` they are refused before any work
   * (even 406 against 200, 404 against 204 or 409 against 200 would tell whether a filter matched).
   * (Counts and representations are left out of blind writes where they are produced.) */
  private refuseBlindReads(r: RestRequest, q: ParsedQuery, prefer: Prefer, single: boolean): void {
    if (permissionsOf(r).has('select')) return;
    if (single) throw needsSelect('A single-object response returns the written row.');
    if (q.filter && !namesOnlyId(q.filter)) throw needsSelect("A write's filter on a column other than id reads its values.");
    if (q.order.some((o) => o.column !== 'id')) throw needsSelect("A write's order on a column other than id reads its values.");
    if (maxAffected(prefer, r) !== null) throw needsSelect('max-affected tells how many rows a write reaches.');
  }

  private orderSql(scope: Scope, q: ParsedQuery): string {
    const items = q.order.map((o) => {
      if (scope.types.get(o.column) === 'json')
        throw new AppError('unsupported_order', { column: o.column });
      const col = quoteIdent(o.column);
      const ref = scope.types.get(o.column) === 'text' ? `${col}${this.engine.dialect.binaryCollation}` : col;
      const nulls = o.nulls ?? (o.dir === 'asc' ? 'last' : 'first');
      return `${ref} ${o.dir.toUpperCase()} NULLS ${nulls.toUpperCase()}`;
    });
    if (!q.order.some((o) => o.column === 'id')) items.push('"id" ASC');
    return ` ORDER BY ${items.join(', ')}`;
  }

  /** The query's filters, compiled by the engine's policy compiler (in the request's context, as
   * the policies are, though no filter names $auth or the clock). */
  private filterSql(scope: Scope, q: ParsedQuery): Sql | null {
    if (!q.filter) return null;
    const out = this.engine.dialect.compilePolicy(filterToPolicy(q.filter, scope.types), { auth: scope.auth, now: this.clock.now() });
    return { sql: out.sql, params: out.params as SqlParam[] };
  }

  private async list(scope: Scope, q: ParsedQuery, prefer: Prefer, rangeHeader: string | undefined, media: 'json' | 'object' | 'csv', guess?: CallerGuess): Promise<RestResponse> {
    const { limit, offset } = resolveRange({ limit: q.limit, offset: q.offset, rangeHeader, maxRows: this.maxRows });
    const w = where([this.filterSql(scope, q), scope.policy('SELECT')]);
    const p = scope.projection(q.select);
    const order = this.orderSql(scope, q);
    const rest = { sql: ` FROM ${scope.t}${w.sql}${order} LIMIT ? OFFSET ?`, params: [...w.params, limit, offset] };
    const raw = guess
      ? await guardedRead(scope.db, guess, p.sql, rest, order)
      : await scope.db.all<Record<string, unknown>>(`SELECT ${p.sql}${rest.sql}`, rest.params);
    const rows = raw.map((x) => scope.decode(x, p.items));
    // planned and estimated counts are exact too: no estimate is closer, and the statement is bounded as any
    let total: number | null = null;
    if (prefer.count !== null) {
      const c = await scope.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${scope.t}${w.sql}`, w.params);
      total = Number(c?.n ?? 0);
    }
    const headers: Record<string, string> = { 'Content-Range': contentRange(offset, rows.length, total) };
    if (prefer.count !== null) headers['Preference-Applied'] = `count=${prefer.count}`;
    if (media === 'object') {
      if (rows.length !== 1) throw notSingle(rows.length);
      return { status: 200, body: rows[0], headers };
    }
    if (media === 'csv') return { status: 200, body: toCsv(p.items, rows, (c) => scope.types.get(c) === 'json'), headers: { ...headers, 'Content-Type': `${CSV_MEDIA}; charset=utf-8` } };
    return { status: 200, body: rows, headers };
  }

  private async getOne(scope: Scope, q: ParsedQuery, id: number, guess?: CallerGuess): Promise<RestResponse> {
    const w = where([{ sql: '"id" = ?', params: [id] }, this.filterSql(scope, q), scope.policy('SELECT')]);
    const p = scope.projection(q.select);
    const rest = { sql: ` FROM ${scope.t}${w.sql}`, params: w.params };
    const raw = guess ? (await guardedRead(scope.db, guess, p.sql, rest, null))[0] : await scope.db.get<Record<string, unknown>>(`SELECT ${p.sql}${rest.sql}`, rest.params);
    if (!raw) throw new AppError('not_found', { what: 'row' });
    return { status: 200, body: scope.decode(raw, p.items), headers: {} };
  }

  /** The rows to return after a write, if any: representation asked (or the default) and `select` held. */
  private show(q: ParsedQuery, prefer: Prefer, r: RestRequest, shape: ReplyShape): { select: SelectItem[] | null } | null {
    const wanted = (prefer.return ?? shape.defaultReturn) === 'representation';
    return wanted && permissionsOf(r).has('select') ? { select: q.select } : null;
  }

  /** The rows a PATCH, PUT or DELETE touches: its id and filters (ANDed), the operation's policies
   * and, since it reads existing values, the SELECT policies. */
  private async target(tx: Db, scope: Scope, q: ParsedQuery, rowId: number | null, op: Operation): Promise<Sql> {
    const id: Sql | null = rowId !== null ? { sql: '"id" = ?', params: [rowId] } : null;
    const w = where([id, this.filterSql(scope, q), scope.policy(op), scope.policy('SELECT')]);
    if (q.limit === null && q.offset === 0) return w;
    // PostgREST's limited write: the first rows in the query's order (ids last), never more. The
    // conditions stay on the outer statement too, so a row changed since the pick is re-checked.
    const picked = `"id" IN (SELECT "id" FROM ${scope.t}${w.sql}${this.orderSql(scope, q)} LIMIT ? OFFSET ?)`;
    return { sql: `${w.sql ? `${w.sql} AND` : ' WHERE'} ${picked}`, params: [...w.params, ...w.params, q.limit ?? Number.MAX_SAFE_INTEGER, q.offset] };
  }

  /** 404 for a per-row route that touched nothing, 406 for a single object that is not exactly one
   * row (inside the transaction: the write rolls back). */
  private finish(count: number, rowId: number | null, single: boolean): void {
    if (rowId !== null && count === 0) throw new AppError('not_found', { what: 'row' });
    if (single && count !== 1) throw notSingle(count);
  }

  /** 406 for a single object whose one written row its caller may not see (CONTRACT §5, §10: the
   * result is what SELECT sees), inside the transaction: the write rolls back. An update counts
   * here, exactly; an insert asserts it in its own statement instead (Scope.returning `mustShow`),
   * since a one-statement insert has no transaction to roll back. */
  private finishShown(shown: number): void {
    if (shown !== 1) throw notSingle(shown);
  }

  /**
   * Runs a PATCH, PUT or DELETE whose RETURNING list is `ret`, holding no more rows than it may
   * return: the rows are counted and checked as they are read, and a representation of more than
   * MAX_RETURNED_CELLS values rolls the write back (413).
   */
  private async touch(tx: Db, scope: Scope, sql: string, params: SqlParam[], ret: Returning, rowId: number | null, single: boolean, maxAffected: number | null): Promise<Written> {
    const max = ret.items ? maxShownRows(ret.items.length) : 0;
    const t = await tally(tx, sql, params, ret.items ? max + 1 : 0);
    this.finish(t.count, rowId, single);
    if (maxAffected !== null && t.count > maxAffected) throw new AppError('max_affected_exceeded', { max: maxAffected, count: t.count });
    if (ret.items && t.count > max) throw tooManyRows(t.count, ret.items.length);
    const shown = scope.collect(t.rows, ret).filter((x) => x.row !== null);
    if (single && ret.items) this.finishShown(shown.length);
    return { count: t.count, rows: shown.sort((a, b) => a.id - b.id).map((x) => x.row!) };
  }

  /** Preference-Applied lists what the answer honours: no representation and no count without
   * `select`; resolution and missing only where rows are inserted. */
  private applied(prefer: Prefer, r: RestRequest): string[] {
    const canRead = permissionsOf(r).has('select');
    const applied: string[] = [];
    if (prefer.return && (prefer.return !== 'representation' || canRead)) applied.push(`return=${prefer.return}`);
    if (prefer.count !== null && canRead) applied.push(`count=${prefer.count}`);
    if (r.method === 'POST' && prefer.resolution) applied.push(`resolution=${prefer.resolution}`);
    if (r.method === 'POST' && prefer.missing) applied.push(`missing=${prefer.missing}`);
    if (prefer.tx) applied.push(`tx=${prefer.tx}`);
    if (maxAffected(prefer, r) !== null) applied.push(`max-affected=${prefer.maxAffected}`);
    return applied;
  }

  private writeReply(written: Written, prefer: Prefer, r: RestRequest, shape: ReplyShape): RestResponse {
    const headers: Record<string, string> = {};
    const applied = this.applied(prefer, r);
    if (prefer.count !== null && applied.includes(`count=${prefer.count}`)) headers['Content-Range'] = contentRange(0, written.count, written.count);
    if (applied.length) headers['Preference-Applied'] = applied.join(', ');
    const empty = { status: shape.status === 201 ? 201 : 204, headers };
    if ((prefer.return ?? shape.defaultReturn) !== 'representation') return empty;
    if (!shape.single) return { status: shape.status, body: written.rows, headers };
    return written.rows.length === 0 ? empty : { status: shape.status, body: written.rows[0], headers };
  }

  private params(scope: Scope, row: RowValues): { cols: string[]; values: SqlParam[] } {
    const cols = [...row.keys()];
    return { cols, values: cols.map((c) => toParam(scope.types.get(c)!, row.get(c))) };
  }

  /**
   * POST: a plain or upsert insert of one row or many, all or nothing. A representation of more
   * than MAX_RETURNED_CELLS values (rows × returned columns) is refused before any work.
   */
  private async insert(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, single: boolean): Promise<RestResponse> {
    const merge = prefer.resolution === 'merge-duplicates';
    if (merge && !permissionsOf(r).has('update'))
      throw new AppError('insufficient_permission.upsert');
    const { rows: body } = parseBodyRows(r.body);
    const shape: ReplyShape = { status: 201, defaultReturn: 'representation', single };
    const show = this.show(q, prefer, r, shape);
    const columns = show ? scope.projection(show.select).items.length : 0;
    if (show && body.length > maxShownRows(columns)) throw tooManyRows(body.length, columns);
    const req: InsertRequest = {
      body,
      only: q.columns,
      target: prefer.resolution ? this.conflictTarget(scope, q) : null,
      merge,
      missingDefault: prefer.missing === 'default',
      auth: r.auth,
      now: this.clock.now(),
      guess: r.guess ?? null,
      mustShow: single && show !== null,
      dryRun: prefer.tx === 'rollback',
    };
    const plan = this.inserter.plan(scope, req);
    const written = await this.inserter.write(scope.db, scope, req, plan, show, (count) => this.finish(count, null, single));
    return this.writeReply(written, prefer, r, shape);
  }

  private conflictTarget(scope: Scope, q: ParsedQuery): string {
    const oc = q.onConflict ?? ['id'];
    const col = oc.length === 1 ? oc[0]! : null;
    const def = scope.table.columns.find((c) => c.name === col);
    if (col === null || (col !== 'id' && !def?.unique))
      throw new AppError('invalid_on_conflict', { on_conflict: oc });
    return col;
  }

  private async update(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, rowId: number | null, single: boolean): Promise<RestResponse> {
    if (rowId === null && r.method === 'PUT') throw new AppError('method_not_allowed.put_collection');
    if (rowId === null && !q.filter) throw new AppError('filter_required.patch');
    if (Array.isArray(r.body)) throw new AppError('invalid_body.update_array');
    const given = checkObject(r.body ?? undefined, inputOptions(scope.table.columns, null, q.columns));
    const values = r.method === 'PUT' ? completeForReplace(given, scope.table.columns, r.auth, this.clock.now()) : given;
    values.delete('id');
    if (values.size === 0) throw new AppError('empty_update');
    const p = this.params(scope, values);
    const shape: ReplyShape = { status: 200, defaultReturn: 'representation', single: single || rowId !== null };
    const show = this.show(q, prefer, r, shape);
    const written = await transact(scope.db, prefer.tx === 'rollback', (outer) =>
      scope.growing(outer, async (tx) => {
        const w = await this.target(tx, scope, q, rowId, 'UPDATE');
        const ret = scope.returning('UPDATE', show, true);
        const sets = p.cols.map((c) => `${quoteIdent(c)} = ?`).join(', ');
        return this.touch(tx, scope, `UPDATE ${scope.t} SET ${sets}${w.sql} RETURNING ${ret.sql}`, [...p.values, ...w.params, ...ret.params], ret, rowId, single, maxAffected(prefer, r));
      }, true), // an update writes every row it reaches: its size is not its body's
    );
    return this.writeReply(written, prefer, r, shape);
  }

  private async remove(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, rowId: number | null, single: boolean): Promise<RestResponse> {
    if (rowId === null && !q.filter) throw new AppError('filter_required.delete');
    const shape: ReplyShape = { status: 200, defaultReturn: 'minimal', single: single || rowId !== null };
    const show = this.show(q, prefer, r, shape);
    const written = await transact(scope.db, prefer.tx === 'rollback', async (tx) => {
      const w = await this.target(tx, scope, q, rowId, 'DELETE');
      // the rows returned are the deleted ones, whose values the WHERE clause already checked
      const ret = scope.returning(null, show, false);
      return this.touch(tx, scope, `DELETE FROM ${scope.t}${w.sql} RETURNING ${ret.sql}`, [...w.params, ...ret.params], ret, rowId, single, maxAffected(prefer, r));
    });
    if (prefer.tx !== 'rollback' && written.count > 0) this.engine.storageFreed(r.projectId);
    return this.writeReply(written, prefer, r, shape);
  }
}

export type { ColumnDef };
