// How much of a write's result is held in memory. A PATCH or DELETE may touch millions of rows: its
// RETURNING rows are counted where they are read (the statement checks them itself:
// Dialect.assertTrue), and only those it may return are kept. What a write returns is bounded too, in values (rows × returned columns).
import type { Db, RowTally, SqlParam } from '../../storage/engine.ts';
import { AppError } from '../../errors.ts';

/** The most values (rows × returned columns) a write's representation holds. */
export const MAX_RETURNED_CELLS = 1_000_000;

/** How many rows of `columns` columns a representation may hold. */
export const maxShownRows = (columns: number): number => Math.floor(MAX_RETURNED_CELLS / Math.max(1, columns));

export const tooManyRows = (rows: number, columns: number) => new AppError('too_many_rows', { rows, columns, max_values: MAX_RETURNED_CELLS });

/**
 * Runs a write whose RETURNING list starts with `"id" AS "#id"`: the first `keep` rows, and how many
 * rows it returned. The SQLite worker reads the rows
 * one at a time (Db.tally); on PostgreSQL a data-modifying CTE runs to completion however little of
 * it is read, so the aggregates see every row while LIMIT keeps pg from receiving more than `keep`.
 */
export async function tally(tx: Db, sql: string, params: readonly SqlParam[], keep: number): Promise<RowTally> {
  if (tx.tally) return tx.tally(sql, params, keep);
  const rows = await tx.all<Record<string, unknown>>(
    `WITH "#w" AS (${sql}) SELECT "#r".*, "#a"."#count"` +
      ` FROM (SELECT count(*) AS "#count" FROM "#w") AS "#a" LEFT JOIN (SELECT * FROM "#w" LIMIT ?) AS "#r" ON TRUE`,
    [...params, keep],
  );
  // one row even when nothing was kept: the count beside a row of NULLs
  const first = rows[0]!;
  return { rows: rows.filter((r) => r['#id'] !== null), count: Number(first['#count']) };
}
