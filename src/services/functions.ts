// Edge functions (CONTRACT §8): owner-deployed JavaScript modules, stored in the project's own
// store and run per request in a fresh isolate. `context.db` reaches the project's tables through
// the passthrough's own RowService, as the calling end user, under the same policies.
import type { Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuthContext } from './end-users.ts';
import type { KeyCaller, Permission } from './keys.ts';
import type { RestRequest, RowService } from './rows/rows.ts';
import { AppError, invalid, notFound } from '../errors.ts';
import { NAME_RE } from '../lib/validate.ts';
import { FunctionFailure, FunctionInvalid, type FunctionRequest, type FunctionResponse } from '../functions/sandbox.ts';
import type { SandboxPool } from '../functions/pool.ts';

export const CODE_MAX_BYTES = 256 * 1024;

export interface FunctionInfo {
  name: string;
  size: number;
  created_at: string;
  updated_at: string;
}

const OPS: Record<string, RestRequest['method']> = { select: 'GET', insert: 'POST', update: 'PATCH', delete: 'DELETE' };
// a function reads and writes tables as its caller; RLS decides which rows
const TABLE_PERMISSIONS: ReadonlySet<Permission> = new Set(['select', 'insert', 'update', 'delete']);

function checkName(name: string): string {
  if (!NAME_RE.test(name)) throw invalid('name', 'invalid_format', 'A function name matches ^[a-z_][a-z0-9_]{0,62}$.');
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
    if (!NAME_RE.test(name)) throw notFound('function');
    const db = await this.engine.project(projectId);
    const r = await db.get<{ name: string; code: string; created_at: string; updated_at: string }>(
      `SELECT name, code, created_at, updated_at FROM ${db.t('_bp_functions')} WHERE name = ?`,
      [name],
    );
    if (!r) throw notFound('function');
    return { name: r.name, size: Buffer.byteLength(r.code), created_at: r.created_at, updated_at: r.updated_at, code: r.code };
  }

  /** Creates or replaces; the code must compile, import nothing and export a default function. */
  async deploy(projectId: string, rawName: string, code: string): Promise<{ created: boolean; fn: FunctionInfo & { code: string } }> {
    const name = checkName(rawName);
    if (Buffer.byteLength(code) > CODE_MAX_BYTES) throw invalid('code', 'too_long', `The code must be at most ${CODE_MAX_BYTES} bytes.`);
    if (code.trim() === '') throw invalid('code', 'empty', 'The code must not be empty.');
    try {
      await this.pool.check(projectId, code);
    } catch (err) {
      if (err instanceof FunctionInvalid) throw new AppError(422, 'invalid_function', err.message.slice(0, 1000), { field: 'code', reason: 'invalid_function' });
      if (err instanceof FunctionFailure) throw new AppError(422, 'invalid_function', `The module failed while loading: ${err.message}`, { field: 'code', reason: err.code });
      throw err;
    }
    const db = await this.engine.project(projectId);
    const now = this.clock.now().toISOString();
    const created = await db.tx(async (tx) => {
      const existing = await tx.get(`SELECT name FROM ${tx.t('_bp_functions')} WHERE name = ?`, [name]);
      if (existing) await tx.run(`UPDATE ${tx.t('_bp_functions')} SET code = ?, updated_at = ? WHERE name = ?`, [code, now, name]);
      else await tx.run(`INSERT INTO ${tx.t('_bp_functions')} (name, code, created_at, updated_at) VALUES (?, ?, ?, ?)`, [name, code, now, now]);
      return !existing;
    });
    return { created, fn: await this.get(projectId, name) };
  }

  async remove(projectId: string, name: string): Promise<void> {
    if (!NAME_RE.test(name)) throw notFound('function');
    const db = await this.engine.project(projectId);
    const res = await db.run(`DELETE FROM ${db.t('_bp_functions')} WHERE name = ?`, [name]);
    if (res.changes === 0) throw notFound('function');
  }

  async invoke(projectId: string, name: string, request: FunctionRequest, key: KeyCaller, auth: AuthContext | null): Promise<FunctionResponse> {
    const fn = await this.get(projectId, name);
    const caller: KeyCaller = { keyId: key.keyId, permissions: TABLE_PERMISSIONS };
    const bridge = async (json: string): Promise<string> => JSON.stringify(await this.dbCall(projectId, caller, auth, json));
    try {
      return await this.pool.run(projectId, fn.code, request, auth, bridge);
    } catch (err) {
      if (err instanceof FunctionFailure) {
        const status = err.code === 'function_timeout' ? 504 : 500;
        // (function_response_too_large is a 500 too: the function broke its contract)
        throw new AppError(status, err.code, err.message, err.detail === null ? null : { error: err.detail });
      }
      throw err;
    }
  }

  /** One context.db call: the passthrough with the function's caller, never an exception. */
  private async dbCall(projectId: string, key: KeyCaller, auth: AuthContext | null, json: string): Promise<unknown> {
    let call: { op?: unknown; table?: unknown; query?: unknown; body?: unknown };
    try {
      call = JSON.parse(json);
    } catch {
      return { error: { status: 400, code: 'bad_request', message: 'The call is not JSON.', details: null } };
    }
    const method = typeof call.op === 'string' ? OPS[call.op] : undefined;
    const query = queryOf(call.query);
    if (!method || typeof call.table !== 'string' || query === null)
      return { error: { status: 400, code: 'bad_request', message: 'Use db.select/insert/update/delete(table, ...) with a query object or string.', details: null } };
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
      if (err instanceof AppError) return { error: { status: err.status, code: err.code, message: err.message, details: err.details ?? null } };
      // e.g. the project was deleted meanwhile: the function sees a failed call, the service goes on
      return { error: { status: 500, code: 'internal_error', message: 'The database call failed.', details: null } };
    }
  }
}
