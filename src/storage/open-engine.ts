import type { Engine } from './engine.ts';
import type { Config } from '../config.ts';
import type { PostgresOptions } from './postgres/postgres-engine.ts';
import { fileLimit, openProjectLimit } from './sqlite/sqlite-open-limit.ts';

export type EngineOptions = Parameters<typeof openEngine>[0];

/** The engine options a validated configuration sets (main.ts and the benchmark open engines alike). */
export function engineOptions(config: Config): EngineOptions {
  return {
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    statementTimeoutMs: config.statementTimeoutMs,
    projectConcurrency: config.projectConcurrency,
    postgres: config.postgres,
    sqliteWorkers: config.sqliteWorkers,
    sqliteWorkerIdleMs: config.sqliteWorkerIdleMs,
    sqliteOpenProjects: config.sqliteOpenProjects,
    maxResultBytes: config.maxResultBytes,
    projectMaxBytes: config.projectMaxBytes,
  };
}

/** Refuses options the engine would refuse when opened, before anything is written (main.ts). */
export function checkEngineOptions(opts: EngineOptions): void {
  if (!opts.databaseUrl) openProjectLimit(opts.sqliteOpenProjects ?? undefined, fileLimit());
}

export async function openEngine(opts: {
  databaseUrl: string | null;
  dataDir: string;
  statementTimeoutMs?: number;
  /** statements over its tables one project may run at once (default: half the engine's capacity) */
  projectConcurrency?: number | null;
  /** pool size and timeouts of the PostgreSQL engine */
  postgres?: Omit<PostgresOptions, 'statementTimeoutMs' | 'perProject'>;
  /** worker threads of the embedded engine, and how long they stay without a statement */
  sqliteWorkers?: number;
  sqliteWorkerIdleMs?: number;
  /** project files the embedded engine keeps open (null: its default) */
  sqliteOpenProjects?: number | null;
  /** MAX_RESULT_BYTES (result-budget.ts) */
  maxResultBytes?: number;
  /** PROJECT_MAX_BYTES: the storage one project's store may take (none: no bound) */
  projectMaxBytes?: number;
}): Promise<Engine> {
  const perProject = opts.projectConcurrency ?? undefined;
  // each engine (and its driver: pg alone is about 13 MiB) is loaded only when it is the one used
  if (opts.databaseUrl) {
    const { PostgresEngine } = await import('./postgres/postgres-engine.ts');
    return PostgresEngine.open(opts.databaseUrl, { ...opts.postgres, statementTimeoutMs: opts.statementTimeoutMs, perProject, maxResultBytes: opts.maxResultBytes, projectMaxBytes: opts.projectMaxBytes });
  }
  const { SqliteEngine } = await import('./sqlite/sqlite-engine.ts');
  return SqliteEngine.open({
    dataDir: opts.dataDir,
    statementTimeoutMs: opts.statementTimeoutMs,
    workers: opts.sqliteWorkers,
    workerIdleMs: opts.sqliteWorkerIdleMs,
    perProject,
    maxOpenProjects: opts.sqliteOpenProjects ?? undefined,
    maxResultBytes: opts.maxResultBytes,
    projectMaxBytes: opts.projectMaxBytes,
  });
}
