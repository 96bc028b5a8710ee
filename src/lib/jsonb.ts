// PostgreSQL's jsonb object key order: shorter keys (in UTF-8 bytes) first, then bytewise. SQLite
// stores and renders JSON in this order so that both engines compare and return it alike.
const utf8 = new TextEncoder();

export function jsonbKeyOrder(a: string, b: string): number {
  const ea = utf8.encode(a);
  const eb = utf8.encode(b);
  if (ea.length !== eb.length) return ea.length - eb.length;
  for (let i = 0; i < ea.length; i++) if (ea[i] !== eb[i]) return ea[i]! - eb[i]!;
  return 0;
}

/** Recursive: every json value is checked against MAX_JSON_DEPTH first (a body, checkValue, filter values). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    // null prototype: a `__proto__` key of the value is data like any other key
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort(jsonbKeyOrder)) out[k] = canonical((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/**
 * JSON text in one canonical form: object keys in jsonb order. SQLite stores and compares this
 * text, so equality and the key order of what comes back are the same as PostgreSQL's jsonb.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonical(value));
}
