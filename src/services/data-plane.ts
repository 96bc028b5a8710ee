// Who is calling the data plane (the REST passthrough, a function invocation), in one statement
// per request: the API key, the end user behind the optional token, and the project's schema
// version, read together so that a read costs one round trip before its data statement. None of it
// is cached: a revoked or expired key, a logout, a deleted user or a role change act on the very
// next request, on every node. Only the existence of projects is remembered, and a project deleted
// since (maybe through another node) shows as a missing store on its first statement.
import type { Engine } from '../storage/engine.ts';
import { StoreMissing } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { hashToken, isTokenShaped } from '../lib/tokens.ts';
import { AppError } from '../errors.ts';
import type { ProjectService } from './projects.ts';
import type { KeyCaller, KeyCheck, KeyService } from './keys.ts';
import { authOf, toUser, type AuthContext, type EndUser } from './end-users.ts';

export interface DataPlaneCaller {
  key: KeyCaller;
  user: EndUser | null;
  /** the policies' view of the user (null: anonymous) */
  auth: AuthContext | null;
  /** the project's schema version read with the credentials (project-schema.ts) */
  version: number;
}

interface CallerRow extends Omit<KeyCheck, 'id'> {
  version: number | string;
  key_id: string | null;
  user_id: number | null;
  email: string | null;
  role: string | null;
  email_verified: number | boolean | null;
  created_at: string | null;
}

const KNOWN_PROJECTS = 10000;
// no token hash equals this: an anonymous caller's session join finds nothing
const NO_SESSION = '-';

const invalidKey = () => new AppError('invalid_api_key');

export class DataPlaneService {
  /** projects seen to exist, least recently used first */
  private readonly known = new Map<string, true>();

  constructor(
    private readonly engine: Engine,
    private readonly projects: ProjectService,
    private readonly keys: KeyService,
    private readonly clock: Clock,
  ) {}

  /** The caller of `projectId`, or 401 (no key, or one not valid for this project: also when the project does not exist). */
  async resolve(projectId: string, apiKey: string | undefined, userToken: string | undefined): Promise<DataPlaneCaller> {
    if (apiKey === undefined) throw new AppError('missing_api_key');
    if (!isTokenShaped(apiKey) || !(await this.exists(projectId))) throw invalidKey();
    const now = this.clock.now();
    try {
      const db = await this.engine.project(projectId);
      const session = userToken !== undefined && isTokenShaped(userToken) ? hashToken(userToken) : NO_SESSION;
      const row = (await db.get<CallerRow>(
        `SELECT (SELECT version FROM ${db.t('_bp_meta')} WHERE id = 1) AS version,
           k.id AS key_id, k.permissions, k.expires_at, k.last_used_at,
           u.id AS user_id, u.email, u.role, u.email_verified, u.created_at
         FROM (SELECT 1 AS one) AS x
         LEFT JOIN ${db.t('_bp_keys')} k ON k.key_hash = ?
         LEFT JOIN ${db.t('_bp_user_sessions')} s ON s.token_hash = ? AND s.expires_at > ?
         LEFT JOIN ${db.t('_bp_users')} u ON u.id = s.user_id`,
        [hashToken(apiKey), session, now.toISOString()],
      ))!;
      const key = await this.keys.accept(db, row.key_id === null ? null : { ...row, id: row.key_id }, now);
      const user = row.user_id === null ? null : toUser({ ...row, id: row.user_id, email: row.email!, created_at: row.created_at!, email_verified: row.email_verified! });
      return { key, user, auth: user && authOf(user), version: Number(row.version) };
    } catch (err) {
      if (!(err instanceof StoreMissing)) throw err;
      this.known.delete(projectId);
      throw invalidKey();
    }
  }

  private async exists(projectId: string): Promise<boolean> {
    if (this.known.has(projectId)) return true;
    if (!(await this.projects.find(projectId))) return false;
    this.known.set(projectId, true);
    if (this.known.size > KNOWN_PROJECTS) this.known.delete(this.known.keys().next().value!);
    return true;
  }
}
