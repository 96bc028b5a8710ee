// One bound for LIKE/ILIKE patterns, shared by the REST filters and the policy language. Matching
// costs up to O(value length x pattern length) on PostgreSQL (and in any backtracking matcher), so
// the pattern is what must be bounded: filters refuse a longer pattern with 400 before any work,
// policy literals with 422 at creation, and a computed pattern beyond it matches nothing.
export const LIKE_PATTERN_MAX_CHARS = 256;
