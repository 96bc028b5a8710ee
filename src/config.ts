// Typed configuration, read from an environment object once, validated and frozen.
// Only main.ts passes process.env here; tests build their own Config.
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  bodyLimitBytes: number;
  maxRows: number;
  /** MAX_RESULT_BYTES: the most a statement over a project's tables hands back (storage/result-budget.ts) */
  maxResultBytes: number;
  /** PROJECT_MAX_BYTES: the storage one project's store may take */
  projectMaxBytes: number;
  /** GUESSED_READS: repeated reads on PostgreSQL run as one guarded statement (services/data-plane.ts; on by default) */
  guessedReads: boolean;
  logLevel: string;
  /** false, a number of trusted proxy hops, or a list of trusted proxy addresses/CIDRs (Fastify's trustProxy) */
  trustProxy: boolean | number | string[];
  /**
   * ARGON2_MEMORY_KIB, ARGON2_TIME_COST: the cost of a password hash. PASSWORD_HASH_CONCURRENCY:
   * hashes and checks running at once, shared fairly among projects (services/password-share.ts);
   * default: libuv's thread pool (UV_THREADPOOL_SIZE, 4) less one thread kept for file I/O.
   */
  argon2: { memoryCost: number; timeCost: number; concurrency: number };
  tokenTtlMs: number;
  /** PostgreSQL statement_timeout for every statement (0: none) */
  statementTimeoutMs: number;
  /** PostgreSQL connection pool: size, and the client-side bounds on every wait for the database */
  postgres: {
    poolSize: number;
    /** PG_CONNECT_TIMEOUT_MS: a connection attempt, and the wait for a free pooled connection; also bounds /health */
    connectTimeoutMs: number;
    /**
     * PG_QUERY_TIMEOUT_MS: a statement without an answer (a partition, a hung server) fails after this,
     * and the server ends a session idle in a transaction as long (0: neither)
     */
    queryTimeoutMs: number;
    /** PG_KEEPALIVE_MS: idle time before TCP keep-alive probes start on a connection */
    keepAliveMs: number;
  };
  /** SQLITE_WORKERS: worker threads that run statements over project tables (embedded engine) */
  sqliteWorkers: number;
  /** SQLITE_WORKER_IDLE_MS: the workers exit after this long without a statement, and start again on the next (0: never) */
  sqliteWorkerIdleMs: number;
  /**
   * SQLITE_OPEN_PROJECTS: project files the embedded engine keeps open (a file beyond it is closed and
   * reopened on its next request); null: 1024, or fewer when the process may not open enough files
   * (storage/sqlite/sqlite-open-limit.ts, which also refuses a value beyond them)
   */
  sqliteOpenProjects: number | null;
  /**
   * PROJECT_CONCURRENCY: statements over its tables one project may run at once, a share of the
   * engine's capacity (SQLite: workers; PostgreSQL: the pool less 2 connections kept for the
   * platform's own queries); null: half of that capacity, rounded up
   */
  projectConcurrency: number | null;
  /** the service's own application URL: email links point here when a project has no site URL */
  appUrl: string;
  email: {
    /** EMAIL_ALLOW_PRIVATE_HOSTS: loopback/private SMTP hosts allowed (development and tests only: unsafe) */
    allowPrivateHosts: boolean;
    /** the emailapi provider's base URL; POST {base}/emails */
    apiBaseUrl: string;
    timeoutMs: number;
    /** SMTP_CA_FILE: extra CA certificates (PEM path) trusted for SMTP TLS, e.g. a private relay's CA */
    caFile: string | null;
  };
  functions: {
    memoryMb: number;
    timeoutMs: number;
    concurrency: number;
    /** invocations of one project running at once (its fair share of `concurrency`) */
    projectConcurrency: number;
    /** a sandbox process whose resident memory grew by more than this is replaced after its invocation */
    recycleGrowthMb: number;
    /** an idle sandbox process unused this long is stopped (one is kept) */
    idleMs: number;
    /** niceness the sandbox processes get on top of the service's own (capped at 19) */
    niceness: number;
  };
  /** MASTER_KEY as given (parsed and checked by loadMasterKey) */
  masterKey: string | undefined;
  metrics: {
    /** METRICS: GET /metrics is served and the service counts what it reports (off: neither) */
    enabled: boolean;
    /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>` */
    token: string | null;
  };
  /**
   * CORS_ORIGINS: the origins (scheme://host[:port]) whose pages may call the control plane
   * (/auth, /projects); `*` for any. The data plane allows any origin whatever this says.
   */
  corsOrigins: readonly string[];
  /** SHUTDOWN_TIMEOUT_MS: on SIGTERM/SIGINT, the longest wait for in-flight work before the process exits anyway */
  shutdownTimeoutMs: number;
  /** REQUEST_TIMEOUT_MS: the longest a client may take to send a whole request (0: none) */
  requestTimeoutMs: number;
  /** IDLE_GC_MS: after this long without a request, full garbage collections until V8 gives its young generation back, then the C heaps' free pages and unused file pages (lib/idle-collection.ts, lib/malloc-trim.ts; also once after start-up; 0: never) */
  idleCollectMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** PG_POOL_SIZE's default, also the engine's when opened without settings (tests, tools) */
export const DEFAULT_PG_POOL_SIZE = 20;
/** SQLITE_WORKER_IDLE_MS's default, also the engine's when opened without settings */
export const DEFAULT_SQLITE_WORKER_IDLE_MS = 30000;
/** MAX_RESULT_BYTES: a page of 1,000 rows of 8 KiB each (storage/result-budget.ts) */
export const DEFAULT_MAX_RESULT_BYTES = 8 * 1024 * 1024;
/** PROJECT_MAX_BYTES: one project cannot fill the disk every project shares */
export const DEFAULT_PROJECT_MAX_BYTES = 1024 * 1024 * 1024;

function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a whole number, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function flag(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error(`${name} must be true or false, got '${raw}'`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'info';
  if (!LOG_LEVELS.includes(raw)) throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got '${raw}'`);
  return raw;
}

function httpUrl(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name] && env[name]!.length > 0 ? env[name]! : fallback;
  if (!/^https?:\/\//.test(raw) || !URL.canParse(raw)) throw new Error(`${name} must be an absolute http(s) URL`);
  return new URL(raw).href;
}

/**
 * TRUST_PROXY: unset or `false`: the socket address is the client. A number n: trust n proxy hops
 * (the client is the n-th address from the right of X-Forwarded-For). A comma-separated list of
 * addresses or CIDRs: trust those proxies. `true` (every hop) is accepted but lets a client choose
 * its own address unless the proxy overwrites X-Forwarded-For; prefer a hop count.
 */
function trustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true') return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0 || list.some((s) => !/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(s))) throw new Error('TRUST_PROXY must be true, false, a hop count, or a comma-separated list of proxy addresses/CIDRs');
  return list;
}

/** METRICS_TOKEN: a bearer secret, long enough not to be guessed (it is compared in constant time) */
function metricsToken(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (raw.length < 16 || raw.length > 1024 || !/^[\x21-\x7e]+$/.test(raw)) throw new Error('METRICS_TOKEN must be 16 to 1024 printable characters without spaces');
  return raw;
}

/** CORS_ORIGINS: `*`, or a comma-separated list of origins, each exactly scheme://host[:port] */
function corsOrigins(raw: string | undefined): readonly string[] {
  if (raw === undefined || raw.trim() === '') return Object.freeze([]);
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const origin of list) {
    if (origin === '*') continue;
    if (!/^https?:\/\//.test(origin) || !URL.canParse(origin) || new URL(origin).origin !== origin)
      throw new Error(`CORS_ORIGINS must be * or a comma-separated list of origins such as https://console.example.com (scheme, host and port only), got '${origin}'`);
  }
  return Object.freeze(list);
}

/**
 * PG_QUERY_TIMEOUT_MS defaults to a little more than the statement timeout: the server cancels a long
 * statement first (503 query_timeout, the connection stays usable) and the client gives up only when
 * no answer comes at all. Without a statement timeout there is no default client-side one either.
 */
function queryTimeout(env: Record<string, string | undefined>, statementTimeoutMs: number): number {
  const ms = int(env, 'PG_QUERY_TIMEOUT_MS', statementTimeoutMs > 0 ? statementTimeoutMs + 5000 : 0, 0, 3700000);
  if (ms > 0 && statementTimeoutMs > 0 && ms <= statementTimeoutMs)
    throw new Error(`PG_QUERY_TIMEOUT_MS (${ms}) must be greater than STATEMENT_TIMEOUT_MS (${statementTimeoutMs}), so that the server cancels a long statement first`);
  return ms;
}

/** The size of libuv's thread pool as libuv reads it (atoi, then at least 1 and at most 1024): not ours to refuse. */
export function uvThreadpoolSize(raw: string | undefined): number {
  if (raw === undefined) return 4;
  const n = Number.parseInt(raw, 10);
  return Number.isNaN(n) || n < 1 ? 1 : Math.min(n, 1024);
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const databaseUrl = env.DATABASE_URL && env.DATABASE_URL.length > 0 ? env.DATABASE_URL : null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new Error('DATABASE_URL must be a postgres:// URL');
  const port = int(env, 'PORT', 3000, 0, 65535);
  const statementTimeoutMs = int(env, 'STATEMENT_TIMEOUT_MS', 30000, 0, 3600000);
  const functionConcurrency = int(env, 'FUNCTION_CONCURRENCY', 8, 1, 256);
  return Object.freeze({
    port,
    host: env.HOST ?? '0.0.0.0',
    dataDir: env.DATA_DIR ?? './data',
    databaseUrl,
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxRows: int(env, 'MAX_ROWS', 1000, 1, 100000),
    maxResultBytes: int(env, 'MAX_RESULT_BYTES', DEFAULT_MAX_RESULT_BYTES, 64 * 1024, 1024 * 1024 * 1024),
    projectMaxBytes: int(env, 'PROJECT_MAX_BYTES', DEFAULT_PROJECT_MAX_BYTES, 1024 * 1024, 2 ** 50),
    guessedReads: flag(env, 'GUESSED_READS', true),
    logLevel: logLevel(env.LOG_LEVEL),
    trustProxy: trustProxy(env.TRUST_PROXY),
    argon2: Object.freeze({
      memoryCost: int(env, 'ARGON2_MEMORY_KIB', 19456, 1024, 1024 * 1024),
      timeCost: int(env, 'ARGON2_TIME_COST', 2, 1, 10),
      concurrency: int(env, 'PASSWORD_HASH_CONCURRENCY', Math.max(1, uvThreadpoolSize(env.UV_THREADPOOL_SIZE) - 1), 1, 1024),
    }),
    tokenTtlMs: 30 * DAY_MS,
    statementTimeoutMs,
    postgres: Object.freeze({
      // at least 3: two connections stay out of the projects' share for the platform's own queries.
      // 20 by default: a project's share (half of 18) is then about what PostgREST's own pool of 10
      // gives its one database; with 10, a busy project got 4 and waited in the gate (README).
      poolSize: int(env, 'PG_POOL_SIZE', DEFAULT_PG_POOL_SIZE, 3, 1000),
      connectTimeoutMs: int(env, 'PG_CONNECT_TIMEOUT_MS', 5000, 100, 600000),
      queryTimeoutMs: queryTimeout(env, statementTimeoutMs),
      keepAliveMs: int(env, 'PG_KEEPALIVE_MS', 10000, 1000, 7200000),
    }),
    sqliteWorkers: int(env, 'SQLITE_WORKERS', 4, 1, 64),
    sqliteWorkerIdleMs: int(env, 'SQLITE_WORKER_IDLE_MS', DEFAULT_SQLITE_WORKER_IDLE_MS, 0, DAY_MS),
    sqliteOpenProjects: env.SQLITE_OPEN_PROJECTS ? int(env, 'SQLITE_OPEN_PROJECTS', 1, 1, 1000000) : null,
    projectConcurrency: env.PROJECT_CONCURRENCY ? int(env, 'PROJECT_CONCURRENCY', 1, 1, 1000) : null,
    appUrl: httpUrl(env, 'APP_URL', `http://localhost:${port}/`),
    email: Object.freeze({
      allowPrivateHosts: flag(env, 'EMAIL_ALLOW_PRIVATE_HOSTS', false),
      apiBaseUrl: httpUrl(env, 'EMAILAPI_BASE_URL', 'https://api.resend.com/'),
      timeoutMs: int(env, 'EMAIL_TIMEOUT_MS', 10000, 100, 120000),
      caFile: env.SMTP_CA_FILE && env.SMTP_CA_FILE.length > 0 ? env.SMTP_CA_FILE : null,
    }),
    functions: Object.freeze({
      memoryMb: int(env, 'FUNCTION_MEMORY_MB', 64, 8, 1024),
      timeoutMs: int(env, 'FUNCTION_TIMEOUT_MS', 5000, 10, 60000),
      concurrency: functionConcurrency,
      // half the slots: a project flooding with hanging invocations leaves the other half to the rest
      projectConcurrency: int(env, 'FUNCTION_PROJECT_CONCURRENCY', Math.ceil(functionConcurrency / 2), 1, 256),
      recycleGrowthMb: int(env, 'FUNCTION_RECYCLE_GROWTH_MB', 64, 1, 4096),
      idleMs: int(env, 'FUNCTION_IDLE_MS', 60000, 100, 86400000),
      niceness: int(env, 'FUNCTION_NICENESS', 10, 0, 19),
    }),
    masterKey: env.MASTER_KEY,
    metrics: Object.freeze({ enabled: flag(env, 'METRICS', true), token: metricsToken(env.METRICS_TOKEN) }),
    corsOrigins: corsOrigins(env.CORS_ORIGINS),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 30000, 100, 3600000),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 60000, 0, 3600000),
    idleCollectMs: int(env, 'IDLE_GC_MS', 5000, 0, 3600000),
  });
}
