// What start-up failures (main.ts) and the CLI (src/cli/) say about the database: where it is, and
// never the DATABASE_URL password, which a driver's message could quote.

/** Where the database is, without credentials: what an operator needs to see in a failure. */
export function databaseTarget(url: string | null, dataDir: string): string {
  if (!url) return `the embedded engine in ${dataDir}`;
  try {
    const u = new URL(url);
    return `PostgreSQL at ${u.host}${u.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/** `text` on one line, with the password of `url` (as written and decoded) replaced by `***`. */
export function withoutPassword(text: string, url: string | undefined): string {
  let out = text.replace(/\s+/g, ' ');
  try {
    const password = new URL(url ?? '').password;
    if (password) for (const form of new Set([password, decodeURIComponent(password)])) out = out.split(form).join('***');
  } catch {
    // no URL, nothing to hide
  }
  return out;
}
