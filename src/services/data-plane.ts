// Who is calling the data plane (the REST passthrough, a function invocation), in one statement
// per request: the API key, the end user behind the optional token, and the project's schema
// version, read together so that a read costs one round trip before its data statement. None of it
// is trusted from memory: a revoked or expired key, a logout, a deleted user or a role change act on
// the very next request, on every node. What is remembered is only a guess (CallerGuess): the caller
// the same credentials resolved to last time, which a read may assume provided that its own
// statement checks it (the guard) and is run again the long way when the check fails. Where the
// store can say cheaply whether anything changed in it (Db.stamp: the embedded engine, one node),
// a caller is remembered with the store's stamp and used again while the stamp is the same and
// no time bound (the key's or the session's expiry, the key's last use) has passed. The existence
// of projects is remembered too, and a project deleted since (maybe through another node) shows as a
// missing store on its first statement.
import type { Db, Engine, SqlParam } from '../storage/engine.ts';
import { StoreMissing } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { hashToken, isTokenShaped } from '../lib/tokens.ts';
import { AppError } from '../errors.ts';
import type { ProjectService } from './projects.ts';
import { LAST_USED_RESOLUTION_MS, type KeyCaller, type KeyCheck, type KeyService } from './keys.ts';
import { authOf, toUser, type AuthContext, type EndUser } from './end-users.ts';
import { CallerMemory } from './caller-memory.ts';

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
  session_expires_at: string | null;
}

/**
 * The caller some credentials resolved to, and the SQL condition (over the project's store, in the
 * same statement as the data it guards) that holds exactly when resolving them now would give the
 * same caller at the same schema version, with nothing to write (the key's last use is recent).
 * `confirmed` is set by whoever ran the guard and saw it hold.
 */
export interface CallerGuess {
  caller: DataPlaneCaller;
  guard: { sql: string; params: SqlParam[] };
  confirmed: boolean;
}

/** A guard that did not hold: the request is answered the long way (resolve, then the data). */
export class StaleGuess extends Error {}

/** What a guess remembers: the caller, and the rows it was read from. */
interface Resolved {
  caller: DataPlaneCaller;
  keyId: string;
  permissions: string;
  /** the guard's SQL (guardSql), written once: a repeated read only binds its values */
  guardSql: string;
}

/** A caller read under a store's stamp (Db.stamp), good while the stamp is the same until `until` (ms). */
interface Stamped {
  caller: DataPlaneCaller;
  stamp: string;
  until: number;
}

// the form the service writes times in (toISOString): compared as text, as the caller statement
// compares a session's expiry, such times order as the instants they name
const CANONICAL_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * Until when the caller read from `row` stays what the same row gives, the store unchanged: the
 * key's and the session's expiry, and the key's last use, written again once it is older than
 * LAST_USED_RESOLUTION_MS (keys.ts accept; that write changes the stamp). A session expiry in
 * another form (written from outside the service) is compared as text by the statement, which
 * an instant cannot follow: such a caller is not used from memory.
 */
function stampedUntil(row: CallerRow): number {
  const lastUse = row.last_used_at === null ? Number.NEGATIVE_INFINITY : Date.parse(row.last_used_at) + LAST_USED_RESOLUTION_MS;
  const keyExpiry = row.expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.expires_at);
  const session = row.session_expires_at;
  const sessionExpiry = session === null ? Number.POSITIVE_INFINITY : CANONICAL_TIME.test(session) ? Date.parse(session) : Number.NEGATIVE_INFINITY;
  return Math.min(lastUse, keyExpiry, sessionExpiry);
}

/**
 * The condition that holds when resolving the same credentials now would give `caller` at the
 * same schema version with nothing to write; its values are bound by `guess`, in this order.
 */
function guardSql(db: Db, user: AuthContext | null): string {
  const sql = [
    `(SELECT version FROM ${db.t('_bp_meta')} WHERE id = 1) = ?`,
    `EXISTS (SELECT 1 FROM ${db.t('_bp_keys')} k WHERE k.key_hash = ? AND k.id = ? AND k.permissions = ?
       AND (k.expires_at IS NULL OR k.expires_at > ?) AND k.last_used_at >= ?)`,
  ];
  // the session and its user as two conditions, not a join: the same test (the user's id is known),
  // and cheaper to plan (PostgreSQL's log, 300 projects: 0.35-0.39 ms of planning an unprepared read
  // against 0.41-0.62)
  if (user)
    sql.push(
      `EXISTS (SELECT 1 FROM ${db.t('_bp_user_sessions')} s WHERE s.token_hash = ? AND s.expires_at > ? AND s.user_id = ?)`,
      `EXISTS (SELECT 1 FROM ${db.t('_bp_users')} u WHERE u.id = ? AND u.email = ? AND ${user.role === null ? 'u.role IS NULL' : 'u.role = ?'}
       AND CASE WHEN u.email_verified THEN 1 ELSE 0 END = ?)`,
    );
  return sql.join(' AND ');
}

const GUESSES = 10000;
/** one project's part of GUESSES (a hostile one cycling credentials evicts only its own) */
const GUESSES_PER_PROJECT = 1000;
// no token hash equals this: an anonymous caller's session look-up finds nothing
const NO_SESSION = '-';

const sessionOf = (userToken: string | undefined) => (userToken !== undefined && isTokenShaped(userToken) ? hashToken(userToken) : NO_SESSION);
const credentialsKey = (c: { keyHash: string; session: string }) => `${c.keyHash} ${c.session}`;

const invalidKey = () => new AppError('invalid_api_key');

export class DataPlaneService {
  /** the last caller of each credentials (project, key hash, session hash) */
  private readonly guesses = new CallerMemory<Resolved>(GUESSES, GUESSES_PER_PROJECT);
  private readonly guessing: boolean;
  /** the last caller of each credentials, under the stamp of the store it was read from */
  private readonly stamped = new CallerMemory<Stamped>(GUESSES, GUESSES_PER_PROJECT);

  constructor(
    private readonly engine: Engine,
    private readonly projects: ProjectService,
    private readonly keys: KeyService,
    private readonly clock: Clock,
    /** GUESSED_READS (config.ts) */
    guessing = false,
  ) {
    // in-process statements save no round trip: the embedded engine resolves the long way, and
    // remembers nothing to guess from (a guarded read there crowded its per-project budget under
    // load, 503 project_busy, and cost 650-770 us of CPU a read against 500 the long way)
    this.guessing = guessing && engine.dialect.remote;
  }

  /** The caller of `projectId`, or 401 (no key, or one not valid for this project: also when the project does not exist). */
  async resolve(projectId: string, apiKey: string | undefined, userToken: string | undefined): Promise<DataPlaneCaller> {
    if (apiKey === undefined) throw new AppError('missing_api_key');
    if (!isTokenShaped(apiKey) || !(await this.projects.exists(projectId))) throw invalidKey();
    const now = this.clock.now();
    const credentials = { keyHash: hashToken(apiKey), session: sessionOf(userToken) };
    try {
      const db = await this.engine.callers(projectId);
      // read at once before the caller, whose statement then starts in the same step (no other
      // request can close the connection in between); a change committed after the stamp makes
      // the next one differ
      const stamp = db.stamp?.() ?? null;
      const held = stamp === null ? undefined : this.stamped.get(projectId, credentialsKey(credentials));
      if (held && held.stamp === stamp && now.getTime() < held.until) return held.caller;
      const row = (await db.get<CallerRow>(
        `SELECT (SELECT version FROM ${db.t('_bp_meta')} WHERE id = 1) AS version,
           k.id AS key_id, k.permissions, k.expires_at, k.last_used_at,
           u.id AS user_id, u.email, u.role, u.email_verified, u.created_at, s.expires_at AS session_expires_at
         FROM (SELECT 1 AS one) AS x
         LEFT JOIN ${db.t('_bp_keys')} k ON k.key_hash = ?
         LEFT JOIN ${db.t('_bp_user_sessions')} s ON s.token_hash = ? AND s.expires_at > ?
         LEFT JOIN ${db.t('_bp_users')} u ON u.id = s.user_id`,
        [credentials.keyHash, credentials.session, now.toISOString()],
      ))!;
      const key = await this.keys.accept(db, row.key_id === null ? null : { ...row, id: row.key_id }, now);
      const user = row.user_id === null ? null : toUser({ ...row, id: row.user_id, email: row.email!, created_at: row.created_at!, email_verified: row.email_verified! });
      const caller = { key, user, auth: user && authOf(user), version: Number(row.version) };
      // a token that names no session is not remembered: its guard would have to prove an absence
      const remembered = credentials.session === NO_SESSION || user !== null;
      if (remembered && stamp !== null) this.stamped.set(projectId, credentialsKey(credentials), { caller, stamp, until: stampedUntil(row) });
      if (remembered && this.guessing)
        this.guesses.set(projectId, credentialsKey(credentials), { caller, keyId: row.key_id!, permissions: row.permissions, guardSql: guardSql(db, caller.auth) });
      return caller;
    } catch (err) {
      if (!(err instanceof StoreMissing)) throw err;
      this.projects.forget(projectId);
      throw invalidKey();
    }
  }

  /** The caller these credentials resolved to last time, with the guard that checks it now; null: none remembered. */
  async guess(projectId: string, apiKey: string | undefined, userToken: string | undefined): Promise<CallerGuess | null> {
    if (!this.guessing || apiKey === undefined || !isTokenShaped(apiKey)) return null;
    const credentials = { keyHash: hashToken(apiKey), session: sessionOf(userToken) };
    const seen = this.guesses.get(projectId, credentialsKey(credentials));
    if (!seen) return null;
    // (a project deleted since shows as a missing store on the guarded statement: the long way answers)
    const now = this.clock.now().toISOString();
    const { caller } = seen;
    const params: SqlParam[] = [caller.version, credentials.keyHash, seen.keyId, seen.permissions, now, new Date(Date.parse(now) - LAST_USED_RESOLUTION_MS).toISOString()];
    const user = caller.auth;
    if (user) params.push(credentials.session, now, user.id, user.id, user.email, ...(user.role === null ? [] : [user.role]), user.email_verified ? 1 : 0);
    return { caller, guard: { sql: seen.guardSql, params }, confirmed: false };
  }

}
