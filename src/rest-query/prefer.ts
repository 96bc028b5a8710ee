// The Prefer header. Unknown or malformed preferences are ignored (PostgREST's lenient default);
// for a repeated preference the first valid occurrence wins.
export interface Prefer {
  return: 'minimal' | 'representation' | 'headers-only' | null;
  count: 'exact' | 'planned' | 'estimated' | null;
  resolution: 'merge-duplicates' | 'ignore-duplicates' | null;
  missing: 'default' | null;
  /** Canonical `key=value` tokens of the recognised preferences, in header order, for Preference-Applied. */
  applied: string[];
}

const ALLOWED: Record<'return' | 'count' | 'resolution' | 'missing', readonly string[]> = {
  return: ['minimal', 'representation', 'headers-only'],
  count: ['exact', 'planned', 'estimated'],
  resolution: ['merge-duplicates', 'ignore-duplicates'],
  missing: ['default'],
};

/** Preferences looked at, across all Prefer headers; the rest are ignored. */
export const MAX_PREFER_TOKENS = 50;

export function parsePrefer(header: string | string[] | undefined): Prefer {
  const out: Prefer = { return: null, count: null, resolution: null, missing: null, applied: [] };
  const headers = header === undefined ? [] : Array.isArray(header) ? header : [header];
  let seen = 0;
  for (const h of headers) {
    if (typeof h !== 'string') continue;
    for (const token of h.split(',')) {
      if (++seen > MAX_PREFER_TOKENS) return out;
      const eq = token.indexOf('=');
      if (eq < 0) continue;
      const key = token.slice(0, eq).trim().toLowerCase();
      const value = token.slice(eq + 1).trim().toLowerCase();
      if (key !== 'return' && key !== 'count' && key !== 'resolution' && key !== 'missing') continue;
      if (out[key] !== null || !ALLOWED[key].includes(value)) continue;
      (out as unknown as Record<string, string>)[key] = value;
      out.applied.push(`${key}=${value}`);
    }
  }
  return out;
}
