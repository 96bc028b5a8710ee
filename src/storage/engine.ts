// The one interface services use to reach a database. Everything engine-specific lives below
// storage/: connection handling, placeholder style, column types, migrations, driver errors.
import { AppError, type AppErrorArgs } from '../errors.ts';
import type { CompileContext, CompiledSql, TypedExpr } from '../policy-language/index.ts';
import type { GateStats } from './fair-gate.ts';

export type EngineKind = 'sqlite' | 'postgres';
export type SqlParam = string | number | boolean | null | bigint;
/** A piece of SQL and its bound parameters, in textual order. */
export interface Sql {
  sql: string;
  params: SqlParam[];
}

export interface Db {
  readonly kind: EngineKind;
  /** Quotes (and on PostgreSQL schema-qualifies) a table or index name of this store. */
  t(name: string): string;
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  run(sql: string, params?: readonly SqlParam[]): Promise<{ changes: number }>;
  /**
   * A write whose loss is harmless (bookkeeping such as a key's last use): it never waits for a
   * write lock another connection holds, and a full disk skips it instead of failing the request.
   */
  runBestEffort(sql: string, params?: readonly SqlParam[]): Promise<void>;
  /** Runs fn in one transaction; nested calls join the outer transaction. */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * Runs a statement reading its rows one at a time, so that memory does not grow with them: the
   * first `keep` rows and how many there were.
   * Only where SQL cannot do it (SQLite's RETURNING cannot feed a query); PostgreSQL wraps the
   * statement in a CTE instead (services/rows/tally.ts).
   */
  tally?(sql: string, params: readonly SqlParam[], keep: number): Promise<RowTally>;
  /**
   * A value that differs from any earlier one as soon as anything may have changed in the store
   * since that one was read: a commit by any connection or process, a change of its schema, the
   * connection reopened. Equal stamps mean an unchanged store, so what was read under one stamp
   * may be used again under an equal one (services/data-plane.ts). Only where reading it costs far
   * less than what it spares: SQLite's connection of the main thread, not a network round trip.
   * Read at once, so that a statement started right after it in the same step runs on the same
   * connection with nothing between; null when it cannot be read at once (a transaction of the
   * connection is open), and then nothing may be used from memory.
   */
  stamp?(): string | null;
}

export interface RowTally {
  rows: Record<string, unknown>[];
  count: number;
}

export type ColumnType = 'text' | 'integer' | 'number' | 'boolean' | 'timestamp' | 'date' | 'json';

export interface Dialect {
  readonly kind: EngineKind;
  /** SQL type for a user column type. */
  columnType(type: ColumnType): string;
  /** Column definition of the implicit integer primary key `id`. */
  readonly idColumn: string;
  /** Appended to a text column reference in comparisons and ORDER BY so both engines order strings by code point. */
  readonly binaryCollation: string;
  /** Statements cost a network round trip (a repeated read then runs as one guarded statement: services/data-plane.ts). */
  readonly remote: boolean;
  /**
   * ADD COLUMN for an existing table; a NOT NULL column is backfilled with its default (a bound
   * parameter) between `add` and `afterBackfill`.
   */
  addColumn(table: string, column: string, type: ColumnType, notNull: boolean): { add: string; afterBackfill: string | null };
  /** Compiles a policy expression (validated, or a REST filter translated) to a boolean SQL fragment with bound parameters. */
  compilePolicy(expr: TypedExpr, ctx: CompileContext): CompiledSql;
  /** A stored value, as the driver returns it, back to its JSON shape (null for SQL NULL). */
  decodeValue(type: ColumnType, raw: unknown): unknown;
  /** The VALUES entry for the id column that makes the engine generate the id. */
  readonly generatedId: string;
  /** After rows were inserted with explicit ids: keep the id generator ahead of them. */
  afterExplicitIds(db: Db, table: string): Promise<void>;
  /**
   * An expression for a write's RETURNING list that is 1 when `condition` is TRUE and otherwise
   * fails the statement (which then leaves nothing) with the AppError `failure`: the post-write
   * check inside the write itself, so that a write of one statement needs no transaction.
   */
  assertTrue(condition: string, failure: RowFailure): string;
  /**
   * The id the next generated row of table `name` would get, read without advancing the generator
   * (the policy simulator's INSERT; a concurrent insert may take it first).
   */
  nextId(db: Db, name: string): Promise<number>;
}

/** Engine.growing's options: `table`, the one table the write grows (else the whole project is measured); `always`, measure below the bound too */
export interface GrowingOptions {
  table?: string;
  always?: boolean;
}

/** What a write's own check (Dialect.assertTrue) can fail with: each is a code of the error table. */
export type RowFailure = 'rls_violation' | 'id_exhausted' | 'not_single.hidden';
export const ROW_FAILURES: ReadonlySet<string> = new Set<RowFailure>(['rls_violation', 'id_exhausted', 'not_single.hidden']);
/** Their wire codes (an error-table key up to its first dot) */
export const ROW_FAILURE_CODES: ReadonlySet<string> = new Set([...ROW_FAILURES].map((k) => k.split('.')[0]!));

export interface Engine {
  readonly kind: EngineKind;
  readonly dialect: Dialect;
  /** The platform store (accounts, sessions, projects). */
  readonly platform: Db;
  /** Creates the store of a new project (a file or a schema) and applies its migrations. */
  createProjectStore(projectId: string): Promise<void>;
  /** Opens (cached) the store of an existing project: for the platform's own records in it. */
  project(projectId: string): Promise<Db>;
  /**
   * The same store, for the records a data-plane request reads to learn who calls (its API key and
   * end-user session), before anything proves the caller may: each statement takes one of the
   * project's slots of the engine's capacity, as data()'s do, so that a flood of requests against
   * one project, with valid credentials or not, waits on that project's share (or is refused, 503
   * project_busy) instead of taking the capacity every project needs.
   */
  callers(projectId: string): Promise<Db>;
  /**
   * The platform store, for the statements a public endpoint makes before anything proves who
   * calls (the login throttle's), under `tenant`'s share as callers()'s are: a project's id, or a
   * key of the platform's own (the owners' sign-in). SQLite: the platform store itself.
   */
  platformFor(tenant: string): Db;
  /**
   * The store of an existing project, for statements over the project's own tables, whose cost the
   * caller's filters and policies decide: each statement is bounded by the statement timeout and
   * runs under the project's fair share of the engine's capacity (SQLite: worker threads, off the
   * event loop, after a bounded first attempt on the main thread; PostgreSQL: pool connections).
   * Its `tx(fn)` may run `fn` twice (a first attempt abandoned and rolled back): `fn` must do
   * nothing but issue statements and compute its result from them. `schemaVersion`: the version of
   * the project's tables and policies the caller planned its statements under (project-schema.ts);
   * an engine that reuses statements never reuses one across versions.
   */
  data(projectId: string, schemaVersion: number): Promise<Db>;
  /** Removes a project's store and everything in it. */
  dropProjectStore(projectId: string): Promise<void>;
  /**
   * PROJECT_MAX_BYTES before a write of about `adding()` bytes (asked only by an engine that counts): 'free' to run as it is, or 'measure'
   * to run in a transaction through `growing` (PostgreSQL, when it would reach the bound); throws
   * StorageFull for a while after a write was refused (PostgreSQL). The embedded engine's files
   * stop at the bound by themselves: always 'free'.
   */
  storageRoom(projectId: string, adding: () => number): 'free' | 'measure';
  /** Rows of the project were deleted: space may be free again (PostgreSQL measures its next write). */
  storageFreed(projectId: string): void;
  /** A write that ran outside `growing` added about `bytes()` (PostgreSQL counts them until its next measure). */
  grew(projectId: string, bytes: () => number): void;
  /**
   * A write that may make the project's store grow, in its transaction `tx`, within
   * PROJECT_MAX_BYTES: the embedded engine's files stop at the bound by themselves; PostgreSQL
   * measures what the write grew (`opts.table`, else the whole project) when the project is at its
   * bound or `opts.always`, and refuses it (StorageFull) past the bound
   * (postgres/postgres-storage-bound.ts).
   */
  growing<T>(projectId: string, tx: Db, write: (tx: Db) => Promise<T>, opts?: GrowingOptions): Promise<T>;
  ping(): Promise<boolean>;
  /** What the engine is doing now (the metrics read it when scraped). */
  stats(): EngineStats;
  close(): Promise<void>;
}

/** An engine's state for the metrics; the part of the other engine is null. */
export interface EngineStats {
  /** the fair gate over statements on project tables (SQLite: worker threads; PostgreSQL: pool connections) */
  gate: GateStats;
  /** PostgreSQL: connections open and idle, requests waiting for one, and the pool's size */
  pool: { total: number; idle: number; waiting: number; max: number } | null;
  /** the embedded engine: project files open on the main thread (and their limit), worker threads running */
  sqlite: { openProjects: number; maxOpenProjects: number; workerThreads: number } | null;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

// Driver errors translated at the adapter, so services only see these.
export class UniqueViolation extends Error {
  constructor(readonly constraint: string | null) {
    super('unique violation');
  }
}
export class NotNullViolation extends Error {
  constructor(readonly column: string | null) {
    super('not null violation');
  }
}
/**
 * A statement that no longer fits its tables: a column it names is gone or has another type, or a
 * prepared statement's rows would change shape. A statement built for the schema version a request
 * read meets this when the table's owner changed it since (services/rows/rows.ts tells that from
 * a fault of ours by the version).
 */
export class SchemaMismatch extends Error {
  constructor(readonly original: unknown) {
    super(`the statement does not fit its tables: ${(original as Error)?.message ?? original}`);
  }
}
/**
 * A failure of the database itself rather than of the request: an error of the vocabulary
 * (src/error-table.ts) already, so that no layer above maps it again. `why` names the cause for
 * logs, never for clients.
 */
export class StorageFailure extends AppError {
  constructor(
    key: 'query_timeout' | 'storage_full' | 'storage_full.quota' | 'not_found.deleted' | `database_unavailable.${DatabaseUnavailable['reason']}`,
    readonly why: string,
    params?: Record<string, unknown>,
  ) {
    super(...([key, params] as AppErrorArgs));
  }
}
/** The database cancelled a statement that ran past the configured statement timeout. */
export class QueryTimeout extends StorageFailure {
  constructor() {
    super('query_timeout', 'statement timeout');
  }
}
/**
 * The database cannot serve the request: it could not be reached (`unreachable`: nothing was
 * done), the connection a statement was using broke (`connection_lost`: an open transaction was
 * rolled back by the server, but a COMMIT or a statement outside a transaction may have taken
 * effect), or the server only accepts reads (`read_only`: a standby, as during a failover).
 * Temporary: the request may be retried.
 */
export class DatabaseUnavailable extends StorageFailure {
  constructor(
    readonly reason: 'unreachable' | 'connection_lost' | 'read_only',
    why: string,
  ) {
    super(`database_unavailable.${reason}`, why);
  }
}
/** A project's store is gone (deleted, possibly by another node, after this one saw it). */
export class StoreMissing extends StorageFailure {
  constructor() {
    super('not_found.deleted', 'project store missing');
  }
}
/**
 * The disk is full, or (`limit`: PROJECT_MAX_BYTES) the project's store has reached its bound:
 * writes that need more space fail, reads and deletes go on.
 */
export class StorageFull extends StorageFailure {
  constructor(readonly limit?: number) {
    super(limit === undefined ? 'storage_full' : 'storage_full.quota', 'storage full', limit === undefined ? undefined : { limit });
  }
}
