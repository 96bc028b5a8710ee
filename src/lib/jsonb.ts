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
