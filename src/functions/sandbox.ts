// Runs one edge-function invocation in its own V8 isolate (isolated-vm): no Node.js globals, no
// require or import, no file system, process or network, a heap limit and a time limit. The only
// way out is the `context.db` bridge, which the host checks and runs under the caller's policies.
import ivm from 'isolated-vm';

import { FunctionFailure, FunctionInvalid, RESPONSE_MAX_BYTES, type Bridge, type FunctionRequest, type FunctionResponse, type SandboxLimits } from './invocation.ts';

// Runs before the module, inside an IIFE so that the bridge stays private to it. `__invoke` calls
// the default export and hands back JSON text, so a result that is not JSON data is reported as
// such instead of being confused with an error the function threw.
const PRELUDE = `(() => {
  const bridge = globalThis.__bridge;
  delete globalThis.__bridge;
  const { stringify, parse } = JSON;
  async function call(op, args) {
    const out = parse(await bridge.apply(undefined, [stringify({ op, ...args })], { result: { promise: true } }));
    if (out.error) {
      const e = new Error(out.error.message);
      e.code = out.error.code;
      e.status = out.error.status;
      e.details = out.error.details;
      throw e;
    }
    return out.data;
  }
  const db = Object.freeze({
    select: (table, query) => call('select', { table, query }),
    insert: (table, rows, query) => call('insert', { table, body: rows, query }),
    update: (table, values, query) => call('update', { table, body: values, query }),
    delete: (table, query) => call('delete', { table, query }),
  });
  Object.defineProperty(globalThis, '__invoke', {
    value: async (fn, request, auth) => {
      let value;
      try {
        value = await fn(request, Object.freeze({ auth: auth === null ? null : Object.freeze(auth), db }));
      } catch (e) {
        // read the thrown value here, under the isolate's limits, never in the host
        let message;
        try {
          message = e instanceof Error ? String(e.message) : typeof e === 'string' ? e : String(stringify(e));
        } catch {
          message = 'a value that cannot be printed was thrown';
        }
        return stringify({ kind: 'error', message: message.slice(0, 500) });
      }
      if (value === undefined) return '{"kind":"none"}';
      try {
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
          const keys = Object.keys(value);
          if (keys.includes('body') && keys.every((k) => k === 'status' || k === 'headers' || k === 'body')) {
            const status = value.status === undefined ? 200 : value.status;
            return stringify({ kind: 'response', status: typeof status === 'number' && !Number.isFinite(status) ? null : status, headers: value.headers, hasBody: value.body !== undefined, body: value.body });
          }
        }
        const text = stringify(value);
        return text === undefined ? '{"kind":"invalid","why":"not JSON data"}' : '{"kind":"value","value":' + text + '}';
      } catch (e) {
        let why;
        try { why = String(e && e.message); } catch { why = 'not JSON data'; }
        return stringify({ kind: 'invalid', why: why.slice(0, 200) });
      }
    },
  });
})();`;

// Every project serves from the service's one origin, so a function may only describe its own
// response: its content and how it may be cached. Anything else (cookies, CORS, HSTS,
// Clear-Site-Data, authentication challenges, Refresh, hop-by-hop headers, ...) would act on the
// origin, the connection or other projects, and is dropped. Content-Encoding is not allowed either:
// a body is text the service encodes itself, never compressed, so the header could only mislabel it.
const ALLOWED_HEADERS = new Set(['content-type', 'content-language', 'content-disposition', 'cache-control', 'etag', 'last-modified', 'expires', 'vary']);
// custom x- headers are the function's own, except those the service sets (the request id, nosniff)
// and every header of the families a reverse proxy in front of it obeys: serve a file, an internal
// location or another URL (nginx X-Accel-*, Apache and lighttpd X-Sendfile*, lighttpd
// X-Lighttpd-*, LiteSpeed X-LiteSpeed-*, Perlbal X-Reproxy-*), matched by prefix so that the
// variants of a family (X-Sendfile2, X-Sendfile-Temporary) go too
const RESERVED_X_HEADER = /^x-(request-id$|content-type-options$|accel|sendfile|lighttpd|litespeed|reproxy)/;

function allowedHeader(name: string, status: number): boolean {
  if (name === 'location') return status >= 300 && status <= 399;
  return ALLOWED_HEADERS.has(name) || (name.startsWith('x-') && !RESERVED_X_HEADER.test(name));
}
const HEADER_VALUE_RE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

function invalidResponse(why: string): FunctionFailure {
  return new FunctionFailure('function_invalid_response', 'The function returned something that is not a response.', why);
}

/** `{ status?, headers?, body }` is a response; any other value is a 200 JSON body; nothing is 204. */
export function shapeResponse(value: unknown): FunctionResponse {
  if (value === undefined) return { status: 204, headers: {}, body: undefined };
  const isObj = typeof value === 'object' && value !== null && !Array.isArray(value);
  const keys = isObj ? Object.keys(value) : [];
  if (!isObj || !keys.includes('body') || keys.some((k) => k !== 'status' && k !== 'headers' && k !== 'body')) return { status: 200, headers: {}, body: value };
  const v = value as { status?: unknown; headers?: unknown; body: unknown };
  const status = v.status ?? 200;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) throw invalidResponse('status must be an integer from 200 to 599');
  const headers: Record<string, string> = {};
  if (v.headers !== undefined) {
    if (typeof v.headers !== 'object' || v.headers === null || Array.isArray(v.headers)) throw invalidResponse('headers must be an object of strings');
    for (const [name, val] of Object.entries(v.headers)) {
      if (!TOKEN_RE.test(name) || typeof val !== 'string' || !HEADER_VALUE_RE.test(val) || val.length > 8192) throw invalidResponse(`header '${name.slice(0, 100)}' is not a valid header`);
      const lower = name.toLowerCase();
      if (allowedHeader(lower, status)) headers[lower] = val;
    }
  }
  return { status, headers, body: v.body };
}

/**
 * What went wrong, judged from the sandbox's own state, never from the error text (a function can
 * throw any message): past the deadline is a timeout; an isolate disposed before it is the heap limit.
 */
function classify(err: unknown, timedOut: boolean, disposed: boolean): FunctionFailure {
  if (err instanceof FunctionFailure) return err;
  if (timedOut) return new FunctionFailure('function_timeout', 'The function did not finish in time.');
  if (disposed) return new FunctionFailure('function_out_of_memory', 'The function ran out of memory.');
  const message = err instanceof Error ? err.message : String(err);
  return new FunctionFailure('function_error', 'The function threw an error.', message.slice(0, 500));
}

/** Compiles, links (no imports) and evaluates the module; returns its default-exported function. */
async function load(isolate: ivm.Isolate, context: ivm.Context, code: string, limits: SandboxLimits): Promise<ivm.Reference> {
  let mod: ivm.Module;
  try {
    mod = await isolate.compileModule(code, { filename: 'function.js' });
  } catch (err) {
    throw new FunctionInvalid(`The code does not compile: ${(err as Error).message}`.slice(0, 1000));
  }
  try {
    await mod.instantiate(context, (specifier) => {
      throw new Error(`Imports are not allowed (import '${specifier.slice(0, 100)}').`);
    });
  } catch (err) {
    throw new FunctionInvalid((err as Error).message.slice(0, 1000));
  }
  await mod.evaluate({ timeout: limits.timeoutMs });
  const fn = await mod.namespace.get('default', { reference: true });
  if (fn.typeof !== 'function') throw new FunctionInvalid('The module must export a default function: export default async (request, context) => response.');
  return fn;
}

/** Deploy-time check: compiles, links and evaluates the module and finds its default function. */
export async function checkFunctionCode(code: string, limits: SandboxLimits): Promise<void> {
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
  try {
    await load(isolate, await isolate.createContext(), code, limits);
  } catch (err) {
    if (err instanceof FunctionInvalid) throw err;
    const f = classify(err, false, isolate.isDisposed);
    throw new FunctionInvalid(`The module failed while loading: ${f.detail ?? f.message}`.slice(0, 1000));
  } finally {
    if (!isolate.isDisposed) isolate.dispose();
  }
}

export async function runFunction(code: string, request: FunctionRequest, auth: unknown, bridge: Bridge, limits: SandboxLimits): Promise<FunctionResponse> {
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
  const started = Date.now();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    if (!isolate.isDisposed) isolate.dispose();
  }, limits.timeoutMs);
  const late = () => timedOut || Date.now() - started >= limits.timeoutMs;
  try {
    const context = await isolate.createContext();
    await context.global.set('__bridge', new ivm.Reference(async (json: unknown) => (typeof json === 'string' ? bridge(json) : '{"error":{"status":400,"code":"bad_request","message":"invalid call"}}')));
    await context.eval(PRELUDE, { timeout: limits.timeoutMs });
    const invoke = await context.global.get('__invoke', { reference: true });
    let fn: ivm.Reference;
    try {
      fn = await load(isolate, context, code, limits);
    } catch (err) {
      throw err instanceof FunctionInvalid ? new FunctionFailure('function_error', 'The function cannot be loaded.', err.message.slice(0, 500)) : err;
    }
    const text = await invoke.apply(undefined, [fn.derefInto(), new ivm.ExternalCopy(request).copyInto(), new ivm.ExternalCopy(auth).copyInto()], {
      timeout: limits.timeoutMs,
      result: { promise: true },
    });
    if (timedOut) throw new FunctionFailure('function_timeout', 'The function did not finish in time.');
    const json = String(text);
    if (json.length > RESPONSE_MAX_BYTES) throw new FunctionFailure('function_response_too_large', `The function's response is larger than ${RESPONSE_MAX_BYTES / 1024 / 1024} MiB.`);
    return fromInvoke(JSON.parse(json));
  } catch (err) {
    throw classify(err, late(), isolate.isDisposed);
  } finally {
    clearTimeout(timer);
    if (!isolate.isDisposed) isolate.dispose();
  }
}

type Invoked =
  | { kind: 'none' }
  | { kind: 'error'; message: string }
  | { kind: 'invalid'; why: string }
  | { kind: 'value'; value: unknown }
  | { kind: 'response'; status: unknown; headers: unknown; hasBody: boolean; body: unknown };

function fromInvoke(out: Invoked): FunctionResponse {
  switch (out.kind) {
    case 'none':
      return { status: 204, headers: {}, body: undefined };
    case 'error':
      throw new FunctionFailure('function_error', 'The function threw an error.', out.message.slice(0, 500));
    case 'invalid':
      throw invalidResponse(`the returned value is not JSON data (${out.why.slice(0, 200)})`);
    case 'value':
      return { status: 200, headers: {}, body: out.value };
    case 'response': {
      const shaped = shapeResponse({ status: out.status === null ? 'invalid' : out.status, ...(out.headers === undefined ? {} : { headers: out.headers }), body: null });
      return { ...shaped, body: out.hasBody ? out.body : undefined };
    }
  }
}
