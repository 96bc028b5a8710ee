// Failed-login throttle (CONTRACT §0): after 10 failures for one email from one IP within 15
// minutes, further attempts get 429 with Retry-After; successful calls never count. Counted in the
// platform database so every node shares it; subjects are stored as keyed digests, never as the
// raw address pair. IPv6 clients are counted by their /64 (ipKey, as the email rate limit does).
//
// An attempt is counted before its password is checked, in one transaction that first locks a row
// per subject (an upsert, which PostgreSQL row-locks until commit; SQLite transactions are serial
// anyway), so of any number of concurrent attempts, on any number of nodes, only as many are
// evaluated as the limit has room for. While its password is checked the attempt is pending; a
// wrong password settles it as a failure, any other outcome (success, 403, an error) removes it.
// A pending attempt whose process died is never removed: it counts as a failure for its window, and
// once older than PENDING_BOUND_MS it is taken for one when telling the client how long to wait.
import type { Db } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { SubjectDigest } from '../lib/tokens.ts';
import { ipKey } from '../lib/client-ip.ts';
import { tooManyRequests } from '../errors.ts';

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/**
 * Longer than any password check: an attempt pending for longer belongs to a process that died. A
 * check may wait for its project's share of the database twice (a statement's wait is bounded by
 * STATEMENT_TIMEOUT_MS, 30 s by default) and for the password share (10 s).
 */
export const PENDING_BOUND_MS = 2 * 60 * 1000;

export class LoginThrottle {
  constructor(
    /**
     * The platform store. An attempt is counted under its tenant's share (`share`, Engine.platformFor):
     * counting is where a flood of attempts first touches the database. Settling it, which only an
     * attempt counted already does, is not: a successful login refused there would leave a session
     * nobody received and a pending attempt counted as a failure.
     */
    private readonly db: Db,
    private readonly share: (tenant: string) => Db,
    private readonly clock: Clock,
    private readonly digest: SubjectDigest,
    /** told of every attempt refused with 429 (metrics) */
    private readonly onRefused: () => void = () => undefined,
  ) {}

  /**
   * Runs `evaluate` as one counted attempt of `who` (an email, an account id) from `ip`, or throws
   * 429 when that subject has no room left in `scope`. `evaluate` answers null for wrong credentials
   * (the attempt then stays counted as a failure) or the result of a success (the attempt is
   * removed); an error it throws removes the attempt too. `tenant`: whose share counting takes (a
   * project's id, or the owners').
   */
  async attempt<T>(tenant: string, scope: string, who: string, ip: string, evaluate: () => Promise<T | null>): Promise<T | null> {
    const id = await this.count(this.share(tenant), scope, this.digest(who, ipKey(ip)));
    let result: T | null;
    try {
      result = await evaluate();
    } catch (err) {
      // the evaluation's error is the one to report; an attempt left behind only counts as a failure
      await this.remove(id).catch(() => undefined);
      throw err;
    }
    if (result === null) {
      await this.db.run(`UPDATE ${this.db.t('auth_failures')} SET pending = ? WHERE id = ?`, [false, id]);
    } else {
      await this.remove(id);
    }
    return result;
  }

  /** Records a pending attempt and returns its id, or throws 429 (nothing recorded). */
  private async count(db: Db, scope: string, subject: string): Promise<string> {
    const now = this.clock.now();
    const since = new Date(now.getTime() - LOGIN_WINDOW_MS).toISOString();
    const id = newId();
    await db.tx(async (tx) => {
      await tx.run(
        `INSERT INTO ${tx.t('auth_throttle_locks')} (scope, subject, at) VALUES (?, ?, ?) ON CONFLICT (scope, subject) DO UPDATE SET at = excluded.at`,
        [scope, subject, now.toISOString()],
      );
      // at most LOGIN_FAILURE_LIMIT rows: nothing is recorded once the window is full
      const rows = await tx.all<{ at: string; pending: number | boolean }>(
        `SELECT at, pending FROM ${tx.t('auth_failures')} WHERE scope = ? AND subject = ? AND at > ? ORDER BY at ASC`,
        [scope, subject, since],
      );
      if (rows.length >= LOGIN_FAILURE_LIMIT) {
        const abandoned = now.getTime() - PENDING_BOUND_MS;
        const failures = rows.filter((r) => (r.pending !== true && r.pending !== 1) || Date.parse(r.at) <= abandoned);
        // full of failures (settled, or left pending by a dead process): room comes when the oldest
        // that keeps it full leaves the window; otherwise attempts still being checked may succeed
        // (and be removed) any moment
        const retryMs = failures.length >= LOGIN_FAILURE_LIMIT ? Date.parse(failures[failures.length - LOGIN_FAILURE_LIMIT]!.at) + LOGIN_WINDOW_MS - now.getTime() : 1000;
        this.onRefused();
        throw tooManyRequests(retryMs / 1000);
      }
      await tx.run(`INSERT INTO ${tx.t('auth_failures')} (id, scope, subject, at, pending) VALUES (?, ?, ?, ?, ?)`, [id, scope, subject, now.toISOString(), true]);
    });
    // Opportunistic clean-up keeps both tables small without a scheduler; a lock row in use has a
    // recent `at`, so it is never taken away from a waiting attempt.
    if (Math.random() < 0.02) {
      for (const table of ['auth_failures', 'auth_throttle_locks']) await this.db.run(`DELETE FROM ${this.db.t(table)} WHERE at <= ?`, [since]);
    }
    return id;
  }

  private async remove(id: string): Promise<void> {
    await this.db.run(`DELETE FROM ${this.db.t('auth_failures')} WHERE id = ?`, [id]);
  }
}
