// The Prefer header. Unknown or malformed preferences are ignored (PostgREST's lenient default)
// unless the header asks for `handling=strict`: then the caller learns of each one it cannot have
// (`rejected`). For a repeated preference the first valid occurrence wins.
export interface Prefer {
  return: 'minimal' | 'representation' | 'headers-only' | null;
  count: 'exact' | 'planned' | 'estimated' | null;
  resolution: 'merge-duplicates' | 'ignore-duplicates' | null;
  missing: 'default' | null;
  handling: 'strict' | 'lenient' | null;
  /** `tx=rollback`: the write runs and answers, and is rolled back (a dry run) */
  tx: 'commit' | 'rollback' | null;
  /** at most this many rows written, else the write fails (applied under handling=strict, as PostgREST) */
  maxAffected: number | null;
  /** Canonical `key=value` tokens of the recognised preferences, in header order, for Preference-Applied. */
  applied: string[];
  /** The tokens that were not recognised, or repeated, as written (trimmed). */
  rejected: string[];
}

type Keyword = 'return' | 'count' | 'resolution' | 'missing' | 'handling' | 'tx';

const ALLOWED: Record<Keyword, readonly string[]> = {
  return: ['minimal', 'representation', 'headers-only'],
  count: ['exact', 'planned', 'estimated'],
  resolution: ['merge-duplicates', 'ignore-duplicates'],
  missing: ['default'],
  handling: ['strict', 'lenient'],
  tx: ['commit', 'rollback'],
};

const isKeyword = (key: string): key is Keyword => Object.hasOwn(ALLOWED, key);

/** Preferences looked at, across all Prefer headers; the rest are ignored. */
export const MAX_PREFER_TOKENS = 50;

export function parsePrefer(header: string | string[] | undefined): Prefer {
  const out: Prefer = { return: null, count: null, resolution: null, missing: null, handling: null, tx: null, maxAffected: null, applied: [], rejected: [] };
  const headers = header === undefined ? [] : Array.isArray(header) ? header : [header];
  let seen = 0;
  for (const h of headers) {
    if (typeof h !== 'string') continue;
    for (const raw of h.split(',')) {
      const token = raw.trim();
      if (token === '') continue;
      if (++seen > MAX_PREFER_TOKENS) return out;
      if (!take(out, token)) out.rejected.push(token.slice(0, 100));
    }
  }
  return out;
}

/** Records one `key=value` token; false when it is not a preference this service honours. */
function take(out: Prefer, token: string): boolean {
  const eq = token.indexOf('=');
  if (eq < 0) return false;
  const key = token.slice(0, eq).trim().toLowerCase();
  const value = token.slice(eq + 1).trim().toLowerCase();
  if (key === 'max-affected') {
    if (out.maxAffected !== null || !/^\d{1,15}$/.test(value)) return false;
    out.maxAffected = Number(value);
    return true;
  }
  if (!isKeyword(key) || out[key] !== null || !ALLOWED[key].includes(value)) return false;
  (out as unknown as Record<string, string>)[key] = value;
  out.applied.push(`${key}=${value}`);
  return true;
}
