// End users of a project (SPEC 4.6 without email, 4.7; CONTRACT §6): accounts and sessions in the
// project's own store; tokens stored as SHA-256; role, email and verification read at request time.
//
// Lock order: a flow that touches a user's sessions or email tokens locks the user row first
// (`lock`), so concurrent flows of one user queue on it and never deadlock. That includes flows that
// only insert one: on PostgreSQL the new row's foreign-key check locks the user row too (KEY SHARE),
// after whatever token or session rows the flow has locked by then.
import type { Db, Engine } from '../storage/engine.ts';
import { UniqueViolation } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import type { PasswordHasher } from '../lib/password.ts';
import { hashToken, isTokenShaped } from '../lib/tokens.ts';
import { issueSession } from './sessions.ts';
import { charLength, normalizeEmail } from '../lib/validate.ts';
import { AppError } from '../errors.ts';
import { checkEmail, checkPassword } from './accounts.ts';
import type { LoginThrottle } from './login-throttle.ts';

export interface EndUser {
  id: number;
  email: string;
  role: string | null;
  email_verified: boolean;
  created_at: string;
}

/** The caller as the policy language sees it. */
export interface AuthContext {
  id: number;
  email: string;
  role: string | null;
  /** whether the address was proven through a link sent to it; `$auth.email` alone is only a claim */
  email_verified: boolean;
}

/** The policy-language caller of a resolved end user. */
export function authOf(user: EndUser): AuthContext {
  return { id: user.id, email: user.email, role: user.role, email_verified: user.email_verified };
}

export interface EndUserSession {
  token: string;
  expires_at: string;
  user: EndUser;
}

interface UserRow {
  id: number;
  email: string;
  role: string | null;
  email_verified: number | boolean;
  created_at: string;
}

const USER_COLUMNS = 'id, email, role, email_verified, created_at';

/**
 * The stored password of a user whose password was voided (see `applyProof`), like a locked
 * password in /etc/shadow: no argon2 output starts with `!`, so nothing verifies against it, and
 * only a new password (a reset) replaces it.
 */
const VOID_PASSWORD = '!void';

/**
 * What an email flow proved, applied by `applyProof`. `confirmsPassword`: the project requires
 * email confirmation, where an unverified account cannot log in (SPEC 4.6: login is 403 until
 * verify/confirm has succeeded), so the link confirms the registration, password included.
 */
export type Proof =
  /** a sign-in link sent to the address: proves the address, and nothing else about the account */
  | { kind: 'magic_link' }
  /** the link of a registration or verify/resend */
  | { kind: 'verification'; confirmsPassword: boolean }
  /** a link sent to the new address of an email change requested through a session */
  | { kind: 'email_change'; email: string; confirmsPassword: boolean }
  /** a reset link sent to the address: the new password was chosen by whoever holds it */
  | { kind: 'password_reset'; passwordHash: string };

export function toUser(r: UserRow): EndUser {
  return { id: Number(r.id), email: r.email, role: r.role, email_verified: r.email_verified === true || r.email_verified === 1, created_at: r.created_at };
}

export const ROLE_MAX = 100;
/** How long after a sign-in a session may set a new password without the current one. */
export const REAUTH_WINDOW_MS = 15 * 60 * 1000;

export class EndUserService {
  constructor(
    private readonly engine: Engine,
    private readonly hasher: PasswordHasher,
    private readonly clock: Clock,
    private readonly throttle: LoginThrottle,
    private readonly tokenTtlMs: number,
    /** whether the project requires a verified email before login (its email configuration) */
    private readonly requiresConfirmation: (projectId: string) => Promise<boolean> = async () => false,
  ) {}

  async startSession(db: Db, user: EndUser): Promise<EndUserSession> {
    const s = await issueSession(db, { table: '_bp_user_sessions', ownerColumn: 'user_id' }, user.id, this.clock, this.tokenTtlMs);
    return { ...s, user };
  }

  /** A new end user with a session, or without one (`session: false`, when confirmation is required). */
  async register(projectId: string, input: { email: string; password: string }): Promise<EndUserSession>;
  async register(projectId: string, input: { email: string; password: string }, opts: { session: false }): Promise<EndUser>;
  async register(projectId: string, input: { email: string; password: string }, opts: { session: boolean } = { session: true }): Promise<EndUserSession | EndUser> {
    const email = checkEmail(input.email);
    checkPassword(input.password);
    const hash = await this.hasher.hash(input.password, projectId);
    const db = await this.engine.callers(projectId);
    const now = this.clock.now().toISOString();
    try {
      return await db.tx(async (tx) => {
        // a taken address is found before the INSERT, which on PostgreSQL would spend an id even
        // when refused: the next user's id is the same on both engines (a race still spends one)
        if (await tx.get(`SELECT 1 AS taken FROM ${tx.t('_bp_users')} WHERE email = ?`, [email])) throw new AppError('email_taken.user');
        const row = await tx.get<UserRow>(
          `INSERT INTO ${tx.t('_bp_users')} (email, password_hash, role, email_verified, created_at, updated_at) VALUES (?, ?, NULL, ?, ?, ?) RETURNING ${USER_COLUMNS}`,
          [email, hash, false, now, now],
        );
        const user = toUser(row!);
        return opts.session ? this.startSession(tx, user) : user;
      });
    } catch (err) {
      if (err instanceof UniqueViolation) throw new AppError('email_taken.user');
      throw err;
    }
  }

  async login(projectId: string, input: { email: string; password: string }, ip: string): Promise<EndUserSession> {
    const email = normalizeEmail(input.email);
    const db = await this.engine.callers(projectId);
    // read before the attempt is counted: a project deleted since a node found it fails here (404),
    // before its throttle writes anything; the check below re-reads what it relies on
    const row = await db.get<UserRow & { password_hash: string }>(`SELECT ${USER_COLUMNS}, password_hash FROM ${db.t('_bp_users')} WHERE email = ?`, [email]);
    const session = await this.throttle.attempt(projectId, `project:${projectId}`, email, ip, async () => {
      // a voided password is checked like an unknown address: against the dummy hash, at the same cost
      const stored = row && row.password_hash !== VOID_PASSWORD ? row.password_hash : null;
      if (!(await this.hasher.verify(stored, input.password, projectId)) || !row) return null;
      // only a caller who knows the password learns that the address is unverified
      const mustConfirm = !toUser(row).email_verified && (await this.requiresConfirmation(projectId));
      return db.tx(async (tx) => {
        // The password checked above must still be the user's: a verification that voided it, or a
        // reset that replaced it, while it was checked wins. The row lock orders the two on any node.
        const fresh = await tx.get<UserRow>(
          `UPDATE ${tx.t('_bp_users')} SET updated_at = updated_at WHERE id = ? AND password_hash = ? RETURNING ${USER_COLUMNS}`,
          [row.id, row.password_hash],
        );
        if (!fresh) return null;
        const user = toUser(fresh);
        if (mustConfirm && !user.email_verified)
          throw new AppError('email_not_verified');
        return this.startSession(tx, user);
      });
    });
    if (!session) throw new AppError('invalid_credentials.login');
    return session;
  }

  /**
   * The end user behind a token, or null (missing, malformed, unknown, expired: anonymous). Under
   * the project's share (Engine.callers): anyone who knows the project's id may send tokens.
   */
  async resolve(projectId: string, token: string | undefined): Promise<{ user: EndUser; tokenHash: string } | null> {
    if (!token || !isTokenShaped(token)) return null;
    const db = await this.engine.callers(projectId);
    const tokenHash = hashToken(token);
    const row = await db.get<UserRow>(
      `SELECT u.id, u.email, u.role, u.email_verified, u.created_at FROM ${db.t('_bp_user_sessions')} s
       JOIN ${db.t('_bp_users')} u ON u.id = s.user_id WHERE s.token_hash = ? AND s.expires_at > ?`,
      [tokenHash, this.clock.now().toISOString()],
    );
    return row ? { user: toUser(row), tokenHash } : null;
  }

  /** Like resolve, for endpoints that need a logged-in user: 401 otherwise. */
  async require(projectId: string, token: string | undefined): Promise<{ user: EndUser; tokenHash: string }> {
    const found = await this.resolve(projectId, token);
    if (!found) throw new AppError('invalid_user_token');
    return found;
  }

  async logout(projectId: string, tokenHash: string): Promise<void> {
    const db = await this.engine.callers(projectId);
    await db.run(`DELETE FROM ${db.t('_bp_user_sessions')} WHERE token_hash = ?`, [tokenHash]);
  }

  /**
   * Ends sessions of the user behind `tokenHash` (supabase-js signOut scopes): `local` this one,
   * `others` every other one, `global` all of them. The user row is locked first (lock order).
   */
  async endSessions(projectId: string, userId: number, tokenHash: string, scope: 'local' | 'global' | 'others'): Promise<void> {
    if (scope === 'local') return this.logout(projectId, tokenHash);
    const db = await this.engine.callers(projectId);
    await db.tx(async (tx) => {
      await this.lock(tx, userId);
      if (scope === 'global') await tx.run(`DELETE FROM ${tx.t('_bp_user_sessions')} WHERE user_id = ?`, [userId]);
      else await tx.run(`DELETE FROM ${tx.t('_bp_user_sessions')} WHERE user_id = ? AND token_hash <> ?`, [userId, tokenHash]);
    });
  }

  /**
   * A new password set through a session (supabase-js updateUser). Without `current_password` only
   * a recent sign-in may do it (a session younger than REAUTH_WINDOW_MS: the password, a magic link
   * or a recovery link was just used); otherwise the current password is checked, throttled like a
   * login per user and client. Ends the user's other sessions and voids pending email links (as a
   * reset does); the password stays unproven for an unverified address (see applyProof).
   */
  async changePassword(
    projectId: string,
    session: { user: EndUser; tokenHash: string },
    input: { password: string; current_password?: string },
    ip: string,
  ): Promise<EndUser> {
    checkPassword(input.password);
    const db = await this.engine.callers(projectId);
    const userId = session.user.id;
    let checked: string | null = null;
    if (input.current_password === undefined) {
      const s = await db.get<{ created_at: string }>(`SELECT created_at FROM ${db.t('_bp_user_sessions')} WHERE token_hash = ?`, [session.tokenHash]);
      if (!s || this.clock.now().getTime() - Date.parse(s.created_at) > REAUTH_WINDOW_MS)
        throw new AppError('reauthentication_needed');
    } else {
      const current = input.current_password;
      checked = await this.throttle.attempt(projectId, `project-reauth:${projectId}`, String(userId), ip, async () => {
        const row = await db.get<{ password_hash: string }>(`SELECT password_hash FROM ${db.t('_bp_users')} WHERE id = ?`, [userId]);
        const stored = row && row.password_hash !== VOID_PASSWORD ? row.password_hash : null;
        return stored !== null && (await this.hasher.verify(stored, current, projectId)) ? stored : null;
      });
      if (checked === null) throw new AppError('invalid_credentials.current_password');
    }
    const hash = await this.hasher.hash(input.password, projectId);
    return db.tx(async (tx) => {
      const user = await this.lock(tx, userId);
      if (!user || !(await this.holdsSession(tx, userId, session.tokenHash))) throw new AppError('invalid_user_token.ended');
      // a checked password must still be the stored one: a reset or verification meanwhile wins
      const res = await tx.run(`UPDATE ${tx.t('_bp_users')} SET password_hash = ?, updated_at = ? WHERE id = ?${checked === null ? '' : ' AND password_hash = ?'}`, [
        hash,
        this.clock.now().toISOString(),
        userId,
        ...(checked === null ? [] : [checked]),
      ]);
      if (res.changes !== 1) throw new AppError('invalid_credentials.current_password');
      await tx.run(`DELETE FROM ${tx.t('_bp_user_sessions')} WHERE user_id = ? AND token_hash <> ?`, [userId, session.tokenHash]);
      await tx.run(`DELETE FROM ${tx.t('_bp_email_tokens')} WHERE user_id = ?`, [userId]);
      return user;
    });
  }

  async list(projectId: string, q: { limit: number; offset: number; email?: string }): Promise<EndUser[]> {
    const db = await this.engine.project(projectId);
    const params: (string | number)[] = [];
    let where = '';
    if (q.email !== undefined && q.email !== '') {
      // contains-match on the stored lower-case address; wildcards in the filter are literal
      where = `WHERE email LIKE ? ESCAPE '\\'`;
      params.push(`%${normalizeEmail(q.email).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    }
    const rows = await db.all<UserRow>(
      `SELECT ${USER_COLUMNS} FROM ${db.t('_bp_users')} ${where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      [...params, q.limit, q.offset],
    );
    return rows.map(toUser);
  }

  /** The user with this (normalised) email, or undefined. */
  async findByEmail(db: Db, email: string): Promise<EndUser | undefined> {
    const row = await db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM ${db.t('_bp_users')} WHERE email = ?`, [email]);
    return row ? toUser(row) : undefined;
  }

  /**
   * Locks the user's row until the transaction ends (see the lock order at the top) and returns the
   * user as it is now, or undefined when there is no such user (any more).
   */
  async lock(db: Db, userId: number): Promise<EndUser | undefined> {
    const row = await db.get<UserRow>(`UPDATE ${db.t('_bp_users')} SET updated_at = updated_at WHERE id = ? RETURNING ${USER_COLUMNS}`, [userId]);
    return row ? toUser(row) : undefined;
  }

  /**
   * Whether the session (by token hash) is still the user's; the caller holds the user's lock, so a
   * session ended by a flow that committed meanwhile is seen as ended and nothing it asked for
   * outlives it.
   */
  async holdsSession(db: Db, userId: number, tokenHash: string): Promise<boolean> {
    const row = await db.get(`SELECT 1 AS one FROM ${db.t('_bp_user_sessions')} WHERE token_hash = ? AND user_id = ? AND expires_at > ?`, [
      tokenHash,
      userId,
      this.clock.now().toISOString(),
    ]);
    return row !== undefined;
  }

  /**
   * Applies what an email flow proved, inside its transaction (the user row already locked).
   *
   * The address's first verification (false to true, through any link) ends every session opened
   * before it and voids the user's other email tokens: until then anyone could have registered the
   * address, so nothing from before may outlive the proof (CONTRACT §10). For the same reason it
   * voids the password, unless a reset link set it (whoever chose it held the address) or the link
   * confirms it (`confirmsPassword`, SPEC 4.6). Already verified accounts keep everything. A reset
   * sets the password, ends every session and voids the other tokens; an email change voids the
   * other tokens (a link sent before it must not undo it).
   */
  async applyProof(db: Db, userId: number, proof: Proof): Promise<EndUser> {
    const users = db.t('_bp_users');
    const now = this.clock.now().toISOString();
    let endSessions = false;
    let voidTokens = false;
    if (proof.kind === 'password_reset') {
      await db.run(`UPDATE ${users} SET password_hash = ?, password_proven = ?, updated_at = ? WHERE id = ?`, [proof.passwordHash, true, now, userId]);
      endSessions = voidTokens = true;
    } else {
      if (proof.kind === 'email_change') {
        try {
          await db.run(`UPDATE ${users} SET email = ?, updated_at = ? WHERE id = ?`, [proof.email, now, userId]);
        } catch (err) {
          if (err instanceof UniqueViolation) throw new AppError('email_taken.user');
          throw err;
        }
        voidTokens = true;
      }
      // conditional, so that of concurrent proofs exactly one sees the first verification
      const first = (await db.run(`UPDATE ${users} SET email_verified = ?, updated_at = ? WHERE id = ? AND email_verified = ?`, [true, now, userId, false])).changes === 1;
      if (first) {
        endSessions = voidTokens = true;
        if (proof.kind === 'magic_link' || !proof.confirmsPassword) await db.run(`UPDATE ${users} SET password_hash = ? WHERE id = ? AND password_proven = ?`, [VOID_PASSWORD, userId, false]);
      }
    }
    if (endSessions) await db.run(`DELETE FROM ${db.t('_bp_user_sessions')} WHERE user_id = ?`, [userId]);
    if (voidTokens) await db.run(`DELETE FROM ${db.t('_bp_email_tokens')} WHERE user_id = ?`, [userId]);
    return this.get(db, userId);
  }

  /** The user as it is now, or 404. */
  async get(db: Db, userId: number): Promise<EndUser> {
    const row = await db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM ${db.t('_bp_users')} WHERE id = ?`, [userId]);
    if (!row) throw new AppError('not_found', { what: 'end user' });
    return toUser(row);
  }

  async setRole(projectId: string, userId: number, role: string | null): Promise<EndUser> {
    if (role !== null) {
      if (role.length < 1 || charLength(role) > ROLE_MAX) throw new AppError('validation_failed.role_length', { reason: role.length < 1 ? 'empty' : 'too_long', max: ROLE_MAX });
      if (/[\u0000-\u001f]/.test(role)) throw new AppError('validation_failed.role_control');
    }
    const db = await this.engine.project(projectId);
    const res = await db.run(`UPDATE ${db.t('_bp_users')} SET role = ?, updated_at = ? WHERE id = ?`, [role, this.clock.now().toISOString(), userId]);
    if (res.changes === 0) throw new AppError('not_found', { what: 'end user' });
    return this.get(db, userId);
  }

  async remove(projectId: string, userId: number): Promise<void> {
    const db = await this.engine.project(projectId);
    const res = await db.tx(async (tx) => {
      await this.lock(tx, userId);
      await tx.run(`DELETE FROM ${tx.t('_bp_user_sessions')} WHERE user_id = ?`, [userId]);
      return tx.run(`DELETE FROM ${tx.t('_bp_users')} WHERE id = ?`, [userId]);
    });
    if (res.changes === 0) throw new AppError('not_found', { what: 'end user' });
  }
}
