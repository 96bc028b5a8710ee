// /openapi.json tells the truth (issue [H]). Every in-process request of the suite is checked against
// it already (test/support/app.ts → openapi-check.ts); this file adds a scenario that reaches every
// documented operation with a success status, native and supabase-js doors, on every engine, and
// fails if one was never reached. It also proves the check can fail (a lying schema is caught) and
// that a declared response schema never strips a field from a response.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { describeEngines, registerAccount, uniqueEmail, type TestApp, type Reply } from '../support/app.ts';
import { captureMailers, startSmtpCapture, type SmtpCapture } from '../support/mail-capture.ts';
import { OpenApiCheck, openApiCheck } from '../support/openapi-check.ts';
import { installOpenApi } from '../../src/http/openapi.ts';

let smtp: SmtpCapture;
before(async () => {
  smtp = await startSmtpCapture();
});
after(async () => {
  await smtp?.close();
});

const PASSWORD = 'end user password';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const SITE = 'https://app.example.com';
const FN = "export default async (request, context) => ({ status: 200, body: { method: request.method, path: request.path, user: context.auth && context.auth.email } });";

/** The token of the last link emailed to `to`. */
async function linkToken(t: TestApp, to: string): Promise<string> {
  await t.services.emailFlows.settle();
  const mail = smtp.messages.filter((m) => m.to.includes(to)).at(-1);
  const m = mail && /[?&]token=([0-9a-f]{64})/.exec(mail.text);
  assert.ok(m, `an email with a link to ${to}`);
  return m[1]!;
}

function ok(res: Reply, status: number, what: string): any {
  assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body;
}

/** The owner's side: account, project, table, key, policy, settings, email, templates, functions. */
async function ownerScenario(t: TestApp) {
  ok(await t.req('GET', '/health'), 200, 'health');
  const owner = await registerAccount(t, { password: 'owner password' });
  const token = (ok(await t.req('POST', '/auth/login', { body: { email: owner.account.email, password: 'owner password' } }), 200, 'login') as { token: string }).token;
  ok(await t.req('GET', '/auth/me', { token }), 200, 'me');
  ok(await t.req('PATCH', '/auth/me', { token, body: { name: 'Renamed' } }), 200, 'update me');
  const pid = ok(await t.req('POST', '/projects', { token, body: { name: 'Truth', description: 'scenario' } }), 201, 'project').id as string;
  ok(await t.req('GET', '/projects', { token }), 200, 'projects');
  ok(await t.req('PATCH', `/projects/${pid}`, { token, body: { description: null } }), 200, 'update project');
  const table = ok(
    await t.req('POST', `/projects/${pid}/tables`, {
      token,
      body: { name: 'todos', columns: [{ name: 'title', type: 'text' }, { name: 'owner_id', type: 'integer', default: '$auth.id' }, { name: 'due', type: 'date', nullable: true }] },
    }),
    201,
    'table',
  );
  ok(await t.req('GET', `/projects/${pid}/tables`, { token }), 200, 'tables');
  ok(await t.req('GET', `/projects/${pid}/tables/${table.id}`, { token }), 200, 'table');
  ok(await t.req('PATCH', `/projects/${pid}/tables/${table.id}`, { token, body: { add_columns: [{ name: 'done', type: 'boolean', nullable: false, default: false }] } }), 200, 'alter');
  const key = ok(await t.req('POST', `/projects/${pid}/keys`, { token, body: { name: 'app', permissions: ['select', 'insert', 'update', 'delete', 'function'] } }), 201, 'key');
  const spare = ok(await t.req('POST', `/projects/${pid}/keys`, { token, body: { name: 'spare', permissions: ['select'], expires_at: '2099-01-01T00:00:00Z' } }), 201, 'spare key');
  ok(await t.req('GET', `/projects/${pid}/keys`, { token }), 200, 'keys');
  ok(await t.req('DELETE', `/projects/${pid}/keys/${spare.key_id}`, { token }), 204, 'revoke');
  const policies = `/projects/${pid}/tables/${table.id}/rls-policies`;
  ok(await t.req('POST', policies, { token, body: { name: 'own rows', operation: 'ALL', expression: 'owner_id = $auth.id' } }), 201, 'policy');
  const extra = ok(await t.req('POST', policies, { token, body: { name: 'extra', operation: 'select', expression: 'done = 1', enabled: false } }), 201, 'policy 2');
  ok(await t.req('PATCH', `${policies}/${extra.policy_id}`, { token, body: { enabled: true } }), 200, 'update policy');
  ok(await t.req('GET', policies, { token }), 200, 'policies');
  ok(await t.req('DELETE', `${policies}/${extra.policy_id}`, { token }), 204, 'delete policy');
  ok(await t.req('PUT', `/projects/${pid}/auth/settings`, { token, body: { site_url: SITE, redirect_urls: [`${SITE}/auth`] } }), 200, 'settings');
  ok(await t.req('GET', `/projects/${pid}/auth/settings`, { token }), 200, 'settings');
  ok(await t.req('GET', `/projects/${pid}/auth/email-config`, { token }), 200, 'email config (none)');
  const smtpConfig = { provider: 'smtp', from_address: 'auth@example.com', from_name: 'Truth', smtp_host: 'localhost', smtp_port: 25, smtp_encryption: 'none', smtp_password: 'p' };
  ok(await t.req('PUT', `/projects/${pid}/auth/email-config`, { token, body: smtpConfig }), 200, 'email config');
  ok(await t.req('GET', `/projects/${pid}/auth/email-config`, { token }), 200, 'email config');
  ok(await t.req('POST', `/projects/${pid}/auth/email-config/test`, { token, body: { to: 'someone@example.com' } }), 200, 'test email');
  const templates = `/projects/${pid}/auth/templates`;
  ok(await t.req('GET', templates, { token }), 200, 'templates');
  ok(await t.req('PUT', `${templates}/magic_link`, { token, body: { subject: 'Sign in to {{project_name}}', body: '<a href="{{link}}">Sign in</a>' } }), 200, 'put template');
  ok(await t.req('GET', `${templates}/magic_link`, { token }), 200, 'template');
  ok(await t.req('POST', `${templates}/preview`, { token, body: { subject: 'Hi {{email}}', body: '{{link}}' } }), 200, 'preview');
  ok(await t.req('DELETE', `${templates}/magic_link`, { token }), 204, 'reset template');
  ok(await t.req('PUT', `/projects/${pid}/functions/hello`, { token, body: { code: FN } }), 201, 'deploy');
  ok(await t.req('PUT', `/projects/${pid}/functions/hello`, { token, body: { code: FN } }), 200, 'redeploy');
  ok(await t.req('PUT', `/projects/${pid}/functions/bye`, { token, body: { code: FN } }), 201, 'deploy 2');
  ok(await t.req('GET', `/projects/${pid}/functions`, { token }), 200, 'functions');
  ok(await t.req('GET', `/projects/${pid}/functions/hello`, { token }), 200, 'function');
  ok(await t.req('DELETE', `/projects/${pid}/functions/bye`, { token }), 204, 'delete function');
  return { token, pid, table, key: key.key as string };
}

/** The application's side: end users and their email flows, the passthrough, functions. */
async function endUserScenario(t: TestApp, s: { token: string; pid: string; key: string }) {
  const { pid, key } = s;
  const post = (path: string, body: unknown, user?: string) => t.req('POST', `/${pid}/auth/${path}`, { body, headers: user ? { 'x-user-token': user } : {} });
  const email = uniqueEmail('truth');
  const session = ok(await post('register', { email, password: PASSWORD }), 201, 'register');
  ok(await post('login', { email, password: PASSWORD }), 200, 'login');
  ok(await t.req('GET', `/${pid}/auth/user`, { headers: { 'x-user-token': session.token } }), 200, 'user');
  ok(await post('magic-link', { email }), 200, 'magic link');
  ok(await post('magic-link/consume', { token: await linkToken(t, email) }), 200, 'consume');
  ok(await post('password/forgot', { email, redirect_url: `${SITE}/auth/reset` }), 200, 'forgot');
  ok(await post('password/reset', { token: await linkToken(t, email), password: `${PASSWORD} 2` }), 200, 'reset');
  const user = ok(await post('login', { email, password: `${PASSWORD} 2` }), 200, 'login again');
  const newEmail = uniqueEmail('moved');
  ok(await post('email-change/request', { new_email: newEmail }, user.token), 200, 'email change');
  ok(await post('email-change/confirm', { token: await linkToken(t, newEmail) }), 200, 'email change confirm');
  const unverified = uniqueEmail('unverified');
  ok(await post('register', { email: unverified, password: PASSWORD }), 201, 'register 2');
  ok(await post('verify/resend', { email: unverified }), 200, 'resend');
  ok(await post('verify/confirm', { token: await linkToken(t, unverified) }), 200, 'confirm');

  const rest = (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.req(method, `/${pid}/rest/todos${path}`, { token: key, body: opts.body, headers: { 'x-user-token': user.token, ...opts.headers } });
  const [first] = ok(await rest('POST', '', { body: { title: 'first' } }), 201, 'insert');
  ok(await rest('POST', '', { body: [{ title: 'a' }, { title: 'b' }], headers: { prefer: 'return=minimal' } }), 201, 'insert minimal');
  ok(await rest('GET', '?select=id,title&order=id.desc&limit=2', { headers: { prefer: 'count=exact' } }), 200, 'select');
  ok(await rest('PATCH', '?title=eq.a', { body: { done: true } }), 200, 'bulk update');
  ok(await rest('PATCH', '?title=eq.b', { body: { done: true }, headers: { prefer: 'return=minimal' } }), 204, 'bulk update minimal');
  ok(await rest('DELETE', '?title=eq.a'), 204, 'bulk delete');
  ok(await rest('DELETE', '?title=eq.b', { headers: { prefer: 'return=representation' } }), 200, 'bulk delete returning');
  ok(await rest('GET', `/${first.id}`), 200, 'get row');
  ok(await rest('PATCH', `/${first.id}`, { body: { title: 'renamed' } }), 200, 'update row');
  ok(await rest('PATCH', `/${first.id}`, { body: { title: 'again' }, headers: { prefer: 'return=minimal' } }), 204, 'update row minimal');
  ok(await rest('PUT', `/${first.id}`, { body: { title: 'replaced', owner_id: first.owner_id, done: false } }), 200, 'replace row');
  ok(await rest('PUT', `/${first.id}`, { body: { title: 'replaced', owner_id: first.owner_id, done: false }, headers: { prefer: 'return=minimal' } }), 204, 'replace minimal');
  ok(await rest('DELETE', `/${first.id}`, { headers: { prefer: 'return=representation' } }), 200, 'delete row returning');
  const [second] = ok(await rest('POST', '', { body: { title: 'second' } }), 201, 'insert');
  ok(await rest('DELETE', `/${second.id}`), 204, 'delete row');
  const fn = (path: string, method = 'POST') => t.req(method, `/${pid}/functions/hello${path}`, { token: key, body: method === 'GET' ? undefined : { a: 1 }, headers: { 'x-user-token': user.token } });
  for (const method of METHODS) {
    ok(await fn('', method), 200, `invoke (${method})`);
    ok(await fn('/sub/path', method), 200, `invoke a path (${method})`);
  }
  ok(await post('logout', undefined, user.token), 204, 'logout');
  return { email: newEmail, userId: user.user.id as number };
}

/** The owner's row routes (as itself, anonymous and the end user), the simulator, the policy check, the metrics. */
async function ownerRowsScenario(t: TestApp, s: { token: string; pid: string; table: { id: string } }, userId: number) {
  const base = `/projects/${s.pid}/tables/${s.table.id}`;
  const rows = (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) => t.req(method, `${base}/rows${path}`, { token: s.token, ...opts });
  const asUser = `as=end_user:${userId}`;
  const [mine] = ok(await rows('POST', `?${asUser}`, { body: { title: 'as the user' } }), 201, 'owner insert as the end user');
  assert.equal(mine.owner_id, userId, "the end user's $auth.id default");
  ok(await rows('POST', '', { body: [{ title: 'x' }, { title: 'y' }], headers: { prefer: 'return=minimal' } }), 201, 'owner insert minimal');
  assert.deepEqual(ok(await rows('GET', '?as=anonymous&select=id'), 200, 'owner read as anonymous'), [], 'no row passes owner_id = $auth.id for anonymous');
  ok(await rows('GET', '?select=id,title&order=id', { headers: { prefer: 'count=exact' } }), 200, 'owner read');
  ok(await rows('PATCH', '?title=eq.x', { body: { done: true } }), 200, 'owner bulk update');
  ok(await rows('DELETE', '?title=in.(x,y)'), 204, 'owner bulk delete');
  ok(await rows('GET', `/${mine.id}?${asUser}`), 200, 'owner read one as the end user');
  ok(await rows('PATCH', `/${mine.id}?${asUser}`, { body: { title: 'renamed' } }), 200, 'owner update one');
  ok(await rows('PUT', `/${mine.id}`, { body: { title: 'replaced', owner_id: userId, done: false } }), 200, 'owner replace one');

  const simulate = (body: unknown) => t.req('POST', `${base}/simulate`, { token: s.token, body });
  const seen = ok(await simulate({ as: `end_user:${userId}`, operation: 'select', row_ids: [mine.id, mine.id + 1000] }), 200, 'simulate SELECT');
  assert.deepEqual(seen.rows.map((r: { allowed: boolean; exists: boolean }) => [r.exists, r.allowed]), [[true, true], [false, false]]);
  const refused = ok(await simulate({ as: 'anonymous', operation: 'INSERT', values: { title: 'anonymous' } }), 200, 'simulate INSERT');
  assert.equal(refused.rows[0].allowed, false, "anonymous fails the check: $auth.id is NULL");
  ok(await simulate({ as: `end_user:${userId}`, operation: 'UPDATE', values: { done: true }, filter: 'visible', limit: 5 }), 200, 'simulate UPDATE');
  ok(await simulate({ as: 'anonymous', operation: 'DELETE', filter: 'hidden' }), 200, 'simulate DELETE');
  ok(await t.req('POST', `${base}/rls-policies/validate`, { token: s.token, body: { expression: 'owner_id = $auth.id and done = false' } }), 200, 'validate');
  ok(await rows('DELETE', `/${mine.id}?${asUser}`, { headers: { prefer: 'return=representation' } }), 200, 'owner delete one');
  assert.match(ok(await t.req('GET', '/metrics'), 200, 'metrics'), /^baseplate_http_requests_total\{/m);
}

/** The supabase-js door: the same services, the key in `apikey`, the user as the bearer. */
async function supabaseScenario(t: TestApp, s: { pid: string; key: string }) {
  const { pid, key } = s;
  const call = (method: string, path: string, opts: { body?: unknown; bearer?: string } = {}) =>
    t.req(method, `/${pid}${path}`, { body: opts.body, headers: { apikey: key, authorization: `Bearer ${opts.bearer ?? key}` } });
  const email = uniqueEmail('supa');
  ok(await call('POST', '/auth/v1/signup', { body: { email, password: PASSWORD } }), 200, 'signUp');
  // the first verification through an emailed link ends the sessions before it (CONTRACT §10)
  ok(await call('POST', '/auth/v1/otp', { body: { email } }), 200, 'signInWithOtp');
  const linked = ok(await call('POST', '/auth/v1/verify', { body: { type: 'magiclink', token_hash: await linkToken(t, email) } }), 200, 'verifyOtp');
  ok(await call('GET', '/auth/v1/user', { bearer: linked.access_token }), 200, 'getUser');
  ok(await call('PUT', '/auth/v1/user', { bearer: linked.access_token, body: { password: `${PASSWORD} 2` } }), 200, 'updateUser (signed in just now)');
  const session = ok(await call('POST', '/auth/v1/token?grant_type=password', { body: { email, password: `${PASSWORD} 2` } }), 200, 'signIn');
  const me = session.access_token as string;
  ok(await call('POST', '/auth/v1/recover', { body: { email } }), 200, 'resetPasswordForEmail');
  const unverified = uniqueEmail('supa-unverified');
  ok(await call('POST', '/auth/v1/signup', { body: { email: unverified, password: PASSWORD } }), 200, 'signUp 2');
  ok(await call('POST', '/auth/v1/resend', { body: { email: unverified, type: 'signup' } }), 200, 'resend');
  const [row] = ok(await call('POST', '/rest/v1/todos', { bearer: me, body: [{ title: 'supa' }] }), 201, 'from().insert');
  ok(await call('GET', '/rest/v1/todos?select=title', { bearer: me }), 200, 'from().select');
  ok(await call('PATCH', `/rest/v1/todos?id=eq.${row.id}`, { bearer: me, body: { done: true } }), 200, 'from().update');
  ok(await call('DELETE', `/rest/v1/todos?id=eq.${row.id}`, { bearer: me }), 204, 'from().delete');
  for (const method of METHODS) {
    const body = method === 'GET' ? undefined : {};
    ok(await call(method, '/functions/v1/hello', { bearer: me, body }), 200, `functions.invoke (${method})`);
    ok(await call(method, '/functions/v1/hello/deeper/path', { bearer: me, body }), 200, `functions.invoke a path (${method})`);
  }
  ok(await call('POST', '/auth/v1/logout', { bearer: me }), 204, 'signOut');
}

/** The owner's administration of end users, then everything deleted. */
async function teardownScenario(t: TestApp, s: { token: string; pid: string; table: { id: string } }) {
  const { token, pid } = s;
  const users = ok(await t.req('GET', `/projects/${pid}/end-users?limit=10`, { token }), 200, 'end users');
  ok(await t.req('PATCH', `/projects/${pid}/end-users/${users[0].id}`, { token, body: { role: 'editor' } }), 200, 'role');
  ok(await t.req('DELETE', `/projects/${pid}/end-users/${users[0].id}`, { token }), 204, 'remove user');
  ok(await t.req('GET', `/projects/${pid}`, { token }), 200, 'project');
  ok(await t.req('DELETE', `/projects/${pid}/tables/${s.table.id}`, { token }), 204, 'drop table');
  ok(await t.req('DELETE', `/projects/${pid}`, { token }), 204, 'delete project');
  ok(await t.req('POST', '/auth/logout', { token }), 204, 'logout');
  const other = await registerAccount(t);
  ok(await t.req('DELETE', '/auth/me', { token: other.token }), 204, 'delete account');
}

/** `METHOD path` of every documented operation. */
function operations(doc: any): string[] {
  return Object.entries<any>(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m.toLowerCase()]).map((m) => `${m} ${path}`));
}

await describeEngines(
  'openapi truth',
  (ctx) => {
    test('a scenario reaches every documented operation with a success, and every answer matches the document', async () => {
      const t = ctx();
      const doc = (await t.req('GET', '/openapi.json')).body;
      const check = openApiCheck(doc);
      check.seen.clear();
      const owner = await ownerScenario(t);
      const { userId } = await endUserScenario(t, owner);
      await ownerRowsScenario(t, owner, userId);
      await supabaseScenario(t, owner);
      await teardownScenario(t, owner);
      const undescribed = operations(doc).filter((op) => {
        const [method, path] = op.split(' ');
        return !doc.paths[path!][method!.toLowerCase()].responses.default;
      });
      assert.deepEqual(undescribed, [], 'every operation declares its responses (a route schema without `response` is not described)');
      const reached = new Set([...check.seen].map((s) => s.split(' ').slice(0, 2).join(' ')));
      const missing = operations(doc).filter((op) => !reached.has(op));
      assert.deepEqual(missing, [], 'every documented operation was reached with a documented success status');
      assert.ok(operations(doc).length >= 80, `${operations(doc).length} operations documented`);
    });

    test('the check fails a response that the document misdescribes', async () => {
      const t = ctx();
      const owner = await registerAccount(t);
      const res = await t.app.inject({ method: 'GET', url: '/auth/me', headers: { authorization: `Bearer ${owner.token}` } });
      const doc = structuredClone((await t.req('GET', '/openapi.json')).body);
      const sent = { method: 'GET', url: '/auth/me', status: 200, contentType: res.headers['content-type'] as string, body: res.body };
      assert.deepEqual(new OpenApiCheck(doc).check(sent), [], 'the real document describes it');
      delete doc.components.schemas.Account.properties.created_at;
      assert.match(new OpenApiCheck(doc).check(sent).join('\n'), /must NOT have additional properties/, 'a field the schema forgot');
      const renamed = structuredClone((await t.req('GET', '/openapi.json')).body);
      renamed.components.schemas.Account.required.push('display_name');
      assert.match(new OpenApiCheck(renamed).check(sent).join('\n'), /must have required property 'display_name'/, 'a field the response lacks');
      const refused = { ...sent, status: 401, body: JSON.stringify({ code: 'missing_token', message: 'm', details: null, hint: null }) };
      assert.deepEqual(new OpenApiCheck(doc).check(refused), [], 'a flat 401 with a listed code is described');
      const unflat = { ...refused, body: JSON.stringify({ error: 'missing token' }) };
      assert.match(new OpenApiCheck(renamed).check(unflat).join('\n'), /must have required property 'code'/, 'an error body not in the flat shape');
      const narrowed = structuredClone((await t.req('GET', '/openapi.json')).body);
      narrowed.paths['/auth/me'].get.responses['401'].content['application/json'].schema.allOf[1].properties.code.enum = ['invalid_token'];
      assert.match(new OpenApiCheck(narrowed).check(refused).join('\n'), /allowed values/, 'an error code the status does not list');
    });
  },
  { EMAIL_ALLOW_PRIVATE_HOSTS: 'true' },
  { mailers: captureMailers(() => smtp) },
);

test('a declared response schema documents only: a field it does not declare still reaches the client', async () => {
  const app = Fastify();
  await installOpenApi(app);
  const response = { 200: Type.Object({ a: Type.Number() }, { additionalProperties: false }) };
  app.get('/x', { schema: { response } }, async () => ({ a: 1, b: 'undeclared' }));
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/x' });
  assert.deepEqual(JSON.parse(res.body), { a: 1, b: 'undeclared' });
  const doc = app.swagger() as any;
  assert.ok(doc.paths['/x'].get.responses['200'].content['application/json'].schema, 'and it is documented');
  await app.close();
});
