// Small value checks shared by services (pure functions, no framework).

// A pragmatic address check: one @, a dot-separated domain, no spaces or control characters.
const EMAIL_RE = /^[^\s@"<>()\\,;:\x00-\x1f]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export function normalizeEmail(value: string): string {
  return value.trim().toLowerCase();
}

export function isEmail(value: string): boolean {
  return value.length <= 254 && EMAIL_RE.test(value);
}

/** Length in characters (code points), as users count them, not UTF-16 units. */
export function charLength(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

export const NAME_RE = /^[a-z_][a-z0-9_]{0,62}$/;
