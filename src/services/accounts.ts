// Platform accounts and their sessions (SPEC 4.1, CONTRACT §1).
import type { Db, Engine } from '../storage/engine.ts';
import { UniqueViolation } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import type { PasswordHasher } from '../lib/password.ts';
import { newId } from '../lib/ids.ts';
import { hashToken, isTokenShaped } from '../lib/tokens.ts';
import { issueSession } from './sessions.ts';
import { charLength, isEmail, normalizeEmail } from '../lib/validate.ts';
import { AppError } from '../errors.ts';
import type { LoginThrottle } from './login-throttle.ts';
import { OWNERS } from './password-share.ts';

export interface Account {
  id: string;
  name: string;
  email: string;
  created_at: string;
}

export interface Session {
  token: string;
  expires_at: string;
  account: Account;
}

export interface Caller {
  account: Account;
  tokenHash: string;
}

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

export function checkPassword(password: string, field = 'password'): void {
  const length = charLength(password);
  if (length < PASSWORD_MIN) throw new AppError('validation_failed.too_short', { field, what: field, min: PASSWORD_MIN });
  if (length > PASSWORD_MAX) throw new AppError('validation_failed.too_long', { field, what: field, max: PASSWORD_MAX });
}

export function checkEmail(raw: string, field = 'email'): string {
  const email = normalizeEmail(raw);
  if (!isEmail(email)) throw new AppError('validation_failed.invalid_email', { field });
  return email;
}

function checkName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1) throw new AppError('validation_failed.empty', { field: 'name', what: 'name' });
  if (charLength(name) > 100) throw new AppError('validation_failed.too_long', { field: 'name', what: 'name', max: 100 });
  return name;
}

export class AccountService {
  private readonly db: Db;

  constructor(
    private readonly engine: Engine,
    private readonly hasher: PasswordHasher,
    private readonly clock: Clock,
    private readonly throttle: LoginThrottle,
    private readonly tokenTtlMs: number,
  ) {
    this.db = engine.platform;
  }

  private async startSession(db: Db, account: Account): Promise<Session> {
    const s = await issueSession(db, { table: 'platform_sessions', ownerColumn: 'account_id' }, account.id, this.clock, this.tokenTtlMs);
    return { ...s, account };
  }

  async register(input: { name: string; email: string; password: string }): Promise<Session> {
    const name = checkName(input.name);
    const email = checkEmail(input.email);
    checkPassword(input.password);
    const passwordHash = await this.hasher.hash(input.password, OWNERS);
    const now = this.clock.now().toISOString();
    const account: Account = { id: newId(), name, email, created_at: now };
    try {
      return await this.db.tx(async (tx) => {
        await tx.run(
          `INSERT INTO ${tx.t('accounts')} (id, name, email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
          [account.id, name, email, passwordHash, now, now],
        );
        return this.startSession(tx, account);
      });
    } catch (err) {
      if (err instanceof UniqueViolation) throw new AppError('email_taken.account');
      throw err;
    }
  }

  async login(input: { email: string; password: string }, ip: string): Promise<Session> {
    const email = normalizeEmail(input.email);
    const session = await this.throttle.attempt(OWNERS, 'platform', email, ip, async () => {
      const row = await this.db.get<{ id: string; password_hash: string }>(`SELECT id, password_hash FROM ${this.db.t('accounts')} WHERE email = ?`, [email]);
      const ok = await this.hasher.verify(row?.password_hash ?? null, input.password, OWNERS);
      if (!row || !ok) return null;
      return this.db.tx(async (tx) => {
        // The password checked above must still be the account's: a password change that ended
        // every other session while it was checked wins. The row lock orders the two on any node.
        const fresh = await tx.get<Account>(
          `UPDATE ${tx.t('accounts')} SET updated_at = updated_at WHERE id = ? AND password_hash = ? RETURNING id, name, email, created_at`,
          [row.id, row.password_hash],
        );
        return fresh ? this.startSession(tx, toAccount(fresh)) : null;
      });
    });
    if (!session) throw new AppError('invalid_credentials.login');
    return session;
  }

  /** Resolves a bearer token to its account, or throws 401. Checks expiry on every call. */
  async authenticate(token: string | undefined): Promise<Caller> {
    if (!token || !isTokenShaped(token)) throw new AppError('invalid_token.credential');
    const tokenHash = hashToken(token);
    const row = await this.db.get<Account>(
      `SELECT a.id, a.name, a.email, a.created_at FROM ${this.db.t('platform_sessions')} s
       JOIN ${this.db.t('accounts')} a ON a.id = s.account_id
       WHERE s.token_hash = ? AND s.expires_at > ?`,
      [tokenHash, this.clock.now().toISOString()],
    );
    if (!row) throw new AppError('invalid_token.credential');
    return { account: toAccount(row), tokenHash };
  }

  async logout(caller: Caller): Promise<void> {
    await this.db.run(`DELETE FROM ${this.db.t('platform_sessions')} WHERE token_hash = ?`, [caller.tokenHash]);
  }

  /**
   * Changing the email or password re-checks the password (`current_password`). That check is
   * throttled like a login, per account and client IP, in its own scope ('platform-reauth'): a
   * stolen session must not become an unlimited password oracle.
   */
  async update(
    caller: Caller,
    input: { name?: string; email?: string; password?: string; current_password?: string },
    ip: string,
  ): Promise<Account> {
    const name = input.name !== undefined ? checkName(input.name) : undefined;
    const email = input.email !== undefined ? checkEmail(input.email) : undefined;
    if (input.password !== undefined) checkPassword(input.password);
    const sensitive = (email !== undefined && email !== caller.account.email) || input.password !== undefined;
    if (sensitive) {
      if (input.current_password === undefined)
        throw new AppError('validation_failed.current_password');
      const current = input.current_password;
      const proven = await this.throttle.attempt(OWNERS, 'platform-reauth', caller.account.id, ip, async () => {
        const row = await this.db.get<{ password_hash: string }>(`SELECT password_hash FROM ${this.db.t('accounts')} WHERE id = ?`, [caller.account.id]);
        return row && (await this.hasher.verify(row.password_hash, current, OWNERS)) ? true : null;
      });
      if (!proven) throw new AppError('invalid_credentials.current_password');
    }
    const passwordHash = input.password !== undefined ? await this.hasher.hash(input.password, OWNERS) : undefined;
    const now = this.clock.now().toISOString();
    try {
      await this.db.tx(async (tx) => {
        const sets: string[] = ['updated_at = ?'];
        const params: string[] = [now];
        if (name !== undefined) (sets.push('name = ?'), params.push(name));
        if (email !== undefined) (sets.push('email = ?'), params.push(email));
        if (passwordHash !== undefined) (sets.push('password_hash = ?'), params.push(passwordHash));
        await tx.run(`UPDATE ${tx.t('accounts')} SET ${sets.join(', ')} WHERE id = ?`, [...params, caller.account.id]);
        if (passwordHash !== undefined) {
          await tx.run(`DELETE FROM ${tx.t('platform_sessions')} WHERE account_id = ? AND token_hash <> ?`, [
            caller.account.id,
            caller.tokenHash,
          ]);
        }
      });
    } catch (err) {
      if (err instanceof UniqueViolation) throw new AppError('email_taken.account');
      throw err;
    }
    const row = await this.db.get<Account>(`SELECT id, name, email, created_at FROM ${this.db.t('accounts')} WHERE id = ?`, [
      caller.account.id,
    ]);
    return toAccount(row!);
  }

  /**
   * Deletes the account, its sessions, its projects and every project's store: the stores first, so
   * that a drop that fails (a time-out) leaves the account to delete again, never a store that
   * nodes which remember its project would go on serving.
   */
  async remove(caller: Caller): Promise<void> {
    const projects = await this.db.all<{ id: string }>(`SELECT id FROM ${this.db.t('projects')} WHERE owner_id = ?`, [caller.account.id]);
    for (const p of projects) await this.engine.dropProjectStore(p.id);
    await this.db.run(`DELETE FROM ${this.db.t('accounts')} WHERE id = ?`, [caller.account.id]);
  }
}

function toAccount(row: Account): Account {
  return { id: row.id, name: row.name, email: row.email, created_at: row.created_at };
}
