// Tables of a project (CONTRACT §3): definitions kept in the project store's `_bp_tables`, DDL run
// in the same transaction, identifiers only from checked names, quoted by the engine.
import type { ColumnType, Db, Engine } from '../storage/engine.ts';
import { quoteIdent, UniqueViolation } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId, isId } from '../lib/ids.ts';
import { NAME_RE } from '../lib/validate.ts';
import { AppError } from '../errors.ts';
import { COLUMN_TYPES, checkValue, toParam } from './column-values.ts';
import { bumpSchemaVersion } from './project-schema.ts';

export const MAX_COLUMNS = 100;
export const MAX_TABLES = 500;

export interface ColumnDefInput {
  name: string;
  type: string;
  nullable?: boolean;
  default?: unknown;
  unique?: boolean;
  indexed?: boolean;
}

export interface ColumnDef {
  name: string;
  type: ColumnType;
  nullable: boolean;
  default: unknown;
  unique: boolean;
  indexed: boolean;
}

export interface Column extends ColumnDef {
  primary_key: boolean;
}

interface StoredColumn extends ColumnDef {
  index_name: string | null;
}

export interface Table {
  id: string;
  name: string;
  columns: Column[];
  created_at: string;
}

/** The internal view of a table: its stored columns, used by the data plane. */
export interface TableInfo {
  id: string;
  name: string;
  columns: ColumnDef[]; // without `id`
}

export const ID_COLUMN: Column = {
  name: 'id',
  type: 'integer',
  nullable: false,
  default: null,
  unique: true,
  indexed: true,
  primary_key: true,
};

// A Map, not an object literal: a text default such as "constructor" or "__proto__" must not find
// Object.prototype's members.
const SPECIAL_DEFAULTS = new Map<string, ColumnType[]>([
  ['now()', ['timestamp', 'date']],
  ['$auth.id', ['integer']],
  ['$auth.email', ['text']],
]);
const isMarker = (v: unknown): boolean => typeof v === 'string' && SPECIAL_DEFAULTS.has(v);

// Names an engine keeps for itself: refused on every engine so that a table definition works
// the same on SQLite and PostgreSQL.
const RESERVED_PREFIXES = ['_bp_', 'sqlite_', 'pg_'];
const RESERVED_COLUMNS = new Set(['id', 'oid', 'rowid', '_rowid_', 'xmin', 'xmax', 'cmin', 'cmax', 'ctid', 'tableoid']);

export function checkName(raw: unknown, field: string, what: 'table' | 'column'): string {
  if (typeof raw !== 'string' || !NAME_RE.test(raw))
    throw new AppError('invalid_name.format', { field, what });
  const prefix = RESERVED_PREFIXES.find((p) => raw.startsWith(p));
  if (prefix) throw new AppError('invalid_name.reserved_prefix', { field, prefix });
  if (what === 'column' && RESERVED_COLUMNS.has(raw)) throw new AppError('invalid_name.reserved_column', { field, name: raw });
  // Rows travel as plain JavaScript objects (request bodies, driver rows, responses, clients), where
  // assigning the key `__proto__` replaces the prototype instead of setting a value.
  if (raw === '__proto__') throw new AppError('invalid_name.proto', { field, what });
  return raw;
}

function checkColumnDef(input: ColumnDefInput, field: string): ColumnDef {
  const name = checkName(input.name, `${field}.name`, 'column');
  if (!COLUMN_TYPES.includes(input.type as ColumnType))
    throw new AppError('validation_failed.column_type', { field: `${field}.type`, allowed: COLUMN_TYPES });
  const type = input.type as ColumnType;
  let dflt: unknown = input.default === undefined ? null : input.default;
  if (dflt !== null) {
    const special = typeof dflt === 'string' ? SPECIAL_DEFAULTS.get(dflt) : undefined;
    if (special && special.includes(type)) {
      // kept as the marker string; filled in at insert time
    } else if (special) {
      // a marker on a type it does not fit is a mistake, not a literal text default
      throw new AppError('invalid_default.marker', { field: `${field}.default`, value: String(dflt), type });
    } else {
      const checked = checkValue(type, dflt);
      if (!checked.ok)
        throw new AppError('invalid_default.value', { field: `${field}.default`, column: name, type, reason: checked.reason });
      dflt = checked.value;
    }
  }
  return {
    name,
    type,
    nullable: input.nullable ?? true,
    default: dflt,
    unique: input.unique ?? false,
    indexed: input.indexed ?? false,
  };
}

function publicColumns(stored: StoredColumn[]): Column[] {
  return [ID_COLUMN, ...stored.map(({ index_name: _ignored, ...c }) => ({ ...c, primary_key: false }))];
}

type AlterInput = { name?: string; add_columns?: ColumnDefInput[]; drop_columns?: string[]; rename_columns?: Record<string, string> };

interface ColumnChanges {
  drops: string[];
  renames: [from: string, to: string][];
  adds: ColumnDef[];
}

/** Checks the column changes of an alter against the column set they produce. */
function planColumnChanges(columns: StoredColumn[], input: AlterInput): ColumnChanges {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const drops = input.drop_columns ?? [];
  drops.forEach((d, i) => {
    if (d === 'id') throw new AppError('invalid_name.drop_id', { field: `drop_columns[${i}]` });
    if (!byName.has(d)) throw new AppError('unknown_column.alter', { field: `drop_columns[${i}]`, column: d });
    if (drops.indexOf(d) !== i) throw new AppError('validation_failed.listed_twice', { field: `drop_columns[${i}]`, what: 'column', value: d });
  });
  const remaining = new Set(columns.map((c) => c.name).filter((n) => !drops.includes(n)));
  const renames = Object.entries(input.rename_columns ?? {});
  const targets = new Set<string>();
  for (const [from, to] of renames) {
    if (from === 'id') throw new AppError('invalid_name.rename_id', { field: `rename_columns.${from}` });
    if (!remaining.has(from)) throw new AppError('unknown_column.alter', { field: 'rename_columns', column: from });
    checkName(to, `rename_columns.${from}`, 'column');
    if (byName.has(to) || targets.has(to)) throw new AppError('duplicate_column.exists', { column: to });
    targets.add(to);
  }
  const finalNames = new Set([...remaining].map((n) => (input.rename_columns && Object.hasOwn(input.rename_columns, n) ? input.rename_columns[n]! : n)));
  const adds = (input.add_columns ?? []).map((c, i) => checkColumnDef(c, `add_columns[${i}]`));
  for (const a of adds) {
    if (finalNames.has(a.name)) throw new AppError('duplicate_column.exists', { column: a.name });
    if (!a.nullable && (a.default === null || isMarker(a.default)))
      throw new AppError('validation_failed.default_required', { field: `add_columns.${a.name}` });
    finalNames.add(a.name);
  }
  if (finalNames.size > MAX_COLUMNS) throw new AppError('validation_failed.too_many_columns', { field: 'add_columns', max: MAX_COLUMNS });
  return { drops, renames, adds };
}

interface TableRow {
  id: string;
  name: string;
  columns: string;
  created_at: string;
}

export class TableService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
  ) {}

  private async load(db: Db, tableId: string): Promise<{ row: TableRow; columns: StoredColumn[] }> {
    if (!isId(tableId)) throw new AppError('not_found', { what: 'table' });
    const row = await db.get<TableRow>(`SELECT id, name, columns, created_at FROM ${db.t('_bp_tables')} WHERE id = ?`, [tableId]);
    if (!row) throw new AppError('not_found', { what: 'table' });
    return { row, columns: JSON.parse(row.columns) as StoredColumn[] };
  }

  private toTable(row: TableRow, columns: StoredColumn[]): Table {
    return { id: row.id, name: row.name, columns: publicColumns(columns), created_at: row.created_at };
  }

  async list(projectId: string): Promise<Table[]> {
    const db = await this.engine.project(projectId);
    const rows = await db.all<TableRow>(`SELECT id, name, columns, created_at FROM ${db.t('_bp_tables')} ORDER BY created_at, name`);
    return rows.map((r) => this.toTable(r, JSON.parse(r.columns)));
  }

  async get(projectId: string, tableId: string): Promise<Table> {
    const db = await this.engine.project(projectId);
    const { row, columns } = await this.load(db, tableId);
    return this.toTable(row, columns);
  }

  /** Every table of the project as the data plane sees it (project-schema.ts caches them). */
  async tableInfos(db: Db): Promise<TableInfo[]> {
    const rows = await db.all<TableRow>(`SELECT id, name, columns, created_at FROM ${db.t('_bp_tables')}`);
    return rows.map((row) => ({ id: row.id, name: row.name, columns: (JSON.parse(row.columns) as StoredColumn[]).map(({ index_name: _i, ...c }) => c) }));
  }

  async create(projectId: string, input: { name: string; columns: ColumnDefInput[] }): Promise<Table> {
    const name = checkName(input.name, 'name', 'table');
    if (input.columns.length > MAX_COLUMNS) throw new AppError('validation_failed.too_many_columns', { field: 'columns', max: MAX_COLUMNS });
    const defs = input.columns.map((c, i) => checkColumnDef(c, `columns[${i}]`));
    const seen = new Set<string>();
    for (const d of defs) {
      if (seen.has(d.name)) throw new AppError('duplicate_column.twice', { column: d.name });
      seen.add(d.name);
    }
    const stored: StoredColumn[] = defs.map((d) => ({ ...d, index_name: d.unique || d.indexed ? `bp_${newId()}` : null }));
    const db = await this.engine.project(projectId);
    const row: TableRow = { id: newId(), name, columns: JSON.stringify(stored), created_at: this.clock.now().toISOString() };
    const dialect = this.engine.dialect;
    try {
      // a new table and its indexes take space (empty, a page each on PostgreSQL): within PROJECT_MAX_BYTES
      await db.tx((outer) =>
        this.engine.growing(
          projectId,
          outer,
          async (tx) => {
            const count = await tx.get<{ n: number }>(`SELECT count(*) AS n FROM ${tx.t('_bp_tables')}`);
            if (Number(count?.n ?? 0) >= MAX_TABLES) throw new AppError('validation_failed.too_many_tables', { max: MAX_TABLES });
            await tx.run(`INSERT INTO ${tx.t('_bp_tables')} (id, name, columns, created_at) VALUES (?, ?, ?, ?)`, [
              row.id,
              row.name,
              row.columns,
              row.created_at,
            ]);
            const cols = [dialect.idColumn, ...stored.map((c) => `${quoteIdent(c.name)} ${dialect.columnType(c.type)}${c.nullable ? '' : ' NOT NULL'}`)];
            await tx.run(`CREATE TABLE ${tx.t(name)} (${cols.join(', ')})`);
            for (const c of stored) await this.createIndex(tx, name, c);
            await bumpSchemaVersion(tx);
          },
          { always: true },
        ),
      );
    } catch (err) {
      if (err instanceof UniqueViolation) throw new AppError('duplicate_table', { table: name });
      throw err;
    }
    return this.toTable(row, stored);
  }

  private async createIndex(tx: Db, table: string, c: StoredColumn): Promise<void> {
    if (!c.index_name) return;
    await tx.run(`CREATE ${c.unique ? 'UNIQUE ' : ''}INDEX ${quoteIdent(c.index_name)} ON ${tx.t(table)} (${quoteIdent(c.name)})`);
  }

  async alter(projectId: string, tableId: string, input: AlterInput): Promise<Table> {
    const db = await this.engine.project(projectId);
    const { row, columns } = await this.load(db, tableId);
    const newName = input.name !== undefined ? checkName(input.name, 'name', 'table') : row.name;
    // Plan every step against the resulting column set before touching anything.
    const plan = planColumnChanges(columns, input);
    if (newName !== row.name) {
      const clash = await db.get(`SELECT id FROM ${db.t('_bp_tables')} WHERE name = ?`, [newName]);
      if (clash) throw new AppError('duplicate_table', { table: newName });
    }
    let next: StoredColumn[];
    try {
      // a column added with a default writes it into every row: within PROJECT_MAX_BYTES (Engine.growing)
      next = await db.tx((outer) => this.engine.growing(projectId, outer, (tx) => this.applyAlter(tx, row, newName, columns, plan), { always: true }));
    } catch (err) {
      if (err instanceof UniqueViolation)
        throw new AppError('unique_violation.alter');
      throw err;
    }
    return this.toTable({ ...row, name: newName }, next);
  }

  /** Runs a checked plan in one transaction; returns the table's new stored columns. */
  private async applyAlter(tx: Db, row: TableRow, newName: string, columns: StoredColumn[], plan: ColumnChanges): Promise<StoredColumn[]> {
    const { drops, renames, adds } = plan;
    const table = row.name;
    for (const d of drops) {
      const c = columns.find((col) => col.name === d)!;
      if (c.index_name) await tx.run(`DROP INDEX ${tx.t(c.index_name)}`);
      await tx.run(`ALTER TABLE ${tx.t(table)} DROP COLUMN ${quoteIdent(d)}`);
    }
    let next = columns.filter((c) => !drops.includes(c.name));
    for (const [from, to] of renames) {
      await tx.run(`ALTER TABLE ${tx.t(table)} RENAME COLUMN ${quoteIdent(from)} TO ${quoteIdent(to)}`);
      next = next.map((c) => (c.name === from ? { ...c, name: to } : c));
    }
    for (const a of adds) {
      const stored: StoredColumn = { ...a, index_name: a.unique || a.indexed ? `bp_${newId()}` : null };
      const add = this.engine.dialect.addColumn(tx.t(table), quoteIdent(a.name), a.type, !a.nullable);
      await tx.run(add.add);
      const literal = a.default !== null && !isMarker(a.default);
      if (literal) await tx.run(`UPDATE ${tx.t(table)} SET ${quoteIdent(a.name)} = ?`, [toParam(a.type, a.default)]);
      if (add.afterBackfill) await tx.run(add.afterBackfill);
      await this.createIndex(tx, table, stored);
      next.push(stored);
    }
    if (newName !== table) {
      await tx.run(`UPDATE ${tx.t('_bp_tables')} SET name = ? WHERE id = ?`, [newName, row.id]);
      await tx.run(`ALTER TABLE ${tx.t(table)} RENAME TO ${quoteIdent(newName)}`);
    }
    await tx.run(`UPDATE ${tx.t('_bp_tables')} SET columns = ? WHERE id = ?`, [JSON.stringify(next), row.id]);
    await bumpSchemaVersion(tx);
    return next;
  }

  async remove(projectId: string, tableId: string): Promise<void> {
    const db = await this.engine.project(projectId);
    const { row } = await this.load(db, tableId);
    await db.tx(async (tx) => {
      await tx.run(`DELETE FROM ${tx.t('_bp_tables')} WHERE id = ?`, [row.id]);
      await tx.run(`DROP TABLE ${tx.t(row.name)}`);
      await bumpSchemaVersion(tx);
    });
  }
}
