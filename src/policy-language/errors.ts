/** The only error the policy language throws for bad input. `offending` is the exact source text at fault. */
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
