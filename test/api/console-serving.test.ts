// The service serves the built owner console at / and /console/* (src/http/console.ts): index.html
// revalidated, hashed assets cached for a year, gzip and ETags, a strict security header set, the
// app's own routes falling back to index.html, and no API route shadowed. On every engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { buildConsole, CONSOLE_DIR } from '../../scripts/build-console.ts';
import { buildApp } from '../../src/app.ts';
import { buildServices } from '../../src/services/index.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { describeEngines, expectError, openTestEngine, TestClock, type TestApp } from '../support/app.ts';

// the real console, built as the install step builds it (a no-op when up to date)
await buildConsole();
const indexHtml = readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8');
const script = /src="\/console\/(assets\/[^"]+\.js)"/.exec(indexHtml)![1]!;

await describeEngines('console serving', (ctx) => {
  let t: TestApp;
  before(() => void (t = ctx()));

  const html = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.body, indexHtml);
    return res;
  };

  test('/, /console and any /console route answer index.html, revalidated, with the security headers', async () => {
    for (const url of ['/', '/console', '/console/', '/console/projects/abc/tables/x/data?as=anonymous', '/console/sign-in']) {
      const res = await html(url);
      assert.equal(res.headers['cache-control'], 'no-cache');
      assert.match(String(res.headers['content-security-policy']), /default-src 'none'; script-src 'self'; style-src 'self'/);
      assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
      assert.doesNotMatch(String(res.headers['content-security-policy']), /unsafe-eval|script-src[^;]*unsafe-inline/);
      assert.equal(res.headers['x-frame-options'], 'DENY');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      assert.ok(res.headers['x-request-id']);
    }
    assert.doesNotMatch(indexHtml, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script: the CSP would refuse it');
  });

  test('hashed assets: a year, immutable; gzip when accepted; ETag answered with 304', async () => {
    const plain = await t.app.inject({ method: 'GET', url: `/console/${script}` });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body, readFileSync(join(CONSOLE_DIR, script), 'utf8'));
    const zipped = await t.app.inject({ method: 'GET', url: `/console/${script}`, headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(zipped.headers.vary, 'accept-encoding');
    assert.equal(gunzipSync(zipped.rawPayload).toString('utf8'), plain.body);
    assert.ok(zipped.rawPayload.length < plain.rawPayload.length / 2);
    const again = await t.app.inject({ method: 'GET', url: `/console/${script}`, headers: { 'if-none-match': String(plain.headers.etag) } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    const head = await t.app.inject({ method: 'HEAD', url: '/' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    const icon = await t.app.inject({ method: 'GET', url: '/console/favicon.svg' });
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assert.equal(icon.headers['cache-control'], 'no-cache');
  });

  test('a missing asset is a flat 404 (never HTML); the build stamp and paths outside are not served', async () => {
    for (const url of ['/console/assets/index-missing.js', '/console/assets/', '/console/assets/../../package.json']) {
      const res = await t.req('GET', url);
      assert.notEqual(res.headers['content-type'], 'text/html; charset=utf-8', url);
      if (res.status !== 404) assert.equal(res.body, indexHtml, `${url} may only fall back to the app`);
      else expectError(res, 404, 'not_found');
    }
    assert.equal((await t.app.inject({ method: 'GET', url: '/console/.built' })).body, indexHtml, 'the stamp is not a file of the console');
    for (const url of ['/console/%2e%2e/%2e%2e/package.json', '/console/..%2f..%2fpackage.json']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.doesNotMatch(res.body, /"name": "baseplate"/, url);
    }
  });

  test('no API route is shadowed and the API answers without the console headers', async () => {
    assert.deepEqual((await t.req('GET', '/health')).body, { status: 'ok' });
    expectError(await t.req('GET', '/projects'), 401);
    expectError(await t.req('GET', `/${'a'.repeat(16)}/rest/todos`), 401);
    expectError(await t.req('POST', '/'), 404, 'not_found');
    expectError(await t.req('POST', '/console/x'), 404);
    const api = await t.app.inject({ method: 'GET', url: '/auth/me' });
    assert.equal(api.headers['content-security-policy'], undefined);
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    assert.ok(docs.statusCode < 400);
    const paths = Object.keys(JSON.parse((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body).paths);
    assert.equal(paths.some((p) => p === '/' || p.startsWith('/console')), false, 'the console is not part of the API document');
  });
});

await describeEngines('console serving without a built console', (ctx, kind) => {
  const empty = mkdtempSync(join(tmpdir(), 'bp-no-console-'));
  let app: Awaited<ReturnType<typeof buildApp>>;
  let close: () => Promise<void>;
  before(async () => {
    void ctx;
    const { engine, config, cleanup } = await openTestEngine(kind);
    const services = buildServices(engine, config, new TestClock(), { secrets: new SecretBox(randomBytes(32)), log: { warn: () => undefined } });
    app = await buildApp({ config, engine, services, logger: createLogger('silent'), consoleDir: empty });
    close = async () => {
      await app.close();
      await engine.close();
      await cleanup();
    };
  });
  after(async () => {
    await close();
    rmSync(empty, { recursive: true, force: true });
  });

  test('/ says the console is not built and how to build it; the API still answers', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 404);
    const body = JSON.parse(res.body);
    assert.equal(body.code, 'not_found');
    assert.match(body.hint, /npm run build/);
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  });
});
