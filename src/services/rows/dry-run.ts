// `Prefer: tx=rollback` (PostgREST with db-tx-end=commit-allow-override; supabase-js `.rollback()`):
// the write runs, checks and answers as it would, and its transaction is rolled back.
import type { Db } from '../../storage/engine.ts';

class RolledBack extends Error {
  constructor(readonly result: unknown) {
    super('rolled back');
  }
}

/** `fn` in a transaction of `db`, committed, or rolled back after it answered when `dryRun`. */
export async function transact<T>(db: Db, dryRun: boolean, fn: (tx: Db) => Promise<T>): Promise<T> {
  if (!dryRun) return db.tx(fn);
  try {
    await db.tx(async (tx) => {
      throw new RolledBack(await fn(tx));
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.result as T;
    throw err;
  }
  throw new Error('internal: a dry run committed');
}
