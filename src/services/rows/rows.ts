// The REST passthrough (SPEC 4.5, CONTRACT §5): PostgREST grammar in, rows out, with the key's
// permissions and the row-level-security policies applied on every route.
import type { ColumnType, Db, Engine, SqlParam } from '../../storage/engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation } from '../../storage/engine.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '../../errors.ts';
import { parseQuery, parsePrefer, resolveRange, contentRange, type ParsedQuery, type Prefer, type SelectItem } from '../../rest-query/index.ts';
import type { ColumnDef, TableInfo, TableService } from '../tables.ts';
import type { AuthContext } from '../end-users.ts';
import type { KeyCaller, Permission } from '../keys.ts';
import { fromStored, toParam } from '../column-values.ts';
import { compileFilter, type Sql } from './filter-sql.ts';
import { checkObject, completeForInsert, completeForReplace, invalidValue, parseBodyRows, type RowValues } from './row-input.ts';

export type Operation = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

/** Where the row filters of the policies come from (the policies service). null: no policy, open. */
export interface PolicyFilterSource {
  rowFilters(db: Db, table: TableInfo, auth: AuthContext | null): Promise<(op: Operation) => Sql | null>;
}

export interface RestRequest {
  projectId: string;
  table: string;
  rowId: string | null;
  method: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  query: URLSearchParams;
  prefer: string | string[] | undefined;
  accept: string | undefined;
  range: string | undefined;
  body: unknown;
  key: KeyCaller;
  auth: AuthContext | null;
}

export interface RestResponse {
  status: number;
  body?: unknown;
  headers: Record<string, string>;
}

const OBJECT_MEDIA = 'application/vnd.pgrst.object+json';
const ID_CHUNK = 500;

const PERMISSION_OF: Record<RestRequest['method'], Permission> = {
  GET: 'select',
  HEAD: 'select',
  POST: 'insert',
  PATCH: 'update',
  PUT: 'update',
  DELETE: 'delete',
};

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const rlsViolation = () => forbidden('rls_violation', 'The row violates a row-level security policy; nothing was written.');
const notSingle = (n: number) => new AppError(406, 'not_single', 'JSON object requested, multiple (or no) rows returned.', `The result contains ${n} rows`);

/** One request's view of a table: columns, types, policy filters (loaded once per operation). */
class Scope {
  readonly types: Map<string, ColumnType>;
  private filters: Promise<(op: Operation) => Sql | null> | null = null;

  constructor(
    readonly db: Db,
    readonly table: TableInfo,
    readonly engine: Engine,
    private readonly policies: PolicyFilterSource,
    readonly auth: AuthContext | null,
  ) {
    this.types = new Map<string, ColumnType>([['id', 'integer'], ...table.columns.map((c) => [c.name, c.type] as [string, ColumnType])]);
  }

  get t(): string {
    return this.db.t(this.table.name);
  }

  /** The operation's policy filter; the table's policies are read once per request (inside the
   * write's transaction when `db` is one). */
  async policy(op: Operation, db: Db = this.db): Promise<Sql | null> {
    this.filters ??= this.policies.rowFilters(db, this.table, this.auth);
    return (await this.filters)(op);
  }

  selectList(select: SelectItem[] | null): { sql: string; items: SelectItem[] } {
    const items = select ?? [{ column: 'id', alias: 'id' }, ...this.table.columns.map((c) => ({ column: c.name, alias: c.name }))];
    return { sql: items.map((i) => `${quoteIdent(i.column)} AS ${quoteIdent(i.alias)}`).join(', '), items };
  }

  decode(rows: Record<string, unknown>[], items: SelectItem[]): Record<string, unknown>[] {
    return rows.map((r) => {
      const out: Record<string, unknown> = {};
      for (const i of items) out[i.alias] = fromStored(this.engine.kind, this.types.get(i.column)!, r[i.alias]);
      return out;
    });
  }
}

function where(parts: (Sql | null)[]): Sql {
  const present = parts.filter((p): p is Sql => p !== null);
  if (present.length === 0) return { sql: '', params: [] };
  return { sql: ` WHERE ${present.map((p) => `(${p.sql})`).join(' AND ')}`, params: present.flatMap((p) => p.params) };
}

export class RowService {
  constructor(
    private readonly engine: Engine,
    private readonly tables: TableService,
    private readonly policies: PolicyFilterSource,
    private readonly clock: Clock,
    private readonly maxRows: number,
  ) {}

  async handle(r: RestRequest): Promise<RestResponse> {
    const needed = PERMISSION_OF[r.method];
    if (!r.key.permissions.has(needed)) throw forbidden('insufficient_permission', `The API key lacks the '${needed}' permission.`, { permission: needed });
    const table = await this.tables.findByName(r.projectId, r.table);
    if (!table) throw notFound('table');
    const db = await this.engine.data(r.projectId);
    const scope = new Scope(db, table, this.engine, this.policies, r.auth);
    const columns = [...scope.types].map(([name, type]) => ({ name, type }));
    const q = parseQuery(r.query, columns);
    const prefer = parsePrefer(r.prefer);
    const single = (r.accept ?? '').toLowerCase().includes(OBJECT_MEDIA);
    let rowId: number | null = null;
    if (r.rowId !== null) {
      if (!/^[1-9]\d{0,15}$/.test(r.rowId) || !Number.isSafeInteger(Number(r.rowId))) throw notFound('row');
      rowId = Number(r.rowId);
    }
    try {
      switch (r.method) {
        case 'GET':
        case 'HEAD':
          return rowId !== null ? await this.getOne(scope, q, rowId) : await this.list(scope, q, prefer, r.range, single);
        case 'POST':
          if (rowId !== null) throw new AppError(405, 'method_not_allowed', 'POST is not allowed on a single row.');
          return await this.insert(scope, q, prefer, r, single);
        case 'PATCH':
        case 'PUT':
          return await this.update(scope, q, prefer, r, rowId, single);
        case 'DELETE':
          return await this.remove(scope, q, prefer, r, rowId, single);
      }
    } catch (err) {
      if (err instanceof UniqueViolation) throw conflict('unique_violation', 'A row with the same value in a unique column already exists.');
      if (err instanceof NotNullViolation) throw invalidValue(err.column ?? 'unknown', 'not_null');
      throw err;
    }
  }

  private orderSql(scope: Scope, q: ParsedQuery): string {
    const items = q.order.map((o) => {
      if (scope.types.get(o.column) === 'json')
        throw badRequest('unsupported_order', `The json column '${o.column}' cannot be ordered (engines order JSON values differently).`, { column: o.column });
      const col = quoteIdent(o.column);
      const ref = scope.types.get(o.column) === 'text' ? `${col}${this.engine.dialect.binaryCollation}` : col;
      const nulls = o.nulls ?? (o.dir === 'asc' ? 'last' : 'first');
      return `${ref} ${o.dir.toUpperCase()} NULLS ${nulls.toUpperCase()}`;
    });
    if (!q.order.some((o) => o.column === 'id')) items.push('"id" ASC');
    return ` ORDER BY ${items.join(', ')}`;
  }

  private filterSql(scope: Scope, q: ParsedQuery): Sql | null {
    return q.filter ? compileFilter(q.filter, scope.types, this.engine.dialect) : null;
  }

  private async list(scope: Scope, q: ParsedQuery, prefer: Prefer, rangeHeader: string | undefined, single: boolean): Promise<RestResponse> {
    const { limit, offset } = resolveRange({ limit: q.limit, offset: q.offset, rangeHeader, maxRows: this.maxRows });
    const w = where([this.filterSql(scope, q), await scope.policy('SELECT')]);
    const sel = scope.selectList(q.select);
    const raw = await scope.db.all<Record<string, unknown>>(
      `SELECT ${sel.sql} FROM ${scope.t}${w.sql}${this.orderSql(scope, q)} LIMIT ? OFFSET ?`,
      [...w.params, limit, offset],
    );
    const rows = scope.decode(raw, sel.items);
    let total: number | null = null;
    if (prefer.count === 'exact') {
      const c = await scope.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${scope.t}${w.sql}`, w.params);
      total = Number(c?.n ?? 0);
    }
    const headers: Record<string, string> = { 'Content-Range': contentRange(offset, rows.length, total) };
    if (prefer.count === 'exact') headers['Preference-Applied'] = 'count=exact';
    if (single) {
      if (rows.length !== 1) throw notSingle(rows.length);
      return { status: 200, body: rows[0], headers };
    }
    return { status: 200, body: rows, headers };
  }

  private async getOne(scope: Scope, q: ParsedQuery, id: number): Promise<RestResponse> {
    const w = where([{ sql: '"id" = ?', params: [id] }, await scope.policy('SELECT')]);
    const sel = scope.selectList(q.select);
    const raw = await scope.db.get<Record<string, unknown>>(`SELECT ${sel.sql} FROM ${scope.t}${w.sql}`, w.params);
    if (!raw) throw notFound('row');
    return { status: 200, body: scope.decode([raw], sel.items)[0], headers: {} };
  }

  /** Rows just written, as the caller may see them: needs `select` and passes the SELECT policies. */
  private async readBack(tx: Db, scope: Scope, key: KeyCaller, ids: number[], select: SelectItem[] | null): Promise<Record<string, unknown>[]> {
    if (!key.permissions.has('select') || ids.length === 0) return [];
    const policy = await scope.policy('SELECT', tx);
    const sel = scope.selectList(select);
    const out: Record<string, unknown>[] = [];
    for (const part of chunks(ids, ID_CHUNK)) {
      const w = where([{ sql: `"id" IN (${part.map(() => '?').join(', ')})`, params: part }, policy]);
      out.push(...(await tx.all<Record<string, unknown>>(`SELECT ${sel.sql} FROM ${scope.t}${w.sql} ORDER BY "id"`, w.params)));
    }
    return scope.decode(out, sel.items);
  }

  /** WITH CHECK: every written row must satisfy the operation's policies, or the whole write rolls back. */
  private async postCheck(tx: Db, scope: Scope, op: Operation, ids: number[]): Promise<void> {
    const policy = await scope.policy(op, tx);
    if (!policy || ids.length === 0) return;
    for (const part of chunks(ids, ID_CHUNK)) {
      const c = await tx.get<{ n: number }>(`SELECT count(*) AS n FROM ${scope.t} WHERE "id" IN (${part.map(() => '?').join(', ')}) AND (${policy.sql})`, [
        ...part,
        ...policy.params,
      ]);
      if (Number(c?.n ?? 0) !== part.length) throw rlsViolation();
    }
  }

  private params(scope: Scope, row: RowValues): { cols: string[]; values: SqlParam[] } {
    const cols: string[] = [];
    const values: SqlParam[] = [];
    for (const [name, v] of row) {
      cols.push(name);
      values.push(toParam(scope.types.get(name)!, v));
    }
    return { cols, values };
  }

  private writeReply(status: number, rows: Record<string, unknown>[], count: number, prefer: Prefer, single: boolean, defaultReturn: 'representation' | 'minimal', perRow: boolean): RestResponse {
    const ret = prefer.return ?? defaultReturn;
    const headers: Record<string, string> = {};
    const applied: string[] = [];
    if (prefer.return) applied.push(`return=${prefer.return}`);
    if (prefer.count === 'exact') {
      applied.push('count=exact');
      headers['Content-Range'] = contentRange(0, count, count);
    }
    if (prefer.resolution) applied.push(`resolution=${prefer.resolution}`);
    if (prefer.missing) applied.push(`missing=${prefer.missing}`);
    if (applied.length) headers['Preference-Applied'] = applied.join(', ');
    if (ret !== 'representation') return { status: status === 201 ? 201 : 204, headers };
    if (single || perRow) {
      if (rows.length === 0 && perRow) return { status: 204, headers };
      return { status, body: rows[0], headers };
    }
    return { status, body: rows, headers };
  }

  private async insert(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, single: boolean): Promise<RestResponse> {
    const upsert = prefer.resolution;
    if (upsert === 'merge-duplicates' && !r.key.permissions.has('update'))
      throw forbidden('insufficient_permission', "An upsert that merges duplicates needs the 'update' permission too.", { permission: 'update' });
    const { rows: rawRows } = parseBodyRows(r.body);
    const given = rawRows.map((b) => checkObject(b, { columns: scope.table.columns, allowId: true, only: q.columns }));
    const present = new Set<string>(q.columns ?? given.flatMap((g) => [...g.keys()]));
    const now = this.clock.now();
    const full = completeForInsert(given, scope.table.columns, present, prefer.missing === 'default', r.auth, now);
    let target: string | null = null;
    if (upsert) {
      const oc = q.onConflict ?? ['id'];
      const col = oc.length === 1 ? oc[0]! : null;
      const def = scope.table.columns.find((c) => c.name === col);
      if (col === null || (col !== 'id' && !def?.unique))
        throw new AppError(422, 'invalid_on_conflict', 'on_conflict must name one column that is id or unique.', { on_conflict: oc });
      target = col;
    }
    const result = await scope.db.tx(async (tx) => {
      const ids: number[] = [];
      const inserted: number[] = [];
      const updated: number[] = [];
      for (let i = 0; i < full.length; i++) {
        const row = full[i]!;
        const p = this.params(scope, row);
        const insertSql = `INSERT INTO ${scope.t} (${p.cols.map(quoteIdent).join(', ')}) VALUES (${p.cols.map(() => '?').join(', ')})`;
        const key = target !== null ? row.get(target) : null;
        if (target === null || key === null || key === undefined) {
          const ret = await tx.get<{ id: number }>(`${insertSql} RETURNING "id"`, p.values);
          inserted.push(Number(ret!.id));
          ids.push(Number(ret!.id));
        } else {
          // Upsert: the existing row, else an insert that yields to a concurrent one (ON CONFLICT DO
          // NOTHING), after which the row exists and the loop takes the existing-row path.
          for (let attempt = 0; ; attempt++) {
            const existing = await tx.get<{ id: number }>(`SELECT "id" FROM ${scope.t} WHERE ${quoteIdent(target)} = ?`, [toParam(scope.types.get(target)!, key)]);
            if (existing) {
              if (upsert === 'ignore-duplicates') break;
              const id = Number(existing.id);
              await this.mergeInto(tx, scope, id, new Map([...given[i]!].filter(([k]) => k !== 'id' && k !== target)));
              updated.push(id);
              ids.push(id);
              break;
            }
            const ret = await tx.get<{ id: number }>(`${insertSql} ON CONFLICT (${quoteIdent(target)}) DO NOTHING RETURNING "id"`, p.values);
            if (ret) {
              inserted.push(Number(ret.id));
              ids.push(Number(ret.id));
              break;
            }
            if (attempt > 0) throw conflict('unique_violation', 'A row with the same value in a unique column already exists.');
          }
        }
        // keep the engine's id generator ahead of explicit ids before the next row needs one
        if (row.has('id')) await this.engine.dialect.afterExplicitIds(tx, scope.t);
      }
      await this.postCheck(tx, scope, 'INSERT', inserted);
      await this.postCheck(tx, scope, 'UPDATE', updated);
      if (single && ids.length !== 1) throw notSingle(ids.length);
      const wantRows = (prefer.return ?? 'representation') === 'representation';
      return { ids, rows: wantRows ? await this.readBack(tx, scope, r.key, ids, q.select) : [] };
    });
    return this.writeReply(201, result.rows, result.ids.length, prefer, single, 'representation', false);
  }

  /** The UPDATE half of an upsert: only a row the caller may update; otherwise an RLS violation. */
  private async mergeInto(tx: Db, scope: Scope, id: number, sent: RowValues): Promise<void> {
    if (sent.size === 0) return;
    const p = this.params(scope, sent);
    const w = where([{ sql: '"id" = ?', params: [id] }, await scope.policy('UPDATE', tx)]);
    const res = await tx.run(`UPDATE ${scope.t} SET ${p.cols.map((c) => `${quoteIdent(c)} = ?`).join(', ')}${w.sql}`, [...p.values, ...w.params]);
    if (res.changes === 0) throw rlsViolation();
  }

  private async update(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, rowId: number | null, single: boolean): Promise<RestResponse> {
    if (rowId === null && r.method === 'PUT') throw new AppError(405, 'method_not_allowed', 'PUT needs a row id: /rest/{table}/{id}.');
    if (rowId === null && !q.filter) throw badRequest('filter_required', 'PATCH on a table needs at least one filter; whole-table updates are refused.');
    if (Array.isArray(r.body)) throw new AppError(422, 'invalid_body', 'An update takes one JSON object.', { reason: 'expected_object' });
    const given = checkObject(r.body ?? undefined, { columns: scope.table.columns, allowId: false, only: q.columns });
    const values = r.method === 'PUT' ? completeForReplace(given, scope.table.columns, r.auth, this.clock.now()) : given;
    values.delete('id');
    if (values.size === 0) throw new AppError(422, 'empty_update', 'The update names no column.', { reason: 'empty' });
    const p = this.params(scope, values);
    const result = await scope.db.tx(async (tx) => {
      const upd = await scope.policy('UPDATE', tx);
      const target: Sql = rowId !== null ? { sql: '"id" = ?', params: [rowId] } : this.filterSql(scope, q)!;
      const w = where([target, upd]);
      const ret = await tx.all<{ id: number }>(
        `UPDATE ${scope.t} SET ${p.cols.map((c) => `${quoteIdent(c)} = ?`).join(', ')}${w.sql} RETURNING "id"`,
        [...p.values, ...w.params],
      );
      const ids = ret.map((x) => Number(x.id));
      if (rowId !== null && ids.length === 0) throw notFound('row');
      await this.postCheck(tx, scope, 'UPDATE', ids);
      if (single && ids.length !== 1) throw notSingle(ids.length);
      const wantRows = (prefer.return ?? 'representation') === 'representation';
      return { ids, rows: wantRows ? await this.readBack(tx, scope, r.key, ids, q.select) : [] };
    });
    return this.writeReply(200, result.rows, result.ids.length, prefer, single, 'representation', rowId !== null);
  }

  private async remove(scope: Scope, q: ParsedQuery, prefer: Prefer, r: RestRequest, rowId: number | null, single: boolean): Promise<RestResponse> {
    if (rowId === null && !q.filter) throw badRequest('filter_required', 'DELETE on a table needs at least one filter; whole-table deletes are refused.');
    const result = await scope.db.tx(async (tx) => {
      const del = await scope.policy('DELETE', tx);
      const target: Sql = rowId !== null ? { sql: '"id" = ?', params: [rowId] } : this.filterSql(scope, q)!;
      const w = where([target, del]);
      const ids = (await tx.all<{ id: number }>(`SELECT "id" FROM ${scope.t}${w.sql}`, w.params)).map((x) => Number(x.id));
      if (rowId !== null && ids.length === 0) throw notFound('row');
      if (single && ids.length !== 1) throw notSingle(ids.length);
      const rows = prefer.return === 'representation' ? await this.readBack(tx, scope, r.key, ids, q.select) : [];
      for (const part of chunks(ids, ID_CHUNK)) await tx.run(`DELETE FROM ${scope.t} WHERE "id" IN (${part.map(() => '?').join(', ')})`, part);
      return { ids, rows };
    });
    return this.writeReply(200, result.rows, result.ids.length, prefer, single, 'minimal', rowId !== null);
  }
}

export type { ColumnDef };
