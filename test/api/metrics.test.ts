// GET /metrics: Prometheus text with Node's process metrics and the service's own. Each kind of
// counter moves after the action it counts; the states (pools, gates, open files, sandboxes) are
// those of the engine; no label carries an id or a URL, so a hostile caller cannot grow the series;
// METRICS_TOKEN guards the endpoint and METRICS=false turns it all off.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createProject, describeEngines, expectError, registerAccount, startTestApp, type TestApp } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import { captureMailers, startApiCapture, startSmtpCapture, type ApiCapture, type SmtpCapture } from '../support/mail-capture.ts';
import { testEngines } from '../support/postgres.ts';
import { emailApiMailer } from '../../src/email/mailer.ts';
import type { MailerFactory } from '../../src/services/email-config.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

async function scrape(t: TestApp, headers: Record<string, string> = {}): Promise<{ text: string; samples: Sample[] }> {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
  assert.equal(res.statusCode, 200, res.body);
  return { text: res.body, samples: parse(res.body) };
}

/** The value of one series (0 when absent: a counter not moved yet). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

const until = async (what: string, check: () => boolean, ms = 10000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

let smtp: SmtpCapture;
let api: ApiCapture;
before(async () => {
  smtp = await startSmtpCapture();
  api = await startApiCapture();
});
after(async () => {
  await smtp.close();
  await api.close();
});
const smtpCaptured = captureMailers(() => smtp);
// real deliveries: SMTP to the capture server, the email API over HTTP to the other
const mailers: MailerFactory = { smtp: smtpCaptured.smtp, emailapi: (key) => emailApiMailer(key, { baseUrl: api.baseUrl, timeoutMs: 5000 }) };

const SLOW = {
  sqlite: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c',
  postgres: 'SELECT pg_sleep(0.5)',
};

await describeEngines(
  'metrics',
  (ctx, kind) => {
    test('GET /metrics: the Prometheus text format, with Node\'s process metrics and the service\'s own', async () => {
      const res = await ctx().app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      const described = (await ctx().req('GET', '/openapi.json')).body.paths['/metrics'].get;
      assert.deepEqual([described.security, Object.keys(described.responses['200'].content)], [undefined, ['text/plain']], 'documented: text, no credential without METRICS_TOKEN');
      for (const name of ['process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_gc_duration_seconds', 'nodejs_heap_size_used_bytes', 'baseplate_http_requests_total', 'baseplate_http_request_duration_seconds', 'baseplate_db_gate_slots'])
        assert.match(res.body, new RegExp(`^# TYPE ${name} `, 'm'), name);
    });

    test('requests are counted by route pattern, method and status, with a latency histogram; no id reaches a label', async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const projects = [await createProject(t, token), await createProject(t, token)];
      const route = { method: 'GET', route: '/projects/:id' };
      const before = (await scrape(t)).samples;
      for (const p of projects) assert.equal((await t.req('GET', `/projects/${p.id}`, { token })).status, 200);
      assert.equal((await t.req('GET', `/projects/${projects[0]!.id}`)).status, 401);
      assert.equal((await t.req('GET', '/no/such/route')).status, 404);
      assert.equal((await t.req('GET', '/projects/%zz')).status, 400); // refused by the router, before any hook
      const { text, samples } = await scrape(t);
      const moved = (name: string, labels: Record<string, string>) => value(samples, name, labels) - value(before, name, labels);
      assert.equal(moved('baseplate_http_requests_total', { ...route, status: '200' }), 2);
      assert.equal(moved('baseplate_http_requests_total', { ...route, status: '401' }), 1);
      assert.equal(moved('baseplate_http_requests_total', { method: 'GET', route: '(unmatched)', status: '404' }), 1);
      assert.equal(moved('baseplate_http_requests_total', { method: 'GET', route: '(unmatched)', status: '400' }), 1);
      assert.equal(moved('baseplate_http_request_duration_seconds_count', route), 3);
      assert.ok(value(samples, 'baseplate_http_request_duration_seconds_sum', route) > 0);
      assert.equal(value(samples, 'baseplate_http_request_duration_seconds_bucket', { ...route, le: '+Inf' }), value(samples, 'baseplate_http_request_duration_seconds_count', route));
      for (const p of projects) assert.ok(!text.includes(p.id), 'a project id is in the metrics');
      assert.ok(!text.includes('/no/such/route') && !text.includes('%zz'));
    });

    test('a hostile caller cannot grow the series: hundreds of distinct URLs, methods and projects add a bounded few', async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const series = (samples: Sample[]) => new Set(samples.filter((s) => s.name.startsWith('baseplate_http_')).map((s) => `${s.name}${JSON.stringify(s.labels)}`));
      const before = series((await scrape(t)).samples);
      const junk: string[] = [];
      for (let i = 0; i < 300; i++) {
        const r = randomBytes(6).toString('hex');
        junk.push(r);
        const pid = randomBytes(10).toString('hex').replace(/[^a-z2-7]/g, 'a').slice(0, 16).padEnd(16, 'a');
        const url = [`/x${r}`, `/${pid}/rest/t${r}?id=eq.${r}`, `/projects/${r}`, `/${pid}/functions/f${r}/${r}`][i % 4]!;
        await t.req(['GET', 'POST', 'DELETE', 'PROPFIND'][i % 4]!, url, { headers: { authorization: `Bearer ${r}` } });
      }
      for (let i = 0; i < 20; i++) {
        const p = await createProject(t, token, `p${i}`);
        junk.push(p.id);
        await t.req('GET', `/projects/${p.id}/tables`, { token });
      }
      const { text, samples } = await scrape(t);
      const added = [...series(samples)].filter((s) => !before.has(s));
      // routes × methods × statuses actually used: a few dozen at most, whatever the URLs were
      assert.ok(added.length <= 80, `${added.length} new series:\n${added.join('\n')}`);
      for (const j of junk) assert.ok(!text.includes(j), `caller text in the metrics: ${j}`);
    });

    test('the database: the engine\'s own numbers; statements that wait for the project\'s share are counted, and seen waiting', async () => {
      const t = ctx();
      const d = await dataPlane(t);
      let { samples } = await scrape(t);
      const gateLabels = { engine: kind };
      const capacity = t.engine.stats().gate.capacity;
      assert.equal(value(samples, 'baseplate_db_gate_slots', gateLabels), capacity);
      if (kind === 'postgres') {
        assert.equal(value(samples, 'baseplate_db_pool_max_connections'), 8);
        assert.ok(value(samples, 'baseplate_db_pool_connections', { state: 'open' }) >= 1);
        assert.ok(samples.some((s) => s.name === 'baseplate_db_pool_waiting'));
      } else {
        assert.ok(value(samples, 'baseplate_sqlite_open_projects') >= 1);
        assert.ok(value(samples, 'baseplate_sqlite_open_projects_limit') >= 1);
      }
      const waitsBefore = value(samples, 'baseplate_db_gate_waits_total', gateLabels);
      // PROJECT_CONCURRENCY=1: of three slow statements of one project, two wait
      const db = await t.engine.data(d.pid, 0);
      const slow = [1, 2, 3].map(() => db.get(SLOW[kind]));
      await until('a statement running and another waiting', () => t.engine.stats().gate.inUse === 1 && t.engine.stats().gate.queued >= 1);
      ({ samples } = await scrape(t));
      assert.equal(value(samples, 'baseplate_db_gate_slots_in_use', gateLabels), 1);
      assert.ok(value(samples, 'baseplate_db_gate_queued', gateLabels) >= 1);
      assert.equal(value(samples, 'baseplate_db_gate_queued_projects', gateLabels), 1);
      await Promise.allSettled(slow);
      ({ samples } = await scrape(t));
      assert.ok(value(samples, 'baseplate_db_gate_waits_total', gateLabels) - waitsBefore >= 2);
      assert.ok(value(samples, 'baseplate_db_gate_wait_seconds_total', gateLabels) > 0);
      assert.equal(value(samples, 'baseplate_db_gate_slots_in_use', gateLabels), 0);
      if (kind === 'sqlite') assert.ok(value(samples, 'baseplate_sqlite_worker_threads') >= 1, 'the slow statements ran on worker threads');
    });

    test('password hashing: its slots, those in use, and the checks that waited for one', async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const { id: pid } = await createProject(t, token, 'passwords');
      const before = (await scrape(t)).samples;
      assert.equal(value(before, 'baseplate_password_hash_slots'), t.config.argon2.concurrency);
      // more hashes in one tick than the project's share of the slots: some must wait (sign-ups over
      // HTTP would not do: the project's database share may hand them to the hasher one at a time)
      const hashes = Array.from({ length: 3 * t.config.argon2.concurrency }, () => t.services.hasher.hash('a long password', pid));
      await Promise.all(hashes);
      const res = await t.req('POST', `/${pid}/auth/register`, { body: { email: 'm@example.com', password: 'a long password' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const { samples } = await scrape(t);
      assert.ok(value(samples, 'baseplate_password_hash_waits_total') > value(before, 'baseplate_password_hash_waits_total'));
      assert.equal(value(samples, 'baseplate_password_hash_slots_in_use'), 0);
      assert.equal(value(samples, 'baseplate_password_hash_queued'), 0);
    });

    test('function invocations by outcome, with their duration; sandbox processes', async () => {
      const t = ctx();
      const d = await dataPlane(t);
      const key = (await d.createKey(['function'])).key;
      for (const [name, code] of [['ok', 'export default () => ({ body: { ok: true } });'], ['boom', "export default () => { throw new Error('boom'); };"]])
        assert.equal((await t.req('PUT', `/projects/${d.pid}/functions/${name}`, { token: d.owner, body: { code } })).status, 201);
      const before = (await scrape(t)).samples;
      const invoke = (name: string) => t.req('POST', `/${d.pid}/functions/${name}`, { token: key });
      assert.equal((await invoke('ok')).status, 200);
      assert.equal((await invoke('ok')).status, 200);
      expectError(await invoke('boom'), 500, 'function_error');
      expectError(await invoke('missing'), 404);
      const { samples } = await scrape(t);
      const count = (outcome: string) => value(samples, 'baseplate_function_invocation_duration_seconds_count', { outcome }) - value(before, 'baseplate_function_invocation_duration_seconds_count', { outcome });
      assert.equal(count('ok'), 2);
      assert.equal(count('function_error'), 1);
      assert.equal(count('not_found'), 0, 'a function that does not exist was never invoked');
      assert.ok(value(samples, 'baseplate_function_invocation_duration_seconds_sum', { outcome: 'ok' }) > 0);
      assert.ok(value(samples, 'baseplate_function_sandboxes', { state: 'idle' }) >= 1);
      assert.equal(value(samples, 'baseplate_function_slots_in_use'), 0);
    });

    test('emails sent and failed, by provider (test sends and the flows\' background sends alike)', async () => {
      const t = ctx();
      const d = await dataPlane(t);
      const config = (body: Record<string, unknown>) => t.req('PUT', `/projects/${d.pid}/auth/email-config`, { token: d.owner, body: { from_address: 'app@example.com', from_name: 'App', ...body } });
      const sendTest = () => t.req('POST', `/projects/${d.pid}/auth/email-config/test`, { token: d.owner, body: { to: 'someone@example.com' } });
      const before = (await scrape(t)).samples;
      assert.equal((await config({ provider: 'smtp', smtp_host: 'smtp.example.com', smtp_port: 587, smtp_encryption: 'none' })).status, 200);
      assert.equal((await sendTest()).status, 200);
      assert.equal((await config({ provider: 'emailapi', emailapi_api_key: 'key-123456' })).status, 200);
      api.status = 200;
      assert.equal((await sendTest()).status, 200);
      const user = await d.endUser();
      assert.equal((await t.req('POST', `/${d.pid}/auth/magic-link`, { body: { email: user.email } })).status, 200);
      await t.services.emailFlows.settle();
      api.status = 500;
      expectError(await sendTest(), 502, 'email_delivery_failed');
      api.status = 200;
      const { samples } = await scrape(t);
      const moved = (provider: string, outcome: string) => value(samples, 'baseplate_emails_total', { provider, outcome }) - value(before, 'baseplate_emails_total', { provider, outcome });
      assert.deepEqual([moved('smtp', 'sent'), moved('smtp', 'failed'), moved('emailapi', 'sent'), moved('emailapi', 'failed')], [1, 0, 2, 1]);
    });

    test('refusals: the login throttle, the email rate limit and project_busy', async () => {
      const t = ctx();
      const d = await dataPlane(t);
      const refusals = async (reason: string) => value((await scrape(t)).samples, 'baseplate_refusals_total', { reason });
      const { account } = await registerAccount(t);
      const throttled = await refusals('login_throttle');
      let last = 0;
      for (let i = 0; i < 11; i++) last = (await t.req('POST', '/auth/login', { body: { email: account.email, password: 'wrong password' } })).status;
      assert.equal(last, 429);
      assert.equal((await refusals('login_throttle')) - throttled, 1);

      const limited = await refusals('email_rate_limit');
      for (let i = 0; i < 6; i++) last = (await t.req('POST', `/${d.pid}/auth/magic-link`, { body: { email: 'nobody@example.com' } })).status;
      assert.equal(last, 429);
      assert.equal((await refusals('email_rate_limit')) - limited, 1);

      await d.createTable('notes', [{ name: 'body', type: 'text' }]);
      const busy = await refusals('project_busy');
      expectError(await projectBusy(t, d.pid, () => d.rest('POST', 'notes', { body: { body: 'x' } })), 503, 'project_busy');
      assert.equal((await refusals('project_busy')) - busy, 1);
    });
  },
  { PROJECT_CONCURRENCY: '1', STATEMENT_TIMEOUT_MS: '1000' },
  { mailers },
);

/**
 * A request of a project whose database capacity is taken: on SQLite, a connection of the test's
 * own holds the project's write lock; on PostgreSQL, its one slot runs and its queue is full.
 */
async function projectBusy(t: TestApp, pid: string, request: () => Promise<import('../support/app.ts').Reply>) {
  if (t.kind === 'sqlite') {
    const holder = new Database(join(t.config.dataDir, 'projects', `${pid}.db`));
    holder.exec('BEGIN IMMEDIATE');
    try {
      return await request();
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  }
  const db = await t.engine.data(pid, 0);
  // its one slot (PROJECT_CONCURRENCY 1) and the smallest queue a project has (fair-gate.ts)
  const held = Array.from({ length: 65 }, () => db.get(SLOW.postgres));
  await until('the queue full', () => t.engine.stats().gate.queued === 64);
  try {
    return await request();
  } finally {
    await Promise.allSettled(held);
  }
}

await describeEngines('metrics: function_busy', (ctx) => {
  test('an invocation refused with function_busy is counted', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const key = (await d.createKey(['function'])).key;
    assert.equal((await t.req('PUT', `/projects/${d.pid}/functions/ok`, { token: d.owner, body: { code: 'export default () => ({ body: 1 });' } })).status, 201);
    // the sandboxes stopped (as when the service is closing): invocations are refused
    await t.services.functions.close();
    expectError(await t.req('POST', `/${d.pid}/functions/ok`, { token: key }), 503, 'function_busy');
    assert.equal(value((await scrape(t)).samples, 'baseplate_refusals_total', { reason: 'function_busy' }), 1);
  });
});

const { engines, skipReason } = await testEngines();
for (const kind of engines) {
  test(`[${kind}] METRICS_TOKEN: without the bearer token 401, with a wrong one 401, with it 200`, async () => {
    const token = randomBytes(24).toString('base64url');
    const t = await startTestApp(kind, { METRICS_TOKEN: token });
    try {
      const get = (authorization?: string) => t.req('GET', '/metrics', { headers: authorization ? { authorization } : {} });
      assert.match(expectError(await get(), 401, 'missing_token').message, /METRICS_TOKEN/, 'names the token it wants, not a platform token');
      // the last character changed (to x, or to y when it is x: the token is random)
      const changed = `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`;
      for (const wrong of [`Bearer ${changed}`, `Bearer ${token}x`, 'Bearer short']) expectError(await get(wrong), 401, 'invalid_token');
      expectError(await get(`Basic ${token}`), 401, 'missing_token');
      const ok = await get(`Bearer ${token}`);
      assert.equal(ok.status, 200);
      assert.match(String(ok.body), /baseplate_http_requests_total/);
      // the refused scrapes are requests like any other
      assert.ok(parse(String(ok.body)).some((s) => s.name === 'baseplate_http_requests_total' && s.labels.route === '/metrics' && s.labels.status === '401'));
      const doc = (await t.req('GET', '/openapi.json')).body;
      assert.deepEqual(doc.paths['/metrics'].get.security, [{ metricsToken: [] }], 'the document requires the token');
      assert.deepEqual(doc.paths['/metrics'].get.responses['401'].content['application/json'].schema.allOf[1].properties.code.enum, ['invalid_token', 'missing_token']);
    } finally {
      await t.close();
    }
  });

  test(`[${kind}] METRICS=false: no /metrics route and nothing counted; the service answers as before`, async () => {
    const t = await startTestApp(kind, { METRICS: 'false' });
    try {
      assert.equal(t.services.metrics, null);
      expectError(await t.req('GET', '/metrics'), 404, 'not_found');
      assert.equal((await t.req('GET', '/openapi.json')).body.paths['/metrics'], undefined, 'nor in the document');
      assert.equal((await t.req('GET', '/health')).status, 200);
    } finally {
      await t.close();
    }
  });
}
if (skipReason) test('metrics token [postgres]', { skip: skipReason }, () => undefined);
