// What the host and the sandbox processes share about an invocation: its request and response,
// its limits and how it fails. Apart from sandbox.ts so that the service process, which only
// forwards invocations, never loads isolated-vm (it would need --no-node-snapshot, which costs the
// service its start-up snapshot).

export type FailureCode = 'function_error' | 'function_timeout' | 'function_out_of_memory' | 'function_invalid_response' | 'function_response_too_large';

/** the largest response a function may return (its JSON text) */
export const RESPONSE_MAX_BYTES = 4 * 1024 * 1024;

/** An invocation that did not produce a response. */
export class FunctionFailure extends Error {
  constructor(
    readonly code: FailureCode,
    message: string,
    readonly detail: string | null = null,
  ) {
    super(message);
  }
}

/** Code that cannot be deployed: a syntax error, an import, no default-exported function. */
export class FunctionInvalid extends Error {}

export interface SandboxLimits {
  memoryMb: number;
  /** wall-clock budget for the whole invocation, including time spent awaiting the database */
  timeoutMs: number;
}

export interface FunctionRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body: unknown;
}

export interface FunctionResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The host side of context.db: JSON text in, JSON text out. */
export type Bridge = (requestJson: string) => Promise<string>;
