// What the passthrough sends to a project's data store (`engine.data`: the SQLite worker threads,
// PostgreSQL's gated pool): statements, their distinct texts, and the most rows one of them handed
// back, counted on both engines for the rest tests.
import type { TestApp } from '../support/app.ts';
import type { Db, Engine } from '../../src/storage/engine.ts';

export interface StatementCount {
  statements: number;
  /** transactions begun (each costs BEGIN and COMMIT round trips on PostgreSQL) */
  transactions: number;
  shapes: number;
  /** the most rows one statement returned to the service */
  maxRows: number;
}

/** Counts from now until `stop()`. */
export function countStatements(t: TestApp): { stop: () => StatementCount } {
  const engine = t.engine as { data: Engine['data'] };
  const original = engine.data;
  const count: StatementCount = { statements: 0, transactions: 0, shapes: 0, maxRows: 0 };
  const texts = new Set<string>();
  /** `attempt`: the statements of the transaction attempt this one runs in, if any */
  const wrap = (db: Db, attempt?: { statements: number }): Db => {
    const seen = <T>(sql: string, result: Promise<T>, rows: (r: T) => number): Promise<T> => {
      count.statements++;
      if (attempt) attempt.statements++;
      texts.add(sql);
      return result.then((r) => ((count.maxRows = Math.max(count.maxRows, rows(r))), r));
    };
    return {
      kind: db.kind,
      t: (name) => db.t(name),
      all: (sql, params) => seen(sql, db.all(sql, params), (r) => r.length),
      get: (sql, params) => seen(sql, db.get(sql, params), (r) => (r === undefined ? 0 : 1)),
      run: (sql, params) => seen(sql, db.run(sql, params), () => 0),
      runBestEffort: (sql, params) => seen(sql, db.runBestEffort(sql, params), () => 0),
      tx: (fn) => {
        count.transactions++;
        // SQLite runs a transaction that proves expensive on the main thread again in a worker
        // (sqlite-hybrid-db.ts): only the attempt that finished is the request's statements
        let current = { statements: 0 };
        return db.tx((inner) => {
          count.statements -= current.statements;
          current = { statements: 0 };
          return fn(wrap(inner, current));
        });
      },
      ...(db.tally && { tally: (sql, params, keep) => seen(sql, db.tally!(sql, params, keep), (r) => r.rows.length) }),
    };
  };
  engine.data = async (id, version) => wrap(await original.call(t.engine, id, version));
  return {
    stop: () => {
      engine.data = original;
      return { ...count, shapes: texts.size };
    },
  };
}
