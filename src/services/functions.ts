// Edge functions (CONTRACT §8): owner-deployed JavaScript modules, stored in the project's own
// store and run per request in a fresh isolate. `context.db` reaches the project's tables through
// the passthrough's own RowService, as the calling end user, under the same policies.
import { StorageFailure, type Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuthContext } from './end-users.ts';
import type { KeyCaller } from './keys.ts';
import { TABLE_PERMISSIONS, type RestRequest, type RowService } from './rows/rows.ts';
import { AppError } from '../errors.ts';
import { NAME_RE } from '../lib/validate.ts';
import { FunctionFailure, FunctionInvalid, type FunctionRequest, type FunctionResponse } from '../functions/invocation.ts';
import { callError, type SandboxPool } from '../functions/pool.ts';
import { noMetrics, type ServiceMetrics } from '../lib/metrics.ts';

export const CODE_MAX_BYTES = 256 * 1024;

export interface FunctionInfo {
  name: string;
  size: number;
  created_at: string;
  updated_at: string;
}

const OPS: Record<string, RestRequest['method']> = { select: 'GET', insert: 'POST', update: 'PATCH', delete: 'DELETE' };

function checkName(name: string): string {
  if (!NAME_RE.test(name)) throw new AppError('validation_failed.function_name');
  return name;
}

function queryOf(raw: unknown): URLSearchParams | null {
  if (raw === undefined || raw === null) return new URLSearchParams();
  if (typeof raw === 'string') return new URLSearchParams(raw);
  if (typeof raw !== 'object' || Array.isArray(raw)) return null;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(raw)) {
    for (const item of Array.isArray(v) ? v : [v]) {
      if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') return null;
      q.append(k, String(item));
    }
  }
  return q;
}

export class FunctionService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
    private readonly rows: RowService,
    private readonly pool: SandboxPool,
    private readonly metrics: ServiceMetrics = noMetrics,
  ) {}

  /** Stops the sandbox processes. */
  close(): Promise<void> {
    return this.pool.close();
  }

  async list(projectId: string): Promise<FunctionInfo[]> {
    const db = await this.engine.project(projectId);
    const rows = await db.all<{ name: string; code: string; created_at: string; updated_at: string }>(
      `SELECT name, code, created_at, updated_at FROM ${db.t('_bp_functions')} ORDER BY name`,
    );
    return rows.map((r) => ({ name: r.name, size: Buffer.byteLength(r.code), created_at: r.created_at, updated_at: r.updated_at }));
  }

  async get(projectId: string, name: string): Promise<FunctionInfo & { code: string }> {
    if (!NAME_RE.test(name)) throw new AppError('not_found', { what: 'function' });
    const db = await this.engine.project(projectId);
    const r = await db.get<{ name: string; code: string; created_at: string; updated_at: string }>(
      `SELECT name, code, created_at, updated_at FROM ${db.t('_bp_functions')} WHERE name = ?`,
      [name],
    );
    if (!r) throw new AppError('not_found', { what: 'function' });
    return { name: r.name, size: Buffer.byteLength(r.code), created_at: r.created_at, updated_at: r.updated_at, code: r.code };
  }

  /** Creates or replaces; the code must compile, import nothing and export a default function. */
  async deploy(projectId: string, rawName: string, code: string): Promise<{ created: boolean; fn: FunctionInfo & { code: string } }> {
    const name = checkName(rawName);
    if (Buffer.byteLength(code) > CODE_MAX_BYTES) throw new AppError('validation_failed.code_too_long', { max: CODE_MAX_BYTES });
    if (code.trim() === '') throw new AppError('validation_failed.empty', { field: 'code', what: 'code' });
    try {
      await this.pool.check(projectId, code);
    } catch (err) {
      if (err instanceof FunctionInvalid) throw new AppError('invalid_function', { message: err.message.slice(0, 1000) });
      if (err instanceof FunctionFailure) throw new AppError('invalid_function.load', { message: err.message, reason: err.code });
      throw err;
    }
    const db = await this.engine.project(projectId);
    const now = this.clock.now().toISOString();
    // up to CODE_MAX_BYTES each: within PROJECT_MAX_BYTES (Engine.growing)
    const created = await db.tx((outer) =>
      this.engine.growing(
        projectId,
        outer,
        async (tx) => {
          const existing = await tx.get(`SELECT name FROM ${tx.t('_bp_functions')} WHERE name = ?`, [name]);
          if (existing) await tx.run(`UPDATE ${tx.t('_bp_functions')} SET code = ?, updated_at = ? WHERE name = ?`, [code, now, name]);
          else await tx.run(`INSERT INTO ${tx.t('_bp_functions')} (name, code, created_at, updated_at) VALUES (?, ?, ?, ?)`, [name, code, now, now]);
          return !existing;
        },
        { table: '_bp_functions', always: true },
      ),
    );
    return { created, fn: await this.get(projectId, name) };
  }

  async remove(projectId: string, name: string): Promise<void> {
    if (!NAME_RE.test(name)) throw new AppError('not_found', { what: 'function' });
    const db = await this.engine.project(projectId);
    const res = await db.run(`DELETE FROM ${db.t('_bp_functions')} WHERE name = ?`, [name]);
    if (res.changes === 0) throw new AppError('not_found', { what: 'function' });
  }

  async invoke(projectId: string, name: string, request: FunctionRequest, key: KeyCaller, auth: AuthContext | null): Promise<FunctionResponse> {
    const fn = await this.get(projectId, name);
    // a function reads and writes tables as its caller; RLS decides which rows
    const caller: KeyCaller = { keyId: key.keyId, permissions: TABLE_PERMISSIONS };
    const bridge = async (json: string): Promise<string> => JSON.stringify(await this.dbCall(projectId, caller, auth, json));
    const started = performance.now();
    let outcome = 'ok';
    try {
      return await this.pool.run(projectId, fn.code, request, auth, bridge);
    } catch (err) {
      const failure = err instanceof FunctionFailure ? new AppError(err.code, { message: err.message, details: err.detail === null ? null : { error: err.detail } }) : err;
      outcome = failure instanceof AppError ? failure.code : 'internal_error';
      throw failure;
    } finally {
      this.metrics.functionInvoked(outcome, (performance.now() - started) / 1000);
    }
  }

  /** One context.db call: the passthrough with the function's caller, never an exception. */
  private async dbCall(projectId: string, key: KeyCaller, auth: AuthContext | null, json: string): Promise<unknown> {
    let call: { op?: unknown; table?: unknown; query?: unknown; body?: unknown };
    try {
      call = JSON.parse(json);
    } catch {
      return callError(new AppError('bad_request.call_not_json'));
    }
    const method = typeof call.op === 'string' ? OPS[call.op] : undefined;
    const query = queryOf(call.query);
    if (!method || typeof call.table !== 'string' || query === null)
      return callError(new AppError('bad_request.call_shape'));
    try {
      const res = await this.rows.handle({
        projectId,
        table: call.table,
        rowId: null,
        method,
        query,
        prefer: 'return=representation',
        accept: undefined,
        range: undefined,
        body: call.body,
        key,
        auth,
      });
      return { data: res.body ?? null };
    } catch (err) {
      // a failure of the database itself (the project was deleted meanwhile, say) is an opaque failed
      // call: the function sees it, the service goes on
      if (err instanceof AppError && !(err instanceof StorageFailure)) return callError(err);
      return callError(new AppError('internal_error.db_call'));
    }
  }
}
