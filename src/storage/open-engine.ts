import type { Engine } from './engine.ts';
import { SqliteEngine, type SqliteEngineOptions } from './sqlite/sqlite-engine.ts';
import { PostgresEngine, type PostgresOptions } from './postgres/postgres-engine.ts';

export async function openEngine(opts: {
  databaseUrl: string | null;
  dataDir: string;
  statementTimeoutMs?: number;
  /** pool size and timeouts of the PostgreSQL engine */
  postgres?: Omit<PostgresOptions, 'statementTimeoutMs'>;
  onOpenSqliteProject?: SqliteEngineOptions['onOpenProject'];
}): Promise<Engine> {
  if (opts.databaseUrl) return PostgresEngine.open(opts.databaseUrl, { ...opts.postgres, statementTimeoutMs: opts.statementTimeoutMs });
  return SqliteEngine.open({ dataDir: opts.dataDir, onOpenProject: opts.onOpenSqliteProject, statementTimeoutMs: opts.statementTimeoutMs });
}
