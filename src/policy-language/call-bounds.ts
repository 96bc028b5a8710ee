// Bounds on single calls of the policy functions whose work grows faster than their input, the
// same on both engines and checked before the work starts. A function call is never interrupted
// inside: PostgreSQL checks for cancellation between rows, not inside `strpos` or `@>`, and the
// embedded engine's functions are single SQLite calls. Past a bound the statement fails with a
// coded error: thrown by the embedded engine's function, raised through bp_assert on PostgreSQL.
import { AppError } from '../errors.ts';
import { ContainsTooComplex, CONTAINS_MAX_PRODUCT } from './json-value.ts';

/**
 * LOCATE and REPLACE: the text's length times the searched string's, in characters. PostgreSQL's
 * search (strpos, replace) compares a long near-miss at every position: a 100,000-character one in
 * 1,000,000 characters held a backend 23 s past its statement timeout (a hostile review); at this
 * bound its worst case is about 40 ms (a 100-character string in 1,000,000 characters).
 */
export const SEARCH_MAX_PRODUCT = 100_000_000;

/** A LOCATE or REPLACE past SEARCH_MAX_PRODUCT; `code` survives a worker thread's error message and is bp_assert's failure on PostgreSQL */
export class SearchTooLarge extends Error {
  static readonly CODE = 'BP_SEARCH_TOO_LARGE';
  readonly code = SearchTooLarge.CODE;
  constructor() {
    super(`a text search whose lengths multiply past ${SEARCH_MAX_PRODUCT}`);
  }
}

/** Throws SearchTooLarge when searching `needle` in `text` is past the bound (lengths in code points). */
export function checkSearch(needle: string, text: string): void {
  // UTF-16 lengths are at least the code point counts: most calls need no count
  if (needle.length * text.length <= SEARCH_MAX_PRODUCT) return;
  if (codePoints(needle) * codePoints(text) > SEARCH_MAX_PRODUCT) throw new SearchTooLarge();
}

function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) & 0xfc00) === 0xdc00) n--;
  return n;
}

/** What either engine answers for a call past its bound, by the code it failed with. */
export const CALL_BOUND_FAILURES: Readonly<Record<string, () => AppError>> = {
  [ContainsTooComplex.CODE]: () => new AppError('query_too_complex.json_contains', { max: CONTAINS_MAX_PRODUCT }),
  [SearchTooLarge.CODE]: () => new AppError('query_too_complex.text_search', { max: SEARCH_MAX_PRODUCT }),
};
