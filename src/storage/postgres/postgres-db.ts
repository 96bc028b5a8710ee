// pg behind the async Db interface. SQL is written with `?` placeholders for both engines; they
// are rewritten to $1..$n here (generated SQL never contains a literal `?`).
import { createHash } from 'node:crypto';
import { pg, type Pool, type PoolClient, type QueryConfig, type QueryResultRow } from './pg-driver.ts';
import { PreparedNames, type StatementOwner } from './prepared-names.ts';
import { boundedQuery, PreparedRun, shapeOf, type Shape } from './prepared-run.ts';
import type { PoolLanes } from './pool-lanes.ts';
import { AppError } from '../../errors.ts';
import type { Db, RowFailure, SqlParam } from '../engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, QueryTimeout, DatabaseUnavailable, StoreMissing, SchemaMismatch, ROW_FAILURES } from '../engine.ts';
import { CALL_BOUND_FAILURES } from '../../policy-language/call-bounds.ts';

/** The most parameters one statement may carry (the wire protocol's Bind message counts them in 16 bits). */
const PG_MAX_PARAMS = 65535;

/** The SQLSTATE of bp_assert (schema.ts, migration 0004_row_assertion): a class no server uses. */
export const ASSERTION_SQLSTATE = 'BP001';

/** A call of bp_assert: 1, or the statement fails with `failure` (an error-table key or a call bound's code; never user text). */
export const assertSql = (condition: string, failure: string) => `${quoteIdent(PLATFORM_SCHEMA)}.bp_assert(${condition}, '${failure}')`;

// Result types the same as SQLite's: numbers for bigint/count, ISO strings for instants,
// 'YYYY-MM-DD' for dates. Given to each pool (postgres-engine.ts): pg's defaults stay as they are
// for anything else in the process.
const INT8 = 20, DATE = 1082, TIMESTAMP = 1114, TIMESTAMPTZ = 1184;
/** `2026-11-27 01:02:03.123456+00` (a UTC session, years 1000-9999): what `toISOString` gives, from the text alone. */
const UTC_INSTANT = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;

/** A timestamptz as ISO-8601 UTC with milliseconds (cut, as Date cuts them); on every read path, so the common form skips Date. */
export function instant(v: string): string {
  const m = UTC_INSTANT.exec(v);
  if (m === null) return new Date(v).toISOString();
  return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
}

const PARSERS = new Map<number, (v: string) => unknown>([
  [INT8, (v) => Number(v)],
  [DATE, (v) => v],
  [TIMESTAMPTZ, instant],
  [TIMESTAMP, (v) => new Date(`${v.replace(' ', 'T')}Z`).toISOString()],
]);
export const resultTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' ? (PARSERS.get(oid) ?? pg.types.getTypeParser(oid, 'text')) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Statements with parameters are named prepared statements: each pooled connection parses and plans
 * one once and then only binds and executes it, which spares the server most of a small query's
 * work. A prepared statement keeps the parameter types of its first analysis, so a statement over a
 * project's own tables is named under the project's schema version (`PgDb.version`): after a table
 * changes, the same text is a new statement. What a connection names, and when it is replaced,
 * under which limits: prepared-names.ts. Many projects read at random name more statements than a
 * connection holds: replacing the connection at its limit, as before, cost a new connection every
 * few hundred requests (p50 2.7x one project's, measured); now it is replaced after 4,096 unnamed
 * ones that a new connection would name (prepared-names.ts).
 */
/** the schema of the platform's own tables (accounts, projects); each project has one of its own */
export const PLATFORM_SCHEMA = 'baseplate';

const prepared = new WeakMap<PoolClient, PreparedNames>();
/**
 * Whether pg saw the server parse statement `name` on this client's connection (pg records it at
 * ParseComplete, its types omit the record): a statement that failed before holds nothing there,
 * one that failed while running is kept by the server all the same.
 */
const parsedBy = (client: PoolClient, name: string): boolean =>
  Boolean((client as unknown as { connection?: { parsedStatements?: Record<string, unknown> } }).connection?.parsedStatements?.[name]);
const namesOf = (client: PoolClient): PreparedNames => {
  let names = prepared.get(client);
  if (!names) prepared.set(client, (names = new PreparedNames()));
  return names;
};

/** A statement as sent: its text with `$n` placeholders, and its prepared statement's name. */
interface Statement {
  text: string;
  name: string;
  /** it ran before (while remembered here): only then is it prepared, unless the connection holds it already (PgDb.prepares) */
  ranBefore: boolean;
}

/**
 * Statement texts seen lately, least recently used first: rewriting `?` and hashing a name cost
 * more than the lookup, and the texts of a thousand projects' statements fit (a few MiB).
 */
const STATEMENTS = 4096;
const statements = new Map<string, Statement>();
function statementOf(sql: string): Statement {
  let st = statements.get(sql);
  if (st === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    st = { text, name: `bp_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`, ranBefore: false };
    if (statements.size >= STATEMENTS) statements.delete(statements.keys().next().value!);
  } else statements.delete(sql);
  statements.set(sql, st);
  return st;
}

/** (tests) The text pg is sent for `sql`. */
export const numberedParams = (sql: string): string => statementOf(sql).text;

// SQLSTATEs of a server that cannot serve this session: shutting down or restarted (57P01, also
// pg_terminate_backend; 57P02 crash; 57P03 starting up or in recovery), out of connection slots
// (53300), a session it ended for idling in a transaction (25P03), or a failed connection (class 08).
const LOST_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '25P03', '08000', '08001', '08003', '08004', '08006']);
// Socket failures on the way to the server.
const LOST_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// pg's own errors for a connection that ended, timed out (connect or query_timeout) or broke earlier.
const LOST_MESSAGES = /^(Connection terminated|Query read timeout|timeout exceeded when trying to connect|timeout expired|Client has encountered a connection error|Client was closed)/;

/** The cause of an error in one line, for logs (a failed connect to several addresses is an AggregateError with no message of its own). */
function describe(err: unknown): string {
  const e = err as { message?: string; errors?: unknown[] };
  if (Array.isArray(e?.errors) && e.errors.length > 0 && !e.message) return e.errors.map(describe).join('; ');
  return String(e?.message ?? err).replace(/\s+/g, ' ');
}

// A statement that does not fit its tables as they are now (SchemaMismatch): a column gone
// (42703) or of another type (42804 a value, 42883 an operator, 22P02 a parameter's text), or,
// 0A000 from plan revalidation, a prepared statement whose rows would change shape. It ran nothing.
const SCHEMA_MISMATCHES = new Set(['42703', '42804', '42883', '22P02']);

export function translatePgError(err: unknown): unknown {
  const e = err as { code?: string; constraint?: string; column?: string; message?: string; errors?: { code?: string }[] };
  if (e?.code === '23505') return new UniqueViolation(e.constraint ?? null);
  if (e?.code === '23502') return new NotNullViolation(e.column ?? null);
  if (e?.code === '57014') return new QueryTimeout();
  // a write's own check failed (Dialect.assertTrue, the platform schema's bp_assert); the statement left nothing
  if (e?.code === ASSERTION_SQLSTATE && ROW_FAILURES.has(e.message ?? '')) return new AppError(e.message as RowFailure);
  // a function call past its bound (policy-language/call-bounds.ts), refused before it ran
  if (e?.code === ASSERTION_SQLSTATE && Object.hasOwn(CALL_BOUND_FAILURES, e.message ?? '')) return CALL_BOUND_FAILURES[e.message!]!();
  // a relation or schema that is gone: the project (or table) was deleted, maybe through another node
  if (e?.code === '42P01' || e?.code === '3F000') return new StoreMissing();
  // concurrent writes that lock the same rows in opposite orders (two bulk upserts): PostgreSQL
  // rolls one back; nothing of it was written, so it can be retried
  if (e?.code === '40P01' || e?.code === '40001')
    return new AppError('write_conflict');
  if (SCHEMA_MISMATCHES.has(e?.code ?? '') || (e?.code === '0A000' && (e as { routine?: string }).routine === 'RevalidateCachedQuery')) return new SchemaMismatch(err);
  const code = e?.code ?? e?.errors?.[0]?.code;
  if ((code && (LOST_SQLSTATES.has(code) || LOST_SOCKET_CODES.has(code))) || LOST_MESSAGES.test(e?.message ?? ''))
    return new DatabaseUnavailable('connection_lost', describe(err));
  // a standby (a failover in progress, or a demoted primary) refuses writes
  if (code === '25006' || (code === '55000' && /recovery/i.test(e?.message ?? ''))) return new DatabaseUnavailable('read_only', describe(err));
  return err;
}

/**
 * A write of one statement runs without a transaction (services/rows/insert.ts): if this node's
 * connection dies while the statement waits (on a row lock, say), the server would otherwise only
 * notice when it answers, after committing. PostgreSQL 14+ checks every so often that the client is
 * still there and then cancels the statement; PostgreSQL 13 has no such setting (set_config finds no
 * row, and such a write may then still be applied: 503 connection_lost says it may).
 */
const CLIENT_CHECK_MS = 1000;
/**
 * The session settings of every connection, in one round trip: the client check above, and UTC as
 * the session time zone, so that instants come back as `YYYY-MM-DD HH:MM:SS.ffffff+00` (the fast
 * path of `instant` below) whatever the server's own zone is.
 */
const SESSION = `SELECT set_config('TimeZone', 'UTC', false); SELECT set_config(name, '${CLIENT_CHECK_MS}', false) FROM pg_settings WHERE name = 'client_connection_check_interval'`;

/** What a statement's run gives back. */
interface Rows {
  rows: QueryResultRow[];
  rowCount: number | null;
}

/** The error that broke a pooled client's connection, noted whenever it happened. */
const failures = new WeakMap<PoolClient, Error>();

/**
 * pg-pool takes its own 'error' listener off a client while it is checked out, and before our code
 * even holds it: without a listener of its own, a connection that dies then (server restart,
 * failover, pg_terminate_backend, a network reset; even right after its handshake) emits an
 * unhandled 'error' that ends the process. Every client gets one listener for its whole life, which
 * notes the failure so that the client is discarded when it is released.
 */
export function watchPool(pool: Pool): void {
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      if (!failures.has(client)) failures.set(client, err);
    });
    // Sent before the client's first statement (pg runs a client's queries in order).
    client.query(SESSION).catch(() => undefined);
  });
  pool.on('error', () => undefined); // an idle client's connection died: the pool has already discarded it
}

/**
 * One client checked out of the pool. A client whose connection broke, or whose statement got no
 * answer in time (it is still busy with it), is released with the error, so the pool discards it
 * instead of handing it to the next request.
 */
class Lease {
  /** A statement without parameters (DDL) ran in this lease's transaction: see PgDb.query. */
  schemaTouched = false;

  private constructor(private readonly client: PoolClient) {}

  /** Any failure to get a connection (refused, timed out, unknown database, no free client in time) means the database is unavailable. */
  static async acquire(lanes: PoolLanes, owner: StatementOwner | undefined): Promise<Lease> {
    try {
      return new Lease(await lanes.connect(owner?.project));
    } catch (err) {
      throw new DatabaseUnavailable('unreachable', describe(err));
    }
  }

  get broken(): boolean {
    return failures.has(this.client);
  }

  /**
   * `name`: run as that prepared statement, if `firstRun` only when this connection holds it
   * already (PgDb.prepares); `owner`: the project it reads (none: the platform's)
   */
  async query(text: string, values: readonly SqlParam[], opts: { timeoutMs?: number; name?: string; firstRun?: boolean; owner?: StatementOwner; maxBytes?: number } = {}): Promise<Rows> {
    // the protocol counts parameters in 16 bits: pg would send a malformed Bind message
    if (values.length > PG_MAX_PARAMS) throw new AppError('query_too_complex.bound_values', { limit: PG_MAX_PARAMS });
    const config: QueryConfig = { text, values: values as unknown[] };
    // query_timeout (per query; pg reads it, its types omit it) overrides the pool's for this statement
    if (opts.timeoutMs) Object.assign(config, { query_timeout: opts.timeoutMs });
    const names = namesOf(this.client);
    if (opts.name && (!opts.firstRun || names.holds(opts.name))) config.name = names.name(opts.name, opts.owner);
    try {
      const shape = config.name === undefined ? undefined : names.shapeOf(config.name);
      const maxBytes = opts.maxBytes ?? Number.POSITIVE_INFINITY;
      if (shape && parsedBy(this.client, config.name!)) return await this.again(config, shape, maxBytes);
      const result = maxBytes === Number.POSITIVE_INFINITY ? await this.client.query(config) : await boundedQuery(this.client, config, maxBytes);
      if (config.name) names.described(config.name, shapeOf(result.fields, resultTypes));
      return result;
    } catch (err) {
      // named here but never parsed (one parsed before, or now, pg has on record): the server holds nothing under it
      if (config.name && !parsedBy(this.client, config.name)) namesOf(this.client).forget(config.name, opts.owner);
      const translated = translatePgError(err);
      if (translated instanceof DatabaseUnavailable && !failures.has(this.client)) failures.set(this.client, err as Error);
      throw translated;
    }
  }

  /** A run of a statement this connection ran before: Bind, Execute and Sync only (prepared-run.ts). */
  private again(config: QueryConfig, shape: Shape, maxBytes: number): Promise<Rows> {
    const run = new PreparedRun(config.name!, config.values as SqlParam[], shape, maxBytes);
    Object.assign(run, { query_timeout: (config as { query_timeout?: number }).query_timeout });
    this.client.query(run as never);
    // an error read off the socket, traced back to the statement's caller as pg's own are
    return run.done.catch((err: Error) => {
      Error.captureStackTrace(err);
      throw err;
    });
  }

  release(): void {
    this.client.release(failures.get(this.client) ?? (prepared.get(this.client)?.replace ? true : undefined));
  }
}

export class PgDb implements Db {
  readonly kind = 'postgres' as const;
  /**
   * Inside a transaction every statement runs on `lease`; outside, each one checks a client out of
   * `lanes`. `version`: the project's schema version the statements over its own tables are
   * prepared under (null: statements over the platform's and a project's `_bp_` tables, whose
   * types never change; the one statement such a Db runs over a project's own table, an alter's
   * backfill, follows the alter's DDL and so is not prepared).
   */
  constructor(
    private readonly lanes: PoolLanes,
    readonly schema: string,
    private readonly version: number | null = null,
    private readonly lease: Lease | null = null,
    /** MAX_RESULT_BYTES on this Db's statements (result-budget.ts; the platform's are not bounded) */
    private readonly maxResultBytes = Number.POSITIVE_INFINITY,
  ) {
    this.owner = schema === PLATFORM_SCHEMA ? undefined : { project: schema, version };
  }

  /** whose share of a connection's prepared statements this Db's take (prepared-names.ts) */
  private readonly owner: StatementOwner | undefined;

  t(name: string): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(name)}`;
  }

  private async query(sql: string, params: readonly SqlParam[]): Promise<Rows> {
    const st = statementOf(sql);
    const text = st.text;
    if (this.lease && params.length === 0) this.lease.schemaTouched = true;
    const opts = {
      name: this.prepares(params, this.lease) ? (this.version === null ? st.name : `${st.name}_${this.version}`) : undefined,
      firstRun: !st.ranBefore,
      owner: this.owner,
      maxBytes: this.maxResultBytes,
    };
    st.ranBefore = true;
    if (this.lease) return this.lease.query(text, params, opts);
    const lease = await Lease.acquire(this.lanes, this.owner);
    try {
      return await lease.query(text, params, opts);
    } finally {
      lease.release();
    }
  }

  /**
   * Statements without parameters (DDL, BEGIN, COMMIT) cannot or need not be prepared. Nor can those
   * that follow one in a transaction: a table altered there (and maybe rolled back) may have other
   * types than the version the statement would be named under, and a statement prepared against it
   * would keep them (a column re-added as text after a rolled-back integer one got bigint params).
   * Nor is one the first time it runs (Lease.query), unless the connection holds it already (its
   * text left `statements` meanwhile): statements that run once (a project's first request
   * resolves its caller the long way, four statements it will not send again while its guarded
   * read holds) would take the places of those that run again, which then ran unnamed, parsed
   * and planned each time (1,000 projects read at random: 10-30% of reads, measured).
   */
  private prepares(params: readonly SqlParam[], lease: Lease | null): boolean {
    return params.length > 0 && !lease?.schemaTouched;
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[];
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<{ changes: number }> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }

  /** (row locks on bookkeeping rows are short: an ordinary write) */
  async runBestEffort(sql: string, params: readonly SqlParam[] = []): Promise<void> {
    await this.run(sql, params);
  }

  async tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.lease) return fn(this);
    const lease = await Lease.acquire(this.lanes, this.owner);
    try {
      await lease.query('BEGIN', []);
      const result = await fn(new PgDb(this.lanes, this.schema, this.version, lease, this.maxResultBytes));
      await lease.query('COMMIT', []);
      return result;
    } catch (err) {
      // A broken connection has no transaction left to roll back (the server ends it with the
      // session), and a ROLLBACK queued behind an unanswered statement would only wait again.
      if (!lease.broken) await lease.query('ROLLBACK', []).catch(() => undefined);
      throw err;
    } finally {
      lease.release();
    }
  }

  /** True when the server answers `SELECT 1` within timeoutMs, waiting for a pool client included. */
  async ping(timeoutMs: number): Promise<boolean> {
    const probe = (async () => {
      const lease = await Lease.acquire(this.lanes, this.owner);
      try {
        await lease.query('SELECT 1', [], { timeoutMs });
        return true;
      } finally {
        lease.release();
      }
    })().catch(() => false);
    let timer: NodeJS.Timeout | undefined;
    // a pool whose clients all hang may make even the checkout wait: the probe then finishes (or
    // times out) in the background while /health has already answered
    const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([probe, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
