// Failed-login throttle (CONTRACT §0): after 10 failures for one email from one IP within 15
// minutes, further attempts get 429 with Retry-After. Counted in the database so every node shares
// it; subjects are stored as digests, never as the raw address pair.
import type { Db } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { subjectDigest } from '../lib/tokens.ts';
import { tooManyRequests } from '../errors.ts';

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;

export class LoginThrottle {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private subject(email: string, ip: string): string {
    return subjectDigest(email, ip);
  }

  /** Throws 429 when the subject is over the limit. */
  async check(scope: string, email: string, ip: string): Promise<void> {
    const now = this.clock.now();
    const since = new Date(now.getTime() - LOGIN_WINDOW_MS).toISOString();
    const rows = await this.db.all<{ at: string }>(
      `SELECT at FROM ${this.db.t('auth_failures')} WHERE scope = ? AND subject = ? AND at > ? ORDER BY at ASC`,
      [scope, this.subject(email, ip), since],
    );
    if (rows.length >= LOGIN_FAILURE_LIMIT) {
      const oldest = new Date(rows[rows.length - LOGIN_FAILURE_LIMIT]!.at).getTime();
      throw tooManyRequests((oldest + LOGIN_WINDOW_MS - now.getTime()) / 1000);
    }
  }

  async fail(scope: string, email: string, ip: string): Promise<void> {
    const now = this.clock.now();
    await this.db.run(`INSERT INTO ${this.db.t('auth_failures')} (scope, subject, at) VALUES (?, ?, ?)`, [
      scope,
      this.subject(email, ip),
      now.toISOString(),
    ]);
    // Opportunistic clean-up keeps the table small without a scheduler.
    if (Math.random() < 0.02) {
      await this.db.run(`DELETE FROM ${this.db.t('auth_failures')} WHERE at < ?`, [
        new Date(now.getTime() - LOGIN_WINDOW_MS).toISOString(),
      ]);
    }
  }
}
