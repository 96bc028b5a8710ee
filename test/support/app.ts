// Builds the whole service on a chosen engine, in-process, on a throw-away database, and runs a
// block of scenarios once per engine (SQLite always; PostgreSQL when reachable or required).
import { after, before, describe, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildApp } from '../../src/app.ts';
import { buildServices, type ServiceOptions, type Services } from '../../src/services/index.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { randomBytes } from 'node:crypto';
import type { Engine } from '../../src/storage/engine.ts';
import { engineOptions, openEngine } from '../../src/storage/open-engine.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createTestDatabase, testEngines, type EngineName } from './postgres.ts';
import { openApiCheck, type OpenApiCheck } from './openapi-check.ts';
import { AssertionError } from 'node:assert';

export type { EngineName };

/** A clock tests can move. */
export class TestClock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export interface Reply {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestApp {
  kind: EngineName;
  app: FastifyInstance;
  engine: Engine;
  services: Services;
  clock: TestClock;
  config: Config;
  /** the box that seals this app's stored secrets */
  secrets: SecretBox;
  /** Warnings the services logged (e.g. a stored policy that no longer validates). */
  warnings: Record<string, unknown>[];
  req(method: string, url: string, opts?: RequestOptions): Promise<Reply>;
  close(): Promise<void>;
}

export const TEST_ENV = { LOG_LEVEL: 'silent', ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1', PG_POOL_SIZE: '8' };

/**
 * The engine a configuration asks for, on a throw-away database (PostgreSQL) or directory (SQLite,
 * unless `env.DATA_DIR` names one: then it is the caller's to remove), opened as main.ts opens it.
 */
export async function openTestEngine(
  kind: EngineName,
  env: Record<string, string> = {},
): Promise<{ engine: Engine; config: Config; cleanup: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const dataDir = env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'bp-test-'));
    const config = loadConfig({ ...TEST_ENV, ...env, DATA_DIR: dataDir });
    const engine = await openEngine(engineOptions(config));
    const cleanup = async () => void (env.DATA_DIR === undefined && rmSync(dataDir, { recursive: true, force: true }));
    return { engine, config, cleanup };
  }
  const db = await createTestDatabase();
  const config = loadConfig({ ...TEST_ENV, ...env, DATABASE_URL: db.url });
  const engine = await openEngine(engineOptions(config));
  return { engine, config, cleanup: () => db.drop() };
}

/** An engine for the length of `fn`, closed and its store removed after, whatever `fn` does. */
export async function withTestEngine<T>(kind: EngineName, env: Record<string, string>, fn: (t: { engine: Engine; config: Config }) => Promise<T>): Promise<T> {
  const { engine, config, cleanup } = await openTestEngine(kind, env);
  try {
    return await fn({ engine, config });
  } finally {
    await engine.close();
    await cleanup();
  }
}

export async function startTestApp(
  kind: EngineName,
  env: Record<string, string> = {},
  logStream?: { write(line: string): void },
  extra: Partial<ServiceOptions> = {},
): Promise<TestApp> {
  const { engine, config, cleanup } = await openTestEngine(kind, env);
  const clock = new TestClock();
  const warnings: Record<string, unknown>[] = [];
  const secrets = extra.secrets ?? new SecretBox(randomBytes(32));
  const services = buildServices(engine, config, clock, { log: { warn: (obj, msg) => warnings.push({ ...obj, msg }) }, secrets, ...extra });
  const app = await buildApp({ config, engine, services, logger: createLogger(config.logLevel, logStream) });
  let documented: OpenApiCheck | undefined;
  return {
    kind,
    warnings,
    app,
    engine,
    services,
    clock,
    config,
    secrets,
    async req(method, url, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
      let payload: string | undefined;
      if (opts.rawBody !== undefined) payload = opts.rawBody;
      else if (opts.body !== undefined) payload = JSON.stringify(opts.body);
      if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
      const res = await app.inject({ method: method as never, url, headers, payload });
      // every response of the suite is checked against /openapi.json (test/support/openapi-check.ts)
      documented ??= openApiCheck(app.swagger());
      const problems = documented.check({ method, url, status: res.statusCode, contentType: res.headers['content-type'] as string | undefined, body: res.body });
      if (problems.length) throw new AssertionError({ message: `The OpenAPI document does not match the response:\n${problems.join('\n')}` });
      let body: unknown = res.body;
      if (res.body.length > 0 && String(res.headers['content-type'] ?? '').includes('json')) body = JSON.parse(res.body);
      return { status: res.statusCode, body, headers: res.headers };
    },
    async close() {
      try {
        await app.close();
        await engine.close();
      } finally {
        await cleanup();
      }
    },
  };
}

/** Runs `body` once per engine, each with its own app and throw-away database. */
export async function describeEngines(
  title: string,
  body: (ctx: () => TestApp, kind: EngineName) => void,
  env: Record<string, string> = {},
  extra: Partial<ServiceOptions> = {},
): Promise<void> {
  const { engines, skipReason } = await testEngines();
  for (const kind of engines) {
    describe(`${title} [${kind}]`, () => {
      let t: TestApp | undefined;
      before(async () => {
        t = await startTestApp(kind, env, undefined, extra);
      });
      after(async () => {
        await t?.close();
      });
      body(() => t!, kind);
    });
  }
  if (skipReason) test(`${title} [postgres]`, { skip: skipReason }, () => undefined);
}

let counter = 0;
export function uniqueEmail(prefix = 'user'): string {
  counter += 1;
  return `${prefix}${counter}.${Date.now().toString(36)}@example.com`;
}

export async function registerAccount(t: TestApp, overrides: Partial<{ name: string; email: string; password: string }> = {}) {
  const body = { name: 'Owner', email: uniqueEmail('owner'), password: 'correct horse', ...overrides };
  const res = await t.req('POST', '/auth/register', { body });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.token as string, account: res.body.account as { id: string; email: string; name: string }, password: body.password };
}

export async function createProject(t: TestApp, token: string, name = 'proj') {
  const res = await t.req('POST', '/projects', { token, body: { name } });
  if (res.status !== 201) throw new Error(`create project failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; name: string };
}

/** Asserts the flat error shape and returns the body. */
export function expectError(res: Reply, status: number, code?: string): any {
  if (res.status !== status || (code !== undefined && res.body?.code !== code)) {
    throw new Error(`expected ${status}${code ? ` ${code}` : ''}, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  const keys = Object.keys(res.body).sort().join(',');
  if (keys !== 'code,details,hint,message') throw new Error(`error body has keys ${keys}`);
  return res.body;
}
