// Password hashing (argon2id) runs on libuv's thread pool: four threads by default, which the whole
// process shares (the log's file writes too). Anyone who knows a project's id may make it hash:
// sign-ups and logins need no key. So every hash and check holds a slot of a fair gate keyed by
// project (owners' accounts have a key of their own): a flood of sign-ups or logins against one
// project waits on that project's share, or is refused 503 project_busy, instead of queueing every
// other project's logins behind it, and one thread of the pool stays free for file I/O.
import { AppError } from '../errors.ts';
import type { PasswordHasher } from '../lib/password.ts';
import { FairGate, type GateStats } from '../storage/fair-gate.ts';

/** The tenant of the owners' accounts (a project id has no space). */
export const OWNERS = ' owners';

/** A hash waits at most this long for a slot: a login is a person waiting at a form. */
const MAX_WAIT_MS = 10_000;

export interface SharedHasher extends PasswordHasher {
  stats(): GateStats;
}

export function sharedHasher(inner: PasswordHasher, concurrency: number): SharedHasher {
  const gate = new FairGate({
    capacity: concurrency,
    perKey: Math.ceil(concurrency / 2),
    maxWaitMs: MAX_WAIT_MS,
    busy: (tenant) => new AppError(tenant === OWNERS ? 'project_busy.owner_passwords' : 'project_busy.passwords'),
  });
  return {
    hash: (password, tenant) => gate.run(tenant, () => inner.hash(password, tenant)),
    verify: (stored, password, tenant) => gate.run(tenant, () => inner.verify(stored, password, tenant)),
    stats: () => gate.stats(),
  };
}
