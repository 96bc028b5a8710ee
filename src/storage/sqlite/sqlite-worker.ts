// A worker thread that runs SQL against project files for the main thread, so that a slow
// statement (a full scan, a large bulk insert) never blocks the event loop that serves every other
// project. Each worker keeps its own connections (in two tiers, sqlite-open-files.ts: the few most
// recently used keep a small page cache, every worker has its own; the rest give theirs back, and
// the least recently used are closed beyond a limit), their prepared statements under one bound
// (sqlite-statement-cache.ts), and bounds every statement with the native deadline
// (sqlite-deadline.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { RowTally } from '../engine.ts';
import { BOUND_REACHED, type ToWorker, type FromWorker, type WorkerSetup } from './sqlite-worker-protocol.ts';
import { boundReached, openConnection, projectFile, releaseMemory } from './sqlite-connection.ts';
import { deadlineSetter } from './sqlite-deadline.ts';
import { execute, tallyRows } from './sqlite-rows.ts';
import { registerSqliteFunctions } from './sqlite-functions.ts';
import { StatementCache, statementBound, type ConnectionStatements } from './sqlite-statement-cache.ts';
import { OpenFiles } from './sqlite-open-files.ts';
import { WORKER_CACHE_KIB, WORKER_WARM } from './sqlite-open-limit.ts';

interface Conn {
  db: Database.Database;
  setDeadline: (ms: number) => void;
  statements: ConnectionStatements;
  /** the project was deleted during a transaction: close once it ends, never reopen meanwhile */
  closing: boolean;
}

const setup = workerData as WorkerSetup;
const statements = new StatementCache(statementBound(setup.maxConnections));
const conns = new OpenFiles<Conn>({
  limit: setup.maxConnections,
  warm: WORKER_WARM,
  release: (c) => releaseMemory(c.db, c.setDeadline),
  close: (c) => closeConn(c),
  pinned: (c) => c.db.inTransaction,
  later: (fn) => setImmediate(fn),
});

function conn(projectId: string): Conn {
  const open = conns.use(projectId);
  if (open) return open;
  const db = openConnection(projectFile(setup.projectDir, projectId), {
    mustExist: true,
    busyTimeoutMs: setup.busyTimeoutMs,
    extension: setup.deadlineLibrary,
    cacheKiB: WORKER_CACHE_KIB,
    maxBytes: setup.projectMaxBytes,
  });
  const c = { db, setDeadline: deadlineSetter(db), statements: statements.connection(db, registerSqliteFunctions), closing: false };
  conns.add(projectId, c);
  return c;
}

function closeConn(c: Conn): void {
  c.statements.forget();
  c.db.close();
}

function query(c: Conn, m: Extract<ToWorker, { t: 'q' }>): unknown {
  const st = c.statements.prepare(m.sql);
  c.setDeadline(m.timeoutMs);
  try {
    return execute(st, m.params, m.mode, setup.maxResultBytes);
  } finally {
    c.setDeadline(0);
  }
}

/** Db.tally, its rows read under the statement's deadline */
function tally(c: Conn, m: Extract<ToWorker, { t: 'tally' }>): RowTally {
  const st = c.statements.prepare(m.sql);
  c.setDeadline(m.timeoutMs);
  try {
    return tallyRows(st.iterate(...m.params) as Iterable<Record<string, unknown>>, m.keep, setup.maxResultBytes);
  } finally {
    c.setDeadline(0);
  }
}

function close(projectId: string): void {
  const c = conns.peek(projectId);
  if (!c) return;
  if (c.db.inTransaction) {
    c.closing = true; // closing now would roll back, and the next statement would reopen in autocommit
    return;
  }
  conns.take(projectId);
  closeConn(c);
}

/** The thread's end, asked by the pool: connections closed (a transaction left open rolls back), then the thread stops. */
function exit(): never {
  for (const c of conns.takeAll()) closeConn(c);
  process.exit(0);
}

function begin(c: Conn, timeoutMs: number): void {
  c.setDeadline(timeoutMs);
  try {
    c.db.exec('BEGIN IMMEDIATE');
  } finally {
    c.setDeadline(0);
  }
}

/** Ends the transaction; a project deleted meanwhile is closed now. */
function end(c: Conn, projectId: string, sql: 'COMMIT' | 'ROLLBACK'): void {
  try {
    // an interrupted write may already have rolled the transaction back
    if (sql === 'COMMIT' || c.db.inTransaction) c.db.exec(sql);
  } finally {
    if (c.closing && !c.db.inTransaction) close(projectId);
  }
}

function handle(m: ToWorker): unknown {
  if (m.t === 'exit') return exit();
  if (m.t === 'close') return close(m.project) ?? null;
  const c = conn(m.project);
  switch (m.t) {
    case 'q':
      return query(c, m);
    case 'tally':
      return tally(c, m);
    case 'begin':
      return begin(c, m.timeoutMs) ?? null;
    case 'commit':
      return end(c, m.project, 'COMMIT') ?? null;
    case 'rollback':
      return end(c, m.project, 'ROLLBACK') ?? null;
  }
}

/** SQLITE_FULL: from the file's bound (PROJECT_MAX_BYTES) or the disk, told while the connection is at hand */
function fullReply(m: ToWorker, reply: FromWorker): FromWorker {
  const c = 'project' in m ? conns.peek(m.project) : undefined;
  const limit = c?.db.open ? boundReached(c.db) : null;
  return limit === null ? reply : { id: m.id, ok: false, code: BOUND_REACHED, message: String(limit) };
}

parentPort!.on('message', (m: ToWorker) => {
  let reply: FromWorker;
  try {
    reply = { id: m.id, ok: true, value: handle(m) };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    reply = { id: m.id, ok: false, code: typeof e?.code === 'string' ? e.code : null, message: String(e?.message ?? err) };
    if (e?.code === 'SQLITE_FULL') reply = fullReply(m, reply);
  }
  parentPort!.postMessage(reply);
});
