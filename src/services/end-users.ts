// End users of a project (SPEC 4.6 without email, 4.7; CONTRACT §6): accounts and sessions in the
// project's own store; tokens stored as SHA-256; role and email read at request time.
import type { Db, Engine, SqlParam } from '../storage/engine.ts';
import { UniqueViolation } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import type { PasswordHasher } from '../lib/password.ts';
import { hashToken, isTokenShaped } from '../lib/tokens.ts';
import { issueSession } from './sessions.ts';
import { charLength, normalizeEmail } from '../lib/validate.ts';
import { AppError, conflict, invalid, notFound, unauthorized } from '../errors.ts';
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
  password_hash?: string;
}

const USER_COLUMNS = 'id, email, role, email_verified, created_at';

export function toUser(r: UserRow): EndUser {
  return { id: Number(r.id), email: r.email, role: r.role, email_verified: r.email_verified === true || r.email_verified === 1, created_at: r.created_at };
}

export const ROLE_MAX = 100;

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
    const hash = await this.hasher.hash(input.password);
    const db = await this.engine.project(projectId);
    const now = this.clock.now().toISOString();
    try {
      return await db.tx(async (tx) => {
        const row = await tx.get<UserRow>(
          `INSERT INTO ${tx.t('_bp_users')} (email, password_hash, role, email_verified, created_at, updated_at) VALUES (?, ?, NULL, ?, ?, ?) RETURNING ${USER_COLUMNS}`,
          [email, hash, false, now, now],
        );
        const user = toUser(row!);
        return opts.session ? this.startSession(tx, user) : user;
      });
    } catch (err) {
      if (err instanceof UniqueViolation) throw conflict('email_taken', 'A user with this email already exists.', { field: 'email' });
      throw err;
    }
  }

  async login(projectId: string, input: { email: string; password: string }, ip: string): Promise<EndUserSession> {
    const email = normalizeEmail(input.email);
    const db = await this.engine.project(projectId);
    const session = await this.throttle.attempt(`project:${projectId}`, email, ip, async () => {
      const row = await db.get<UserRow>(`SELECT ${USER_COLUMNS}, password_hash FROM ${db.t('_bp_users')} WHERE email = ?`, [email]);
      const ok = await this.hasher.verify(row?.password_hash ?? null, input.password);
      if (!row || !ok) return null;
      const user = toUser(row);
      // only a caller who knows the password learns that the address is unverified
      if (!user.email_verified && (await this.requiresConfirmation(projectId)))
        throw new AppError(403, 'email_not_verified', 'The email address must be verified before logging in.', null, 'Use the link in the verification email, or request a new one with POST /{project_id}/auth/verify/resend.');
      return this.startSession(db, user);
    });
    if (!session) throw new AppError(401, 'invalid_credentials', 'The email or password is wrong.');
    return session;
  }

  /** The end user behind a token, or null (missing, malformed, unknown, expired: anonymous). */
  async resolve(projectId: string, token: string | undefined): Promise<{ user: EndUser; tokenHash: string } | null> {
    if (!token || !isTokenShaped(token)) return null;
    const db = await this.engine.project(projectId);
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
    if (!found) throw unauthorized('invalid_user_token', 'A valid end-user token is required (X-User-Token).');
    return found;
  }

  async logout(projectId: string, tokenHash: string): Promise<void> {
    const db = await this.engine.project(projectId);
    await db.run(`DELETE FROM ${db.t('_bp_user_sessions')} WHERE token_hash = ?`, [tokenHash]);
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
   * Applies what an email flow proved, inside its transaction: the address verified (`verify`), a
   * new password (every session ends) or a new email. A new password or email also voids the
   * user's other outstanding email tokens: a link sent before the change must not undo it.
   */
  async applyProof(db: Db, userId: number, change: { verify?: boolean; passwordHash?: string; email?: string }): Promise<EndUser> {
    const sets = ['updated_at = ?'];
    const params: SqlParam[] = [this.clock.now().toISOString()];
    if (change.verify) sets.push('email_verified = ?'), params.push(true);
    if (change.passwordHash !== undefined) sets.push('password_hash = ?'), params.push(change.passwordHash);
    if (change.email !== undefined) sets.push('email = ?'), params.push(change.email);
    try {
      await db.run(`UPDATE ${db.t('_bp_users')} SET ${sets.join(', ')} WHERE id = ?`, [...params, userId]);
    } catch (err) {
      if (err instanceof UniqueViolation) throw conflict('email_taken', 'A user with this email already exists.', { field: 'email' });
      throw err;
    }
    if (change.passwordHash !== undefined) await db.run(`DELETE FROM ${db.t('_bp_user_sessions')} WHERE user_id = ?`, [userId]);
    if (change.passwordHash !== undefined || change.email !== undefined) await db.run(`DELETE FROM ${db.t('_bp_email_tokens')} WHERE user_id = ?`, [userId]);
    return this.get(db, userId);
  }

  private async get(db: Db, userId: number): Promise<EndUser> {
    const row = await db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM ${db.t('_bp_users')} WHERE id = ?`, [userId]);
    if (!row) throw notFound('end user');
    return toUser(row);
  }

  async setRole(projectId: string, userId: number, role: string | null): Promise<EndUser> {
    if (role !== null) {
      if (role.length < 1 || charLength(role) > ROLE_MAX) throw invalid('role', role.length < 1 ? 'empty' : 'too_long', `A role has 1 to ${ROLE_MAX} characters, or is null.`);
      if (/[\u0000-\u001f]/.test(role)) throw invalid('role', 'invalid_format', 'A role must not contain control characters.');
    }
    const db = await this.engine.project(projectId);
    const res = await db.run(`UPDATE ${db.t('_bp_users')} SET role = ?, updated_at = ? WHERE id = ?`, [role, this.clock.now().toISOString(), userId]);
    if (res.changes === 0) throw notFound('end user');
    return this.get(db, userId);
  }

  async remove(projectId: string, userId: number): Promise<void> {
    const db = await this.engine.project(projectId);
    const res = await db.tx(async (tx) => {
      await tx.run(`DELETE FROM ${tx.t('_bp_user_sessions')} WHERE user_id = ?`, [userId]);
      return tx.run(`DELETE FROM ${tx.t('_bp_users')} WHERE id = ?`, [userId]);
    });
    if (res.changes === 0) throw notFound('end user');
  }
}
