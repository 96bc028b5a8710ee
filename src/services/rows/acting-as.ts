// Whom the project's owner acts as on its row routes and in the policy simulator (CONTRACT §10):
// itself (`owner`: every row, no policy), an anonymous passthrough caller (`anonymous`), or one end
// user of the project (`end_user:{id}`, read now, so a role change shows at once).
import type { Db } from '../../storage/engine.ts';
import { AppError } from '../../errors.ts';
import { authOf, type AuthContext, type EndUserService } from '../end-users.ts';
import type { RowCaller } from './rows.ts';

export type ActingAs = { kind: 'owner' } | { kind: 'anonymous' } | { kind: 'end_user'; id: number };

const END_USER = /^end_user:([1-9][0-9]{0,15})$/;

/** `owner` is refused where it means nothing (the simulator: the owner passes no policy). */
export function parseActingAs(text: string, allowOwner: boolean): ActingAs {
  const allowed = `${allowOwner ? 'owner, ' : ''}anonymous or end_user:{id}`;
  if (text === 'anonymous') return { kind: 'anonymous' };
  if (text === 'owner') {
    if (allowOwner) return { kind: 'owner' };
    throw new AppError('validation_failed.acting_as', { allowed, reason: 'not_allowed' });
  }
  const m = END_USER.exec(text);
  if (m && Number.isSafeInteger(Number(m[1]))) return { kind: 'end_user', id: Number(m[1]) };
  throw new AppError('validation_failed.acting_as', { allowed, reason: 'invalid_format' });
}

/**
 * The `as` query parameter of the owner's row routes, taken out of the query: it is reserved there,
 * as `select` and `order` are on the passthrough (a column named `as` is filtered with
 * `and=(as.eq.x)`). Absent: `owner`.
 */
export function takeActingAs(query: URLSearchParams): ActingAs {
  const given = query.getAll('as');
  query.delete('as');
  if (given.length > 1) throw new AppError('validation_failed.acting_as', { allowed: 'given once', reason: 'repeated' });
  return parseActingAs(given[0] ?? 'owner', true);
}

export function actingAsText(as: ActingAs): string {
  return as.kind === 'end_user' ? `end_user:${as.id}` : as.kind;
}

/** The policies' view of the caller: null for the owner and anonymous callers; an end user of this project's store as it is now, or 404. */
export async function authOfActingAs(db: Db, endUsers: EndUserService, as: ActingAs): Promise<AuthContext | null> {
  return as.kind === 'end_user' ? authOf(await endUsers.get(db, as.id)) : null;
}

/** The RowService caller of the owner acting as `as`: every table permission; the policies unless acting as itself. */
export function rowCallerOf(as: ActingAs, auth: AuthContext | null): RowCaller {
  return as.kind === 'owner' ? { kind: 'owner', policies: false, auth: null } : { kind: 'owner', policies: true, auth };
}
