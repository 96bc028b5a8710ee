// The console's end-to-end tests: the real service as a child process (node dist/main.js, the
// console built by the same step as npm ci) on a throw-away database, driven by Debian's Chromium
// through playwright-core with a fresh profile. One server and one browser per test file.
// Without Chromium the tests are skipped loudly; with REQUIRE_BROWSER=1 they fail instead.
import { after, before, describe, test } from 'node:test';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildConsole } from '../../scripts/build-console.ts';
import { ROOT } from '../../src/bundles.ts';
import { callServer, startServer, type ServerProcess } from './server-process.ts';
import { createTestDatabase, testEngines, type EngineName } from './postgres.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : null;

export interface ConsoleRun {
  engine: EngineName;
  base: string;
  server: ServerProcess;
  context: BrowserContext;
  /** a new tab at `width` pixels (1280 by default) */
  page(width?: number): Promise<Page>;
  /** script errors and CSP refusals seen by any tab so far (each test ends by asserting none) */
  problems: string[];
  /** signs in on the sign-in screen and waits for the projects */
  signIn(page: Page, email: string, password: string): Promise<void>;
  /** a JSON call to the same server, for set-up and for checking what the console did */
  api(method: string, path: string, opts?: Parameters<typeof callServer>[3]): ReturnType<typeof callServer>;
  /** a PNG of the page, into docs/screenshots/ when UPDATE_SCREENSHOTS=1 on SQLite (else a temp dir) */
  shot(page: Page, name: string): Promise<void>;
}

function browserSkip(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const reason = `Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH): console browser tests SKIPPED`;
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${reason}`);
  process.stderr.write(`\n!!! WARNING: ${reason} !!!\n\n`);
  return reason;
}

async function open(engine: EngineName, env: Record<string, string>): Promise<{ run: ConsoleRun; close: () => Promise<void> }> {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'bp-console-'));
  cleanups.push(() => rmSync(scratch, { recursive: true, force: true }));
  try {
    await buildConsole();
    const dbEnv: Record<string, string> = { DATA_DIR: join(scratch, 'data') };
    if (engine === 'postgres') {
      const db = await createTestDatabase();
      cleanups.unshift(() => db.drop());
      dbEnv.DATABASE_URL = db.url;
    }
    const server = await startServer({ ...dbEnv, ...env });
    cleanups.unshift(() => server.stop());
    const context = await chromium.launchPersistentContext(join(scratch, 'profile'), { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 800 } });
    cleanups.unshift(() => context.close());
    const shots = (engine === 'sqlite' && SHOTS) || join(scratch, 'shots');
    mkdirSync(shots, { recursive: true });
    const problems: string[] = [];
    const run: ConsoleRun = {
      engine,
      problems,
      base: server.base,
      server,
      context,
      async page(width = 1280) {
        const p = await context.newPage();
        await p.setViewportSize({ width, height: width < 600 ? 844 : 800 });
        p.setDefaultTimeout(15_000);
        p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        p.on('console', (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
        });
        return p;
      },
      async signIn(page, email, password) {
        await page.goto(`${server.base}/console/sign-in`);
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(password);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Projects' }).waitFor();
      },
      api: (method, path, opts) => callServer(server.base, method, path, opts),
      async shot(page, name) {
        await page.evaluate(() => document.fonts.ready);
        await page.screenshot({ path: join(shots, `${name}.png`), animations: 'disabled', caret: 'hide' });
      },
    };
    return { run, close: async () => void (await runAll(cleanups)) };
  } catch (err) {
    await runAll(cleanups);
    throw err;
  }
}

async function runAll(fns: (() => Promise<unknown> | unknown)[]): Promise<void> {
  for (const f of fns) await Promise.resolve(f()).catch(() => undefined);
}

/**
 * Runs `body` against the console, once per engine in `engines` (PostgreSQL only when the test
 * engines include it: see test/support/postgres.ts for the skip rule).
 */
export async function describeConsole(title: string, engines: EngineName[], body: (run: () => ConsoleRun) => void, env: Record<string, string> = {}): Promise<void> {
  const skip = browserSkip();
  if (skip) {
    test(`${title} [browser]`, { skip }, () => undefined);
    return;
  }
  const available = engines.includes('postgres') ? await testEngines() : { engines: ['sqlite'] as EngineName[] };
  for (const engine of engines.filter((e) => available.engines.includes(e))) {
    describe(`${title} [${engine}, chromium]`, () => {
      let handle: Awaited<ReturnType<typeof open>> | undefined;
      before(async () => {
        handle = await open(engine, env);
      });
      after(async () => {
        await handle?.close();
      });
      body(() => handle!.run);
    });
  }
  if ('skipReason' in available && available.skipReason && engines.includes('postgres')) test(`${title} [postgres, chromium]`, { skip: available.skipReason }, () => undefined);
}
