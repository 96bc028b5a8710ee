// Lists of projects, keys and policies are shown in creation order (ORDER BY created_at, id). Two
// creations within one millisecond would tie, and the tie would fall to their random ids: the
// second policy created could be listed first. A creation therefore takes a time strictly after
// the latest one in its list: now, or 1 ms past the latest when that is not earlier. Two creations
// requested at the same moment have no order between them: they may read the same latest and
// share a time, and their ids order them.
import type { Db, SqlParam } from '../storage/engine.ts';

/** `latestSql` selects the list's latest creation time as `latest` (NULL for an empty list). */
export async function creationTime(db: Db, now: Date, latestSql: string, params: readonly SqlParam[]): Promise<Date> {
  const latest = (await db.get<{ latest: string | null }>(latestSql, params))?.latest;
  const after = latest == null ? Number.NEGATIVE_INFINITY : Date.parse(latest) + 1;
  return after > now.getTime() ? new Date(after) : now;
}
