/**
 * The only error the policy language throws for bad input. `offending` is the exact source text at
 * fault. The language knows no HTTP: the policy service answers it as the table's 422
 * `invalid_expression` (src/error-table.ts), with `offending` and `position` as details.
 */
export class PolicyError extends Error {
  readonly offending: string;
  readonly position: number;

  constructor(message: string, offending: string, position: number) {
    super(message);
    this.name = 'PolicyError';
    this.offending = offending;
    this.position = position;
  }
}

export const MAX_EXPRESSION_LENGTH = 4000;
export const MAX_DEPTH = 64;
/**
 * The longest string a policy computes, in bytes of UTF-8: the longest text a column holds
 * (MAX_TEXT_BYTES). CONCAT, REPLACE, LOWER and UPPER give NULL beyond it, so that no policy can
 * build strings that grow with nesting (REPLACE(REPLACE(s, 'x', s), 'x', s) squares s each level).
 */
export const MAX_STRING_BYTES = 1024 * 1024;
