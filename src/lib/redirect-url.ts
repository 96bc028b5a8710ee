// Redirect URLs of the email flows (SPEC 4.6 "redirect_url rules"). Everything is compared after
// WHATWG URL parsing, so `..`, `%2e%2e`, backslashes, default ports and host case are normalised
// before any rule applies, exactly as the browser that follows the link will see them.

export const URL_MAX = 2048;

export type UrlProblem = 'not_a_url' | 'not_http' | 'credentials' | 'too_long' | 'query_or_fragment';

/** An absolute http(s) URL without user info, or the reason it is not one. */
export function parseHttpUrl(text: string, opts: { allowQuery: boolean }): URL | UrlProblem {
  if (text.length > URL_MAX) return 'too_long';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'not_a_url';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'not_http';
  if (url.username !== '' || url.password !== '') return 'credentials';
  if (!opts.allowQuery && (url.search !== '' || url.hash !== '')) return 'query_or_fragment';
  if (url.href.length > URL_MAX) return 'too_long';
  return url;
}

/**
 * Same scheme, host and port, and a path equal to the entry's or below it on a segment boundary:
 * `/app` admits `/app`, `/app/` and `/app/x`, never `/application`. No wildcards.
 */
export function matchesEntry(requested: URL, entry: URL): boolean {
  if (requested.protocol !== entry.protocol || requested.hostname !== entry.hostname || requested.port !== entry.port) return false;
  const base = entry.pathname;
  const path = requested.pathname;
  if (path === base) return true;
  const prefix = base.endsWith('/') ? base : `${base}/`;
  return path.startsWith(prefix);
}

/** The link an email carries: the redirect URL with `token` set in its query (other parameters kept). */
export function linkWithToken(redirect: string, token: string): string {
  const url = new URL(redirect);
  url.searchParams.set('token', token);
  return url.href;
}
