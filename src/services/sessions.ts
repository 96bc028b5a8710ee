// Bearer sessions, shared by platform accounts and end users: a fresh 64-hex token, stored as its
// SHA-256 with an expiry, shown to the caller once.
import type { Db } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newToken, hashToken } from '../lib/tokens.ts';

export interface SessionStore {
  table: '_bp_user_sessions' | 'platform_sessions';
  ownerColumn: 'user_id' | 'account_id';
}

export async function issueSession(db: Db, store: SessionStore, ownerId: string | number, clock: Clock, ttlMs: number): Promise<{ token: string; expires_at: string }> {
  const token = newToken();
  const now = clock.now();
  const expires = new Date(now.getTime() + ttlMs).toISOString();
  await db.run(`INSERT INTO ${db.t(store.table)} (token_hash, ${store.ownerColumn}, created_at, expires_at) VALUES (?, ?, ?, ?)`, [
    hashToken(token),
    ownerId,
    now.toISOString(),
    expires,
  ]);
  return { token, expires_at: expires };
}
