// The pg driver, loaded without loading Node's fetch implementation on the way. On Node 20, which
// has no `navigator` global, pg tells a Cloudflare Worker from Node by constructing a `Response`,
// and that first use of the global loads undici (its HTTP parser, compiled to WebAssembly, and
// the whole of fetch): measured, 1.8 MiB of an idle service's memory, for a fetch the engine never
// makes. While pg's module runs, `Response` is hidden, so pg finds no Cloudflare runtime, as it
// does on Node 21 and later through `navigator.userAgent`; the global is back before anything else runs.
import { createRequire } from 'node:module';
import type Pg from 'pg';

export type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';

function loadPg(): typeof Pg {
  const response = Object.getOwnPropertyDescriptor(globalThis, 'Response');
  const hide = response?.configurable === true;
  if (hide) delete (globalThis as { Response?: unknown }).Response;
  try {
    return createRequire(import.meta.url)('pg') as typeof Pg;
  } finally {
    if (hide) Object.defineProperty(globalThis, 'Response', response);
  }
}

export const pg = loadPg();
