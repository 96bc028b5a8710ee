// The email-sending limit of SPEC 8: per project, at most 5 requests per recipient address and 20
// per client IP in any hour; every request counts, registered address or not; a refused request
// does not count. Counted in the project's store so every node shares it; subjects are stored as
// keyed digests; IPv6 clients are counted by their /64 (ipKey).
//
// Counting and recording happen in one transaction that first locks a row per subject (an upsert,
// which PostgreSQL row-locks until commit; SQLite transactions are serial anyway), so concurrent
// requests for one recipient or IP are counted one after another and exactly the limit pass. Locks
// are always taken recipient first, then IP, so two requests cannot wait on each other.
import type { Db } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { SubjectDigest } from '../lib/tokens.ts';
import { ipKey } from '../lib/client-ip.ts';
import { tooManyRequests } from '../errors.ts';

export const EMAIL_WINDOW_MS = 60 * 60 * 1000;
export const PER_RECIPIENT = 5;
export const PER_IP = 20;

export class EmailRateLimit {
  constructor(
    private readonly clock: Clock,
    private readonly digest: SubjectDigest,
    /** told of every request refused with 429 (metrics) */
    private readonly onRefused: () => void = () => undefined,
  ) {}

  async hit(db: Db, recipient: string, ip: string): Promise<void> {
    const now = this.clock.now();
    const since = new Date(now.getTime() - EMAIL_WINDOW_MS).toISOString();
    const table = db.t('_bp_email_requests');
    const checks = [
      { scope: 'recipient', subject: this.digest('recipient', recipient), limit: PER_RECIPIENT },
      { scope: 'ip', subject: this.digest('ip', ipKey(ip)), limit: PER_IP },
    ];
    await db.tx(async (tx) => {
      let retryAfterMs = 0;
      for (const c of checks) {
        await tx.run(`INSERT INTO ${tx.t('_bp_email_limit_locks')} (subject) VALUES (?) ON CONFLICT (subject) DO UPDATE SET subject = excluded.subject`, [c.subject]);
        const r = await tx.get<{ n: number; oldest: string | null }>(`SELECT count(*) AS n, min(at) AS oldest FROM ${table} WHERE scope = ? AND subject = ? AND at > ?`, [c.scope, c.subject, since]);
        if (Number(r?.n ?? 0) >= c.limit) retryAfterMs = Math.max(retryAfterMs, Date.parse(r!.oldest!) + EMAIL_WINDOW_MS - now.getTime());
      }
      if (retryAfterMs > 0) {
        this.onRefused();
        throw tooManyRequests(retryAfterMs / 1000);
      }
      for (const c of checks) {
        // records older than the window are never read again: drop them as we go
        await tx.run(`DELETE FROM ${table} WHERE scope = ? AND subject = ? AND at <= ?`, [c.scope, c.subject, since]);
        await tx.run(`INSERT INTO ${table} (id, scope, subject, at) VALUES (?, ?, ?, ?)`, [newId(), c.scope, c.subject, now.toISOString()]);
      }
    });
  }
}
