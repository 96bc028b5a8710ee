// A read under a guessed caller (data-plane.ts CallerGuess), in one statement: the guard, which
// checks the credentials and the schema version, and the rows, which are returned only when it
// holds. Both come from one snapshot, so the answer is the one the two statements of the long way
// (credentials, then data) would have given; a guard that fails makes the request take that way.
import type { Db, SqlParam } from '../../storage/engine.ts';
import { StaleGuess, type CallerGuess } from '../data-plane.ts';

/**
 * The rows of `SELECT <columns><rest>` when the guess's guard holds (then `guess.confirmed`), or
 * StaleGuess. `order` (the read's ORDER BY clause, null for at most one row) numbers the rows,
 * since a join need not keep its input's order.
 */
export async function guardedRead(
  db: Db,
  guess: CallerGuess,
  columns: string,
  rest: { sql: string; params: SqlParam[] },
  order: string | null,
): Promise<Record<string, unknown>[]> {
  const numbered = order === null ? `1 AS "#n", ${columns}` : `row_number() OVER (${order.trim()}) AS "#n", ${columns}`;
  const raw = await db.all<Record<string, unknown>>(
    // (LIMIT 1 keeps the planner from pulling the guard up into both its uses, which planned and
    // ran it twice: PostgreSQL's custom plans of the guarded read took a fifth longer)
    `SELECT g."#ok", d.* FROM (SELECT CASE WHEN ${guess.guard.sql} THEN 1 ELSE 0 END AS "#ok" LIMIT 1) AS g` +
      ` LEFT JOIN (SELECT ${numbered}${rest.sql}) AS d ON g."#ok" = 1`,
    [...guess.guard.params, ...rest.params],
  );
  if (raw.length === 0 || Number(raw[0]!['#ok']) !== 1) throw new StaleGuess();
  guess.confirmed = true;
  return raw.filter((r) => r['#n'] !== null).sort((a, b) => Number(a['#n']) - Number(b['#n']));
}
