// Project API keys (SPEC 4.3, CONTRACT §4): stored as SHA-256 only, looked up in the project's own
// store on every request (no cache), so revocation and expiry act at once on every node.
import { creationTime } from './creation-time.ts';
import type { Db, Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId, isId } from '../lib/ids.ts';
import { newToken, hashToken } from '../lib/tokens.ts';
import { AppError } from '../errors.ts';
import { charLength } from '../lib/validate.ts';
import { parseTimestamp } from '../lib/temporal.ts';

export const PERMISSIONS = ['select', 'insert', 'update', 'delete', 'function'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface ApiKey {
  key_id: string;
  name: string;
  permissions: Permission[];
  expires_at: string | null;
  key_prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/** What the data plane reads of a key to accept it. */
export type KeyCheck = Pick<KeyRow, 'id' | 'permissions' | 'expires_at' | 'last_used_at'>;

export interface KeyCaller {
  keyId: string;
  permissions: ReadonlySet<Permission>;
}

interface KeyRow {
  id: string;
  name: string;
  key_prefix: string;
  permissions: string;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
}

export const LAST_USED_RESOLUTION_MS = 60_000;

function toKey(r: KeyRow): ApiKey {
  return {
    key_id: r.id,
    name: r.name,
    permissions: JSON.parse(r.permissions),
    expires_at: r.expires_at,
    key_prefix: r.key_prefix,
    created_at: r.created_at,
    last_used_at: r.last_used_at,
  };
}

export class KeyService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
  ) {}

  async list(projectId: string): Promise<ApiKey[]> {
    const db = await this.engine.project(projectId);
    const rows = await db.all<KeyRow>(
      `SELECT id, name, key_prefix, permissions, expires_at, created_at, last_used_at FROM ${db.t('_bp_keys')} ORDER BY created_at, id`,
    );
    return rows.map(toKey);
  }

  async create(projectId: string, input: { name: string; permissions: string[]; expires_at?: string | null }): Promise<ApiKey & { key: string }> {
    const name = input.name.trim();
    if (name.length < 1 || charLength(name) > 100) throw new AppError('validation_failed.key_name', { reason: name.length < 1 ? 'empty' : 'too_long' });
    if (input.permissions.length === 0) throw new AppError('validation_failed.no_permission');
    for (const [i, p] of input.permissions.entries()) {
      if (!(PERMISSIONS as readonly string[]).includes(p))
        throw new AppError('validation_failed.unknown_permission', { field: `permissions[${i}]`, permission: String(p).slice(0, 40), allowed: PERMISSIONS });
      if (input.permissions.indexOf(p) !== i) throw new AppError('validation_failed.listed_twice', { field: `permissions[${i}]`, what: 'permission', value: p });
    }
    const now = this.clock.now();
    let expiresAt: string | null = null;
    if (input.expires_at !== undefined && input.expires_at !== null) {
      const iso = parseTimestamp(input.expires_at, { requireZone: true });
      if (iso === null) throw new AppError('validation_failed.expires_at_format');
      const ms = Date.parse(iso);
      if (ms <= now.getTime()) throw new AppError('validation_failed.expires_at_past');
      expiresAt = new Date(ms).toISOString();
    }
    const key = newToken();
    const row: KeyRow = {
      id: newId(),
      name,
      key_prefix: key.slice(0, 8),
      permissions: JSON.stringify(input.permissions),
      expires_at: expiresAt,
      created_at: '',
      last_used_at: null,
    };
    const db = await this.engine.project(projectId);
    row.created_at = (await creationTime(db, now, `SELECT MAX(created_at) AS latest FROM ${db.t('_bp_keys')}`, [])).toISOString();
    await db.run(
      `INSERT INTO ${db.t('_bp_keys')} (id, name, key_hash, key_prefix, permissions, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [row.id, row.name, hashToken(key), row.key_prefix, row.permissions, row.expires_at, row.created_at],
    );
    return { ...toKey(row), key };
  }

  async revoke(projectId: string, keyId: string): Promise<void> {
    if (!isId(keyId)) throw new AppError('not_found', { what: 'key' });
    const db = await this.engine.project(projectId);
    const res = await db.run(`DELETE FROM ${db.t('_bp_keys')} WHERE id = ?`, [keyId]);
    if (res.changes === 0) throw new AppError('not_found', { what: 'key' });
  }

  /**
   * The caller of a key row read by the data plane's one statement (data-plane.ts), or 401 when
   * there is none (unknown, revoked) or it expired. A key's last use is recorded at most once a
   * minute, and never delays or fails the request.
   */
  async accept(db: Db, row: KeyCheck | null, now: Date): Promise<KeyCaller> {
    if (!row || (row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime()))
      throw new AppError('invalid_api_key');
    if (row.last_used_at === null || now.getTime() - Date.parse(row.last_used_at) > LAST_USED_RESOLUTION_MS)
      await db.runBestEffort(`UPDATE ${db.t('_bp_keys')} SET last_used_at = ? WHERE id = ?`, [now.toISOString(), row.id]);
    return { keyId: row.id, permissions: new Set(JSON.parse(row.permissions) as Permission[]) };
  }
}
