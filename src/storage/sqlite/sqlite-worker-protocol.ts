// Messages between the main thread and the SQLite worker threads (sqlite-worker.ts).
import type { SqlParam } from '../engine.ts';

export interface WorkerSetup {
  projectDir: string;
  /** project files a worker keeps open at once */
  maxConnections: number;
  /** how long a write waits for another connection's write lock, blocking this worker */
  busyTimeoutMs: number;
  /** the statement-deadline extension to load into every connection */
  deadlineLibrary: string;
  /** MAX_RESULT_BYTES: the most a statement's rows may hold (result-budget.ts) */
  maxResultBytes: number;
  /** PROJECT_MAX_BYTES: how large a project file may grow */
  projectMaxBytes?: number;
}

/** The code a worker reports a write stopped by PROJECT_MAX_BYTES under, the bound in bytes as its message. */
export const BOUND_REACHED = 'BP_BOUND_REACHED';

export type ToWorker =
  | { t: 'q'; id: number; project: string; sql: string; params: SqlParam[]; mode: 'all' | 'get' | 'run'; timeoutMs: number }
  /** Db.tally: the statement's rows read one at a time; replies a RowTally */
  | { t: 'tally'; id: number; project: string; sql: string; params: SqlParam[]; keep: number; timeoutMs: number }
  | { t: 'begin'; id: number; project: string; timeoutMs: number }
  | { t: 'commit' | 'rollback' | 'close'; id: number; project: string }
  /** closes every connection and ends the thread, once what it runs now has returned */
  | { t: 'exit'; id: number };

export type FromWorker =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; code: string | null; message: string };
