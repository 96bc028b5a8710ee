// Single-use, purpose-scoped email tokens (SPEC 2 "Tokens", 8): 64 hex characters from the CSPRNG,
// stored as SHA-256 with the purpose and an expiry, at most one per user and purpose. Consuming is
// one DELETE ... RETURNING, so of any number of concurrent uses exactly one gets the row.
import type { Db } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { hashToken, isTokenShaped, newToken } from '../lib/tokens.ts';
import type { EndUser } from './end-users.ts';

export type Purpose = 'magic_link' | 'password_reset' | 'email_verification' | 'email_change';

const MINUTE = 60 * 1000;
export const PURPOSE_TTL_MS: Record<Purpose, number> = {
  magic_link: 15 * MINUTE,
  password_reset: 30 * MINUTE,
  email_change: 30 * MINUTE,
  email_verification: 24 * 60 * MINUTE,
};

export class PurposeTokens {
  constructor(
    private readonly clock: Clock,
    /** EndUserService.lock: locks the user row, answers the user as it is now (undefined: gone) */
    private readonly lockUser: (db: Db, userId: number) => Promise<EndUser | undefined>,
  ) {}

  /**
   * A new token for the user, replacing any unused token of the same purpose (at most one lives per
   * user and purpose), if the user still exists and `guard`, given the user as it is under its row
   * lock, says so; null otherwise. The user row is locked before the tokens are touched (the lock
   * order of end-users.ts), so concurrent issues of one user queue and the last one's token lives.
   */
  async issue(db: Db, userId: number, purpose: Purpose, newEmail: string | null, guard: (tx: Db, user: EndUser) => Promise<boolean> | boolean): Promise<string | null> {
    const token = newToken();
    const now = this.clock.now();
    const table = db.t('_bp_email_tokens');
    const issued = await db.tx(async (tx) => {
      const user = await this.lockUser(tx, userId);
      if (!user || !(await guard(tx, user))) return false;
      await tx.run(`DELETE FROM ${table} WHERE user_id = ? AND purpose = ?`, [userId, purpose]);
      await tx.run(`INSERT INTO ${table} (token_hash, purpose, user_id, new_email, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`, [
        hashToken(token),
        purpose,
        userId,
        newEmail,
        now.toISOString(),
        new Date(now.getTime() + PURPOSE_TTL_MS[purpose]).toISOString(),
      ]);
      return true;
    });
    return issued ? token : null;
  }

  /** The user of a currently valid token of the purpose, or null (a look: consume decides). */
  async holder(db: Db, token: string, purpose: Purpose): Promise<number | null> {
    if (!isTokenShaped(token)) return null;
    const row = await db.get<{ user_id: number }>(`SELECT user_id FROM ${db.t('_bp_email_tokens')} WHERE token_hash = ? AND purpose = ? AND expires_at > ?`, [
      hashToken(token),
      purpose,
      this.clock.now().toISOString(),
    ]);
    return row ? Number(row.user_id) : null;
  }

  /** The token's user (and new email), once; null when unknown, used, expired or of another purpose. */
  async consume(db: Db, token: string, purpose: Purpose): Promise<{ userId: number; newEmail: string | null } | null> {
    if (!isTokenShaped(token)) return null;
    const row = await db.get<{ user_id: number; new_email: string | null }>(
      `DELETE FROM ${db.t('_bp_email_tokens')} WHERE token_hash = ? AND purpose = ? AND expires_at > ? RETURNING user_id, new_email`,
      [hashToken(token), purpose, this.clock.now().toISOString()],
    );
    return row ? { userId: Number(row.user_id), newEmail: row.new_email } : null;
  }
}
