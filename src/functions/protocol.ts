// Messages between the service and its sandbox processes (pool.ts <-> worker-main.ts).
import type { FunctionRequest, SandboxLimits } from './invocation.ts';

export type ToWorker =
  | { type: 'run'; id: number; code: string; request: FunctionRequest; auth: unknown; limits: SandboxLimits }
  | { type: 'check'; id: number; code: string; limits: SandboxLimits }
  | { type: 'db-reply'; callId: number; json: string };

// `rss`: the process's resident memory when it is ready and after each job, so that the parent can
// retire a process that kept what an invocation grew
export type FromWorker =
  | { type: 'ready'; rss: number }
  | { type: 'memory_exceeded' }
  | { type: 'db'; id: number; callId: number; json: string }
  | { type: 'done'; id: number; rss: number; ok: true; response?: unknown }
  | { type: 'done'; id: number; rss: number; ok: false; failure: { kind: 'failure' | 'invalid'; code?: string; message: string; detail?: string | null } };

/** exit code when the process outgrows its memory budget (memory outside the V8 heap, e.g. WebAssembly) */
export const RSS_EXIT_CODE = 99;
