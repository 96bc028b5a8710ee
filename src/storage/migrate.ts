// Versioned migrations: a list of named steps per store, applied in order once, recorded in the
// store's own `_bp_migrations` table, inside one transaction per step.
import type { Db } from './engine.ts';

export interface Migration {
  name: string;
  statements: string[];
}

export async function migrate(db: Db, migrations: Migration[], lock?: (db: Db) => Promise<void>): Promise<string[]> {
  const applied: string[] = [];
  await db.tx(async (tx) => {
    if (lock) await lock(tx);
    await tx.run(`CREATE TABLE IF NOT EXISTS ${tx.t('_bp_migrations')} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`);
    const done = new Set((await tx.all<{ name: string }>(`SELECT name FROM ${tx.t('_bp_migrations')}`)).map((r) => r.name));
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      for (const sql of m.statements) await tx.run(sql);
      await tx.run(`INSERT INTO ${tx.t('_bp_migrations')} (name, applied_at) VALUES (?, ?)`, [m.name, new Date().toISOString()]);
      applied.push(m.name);
    }
  });
  return applied;
}
