// Compatibility: the real @supabase/supabase-js client, created with createClient('{base}/{project_id}',
// key) and nothing else, over a real socket, on both engines: data (as anonymous and as the signed-in
// user, under policies), the GoTrue subset of auth (sign-up with and without required confirmation,
// password sign-in, sign-out scopes, getUser/getSession, updateUser, magic links, verifyOtp for the
// links Baseplate sends, password recovery, resend, onAuthStateChange, refusal of refresh), edge
// functions, the features it does not have (rpc, storage, realtime), and bad input on every route.
// The README's supabase-js example is run as written.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createClient, type SupabaseClient, type AuthChangeEvent } from '@supabase/supabase-js';
import { describeEngines, registerAccount, createProject, uniqueEmail, expectError, type TestApp } from '../support/app.ts';
import { captureMailers, startSmtpCapture, type SmtpCapture } from '../support/mail-capture.ts';

let smtp: SmtpCapture;
before(async () => {
  smtp = await startSmtpCapture();
});
after(async () => {
  await smtp?.close();
});
const mailers = captureMailers(() => smtp);

const SITE = 'https://app.example.com';
const PASSWORD = 'end user password';
const HELLO = `export default async (request, context) => ({ hello: request.body && request.body.name, method: request.method, path: request.path, user: context.auth && context.auth.email, headers: request.headers })`;

interface Project {
  pid: string;
  owner: string;
  key: string;
  url: string;
  client(opts?: Parameters<typeof createClient>[2]): SupabaseClient;
  native(method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string> }): ReturnType<TestApp['req']>;
  lastToken(address: string): Promise<{ token: string; link: URL }>;
  mails(address: string): Promise<number>;
}

const clients: SupabaseClient[] = [];

async function project(t: TestApp, base: string, opts: { confirm?: boolean } = {}): Promise<Project> {
  const { token: owner } = await registerAccount(t);
  const { id: pid } = await createProject(t, owner, 'Compat App');
  const ok = (res: { status: number; body: unknown }, status = 200) => assert.equal(res.status, status, JSON.stringify(res.body));
  ok(await t.req('PUT', `/projects/${pid}/auth/settings`, { token: owner, body: { site_url: SITE, redirect_urls: ['https://mobile.example.com/auth'] } }));
  ok(
    await t.req('PUT', `/projects/${pid}/auth/email-config`, {
      token: owner,
      body: { provider: 'smtp', from_address: 'auth@example.com', from_name: 'Compat', smtp_host: 'localhost', smtp_port: 25, smtp_encryption: 'none', require_email_confirmation: opts.confirm ?? false },
    }),
  );
  const table = await t.req('POST', `/projects/${pid}/tables`, {
    token: owner,
    body: { name: 'todos', columns: [{ name: 'title', type: 'text', nullable: false }, { name: 'done', type: 'boolean', default: false }, { name: 'rank', type: 'integer' }, { name: 'slug', type: 'text', unique: true }, { name: 'owner_id', type: 'integer', default: '$auth.id' }] },
  });
  ok(table, 201);
  ok(await t.req('POST', `/projects/${pid}/tables/${table.body.id}/rls-policies`, { token: owner, body: { name: 'own rows', operation: 'ALL', expression: 'owner_id = $auth.id' } }), 201);
  const key = await t.req('POST', `/projects/${pid}/keys`, { token: owner, body: { name: 'app', permissions: ['select', 'insert', 'update', 'delete', 'function'] } });
  ok(key, 201);
  ok(await t.req('PUT', `/projects/${pid}/functions/hello`, { token: owner, body: { code: HELLO } }), 201);
  const url = `${base}/${pid}`;
  const mailsTo = async (address: string) => {
    await t.services.emailFlows.settle();
    return smtp.messages.filter((m) => m.to.includes(address));
  };
  return {
    pid,
    owner,
    key: key.body.key,
    url,
    client(o) {
      const c = createClient(url, key.body.key, o);
      clients.push(c);
      return c;
    },
    native: (method, path, o = {}) => t.req(method, `/${pid}/${path}`, { body: o.body, headers: o.headers }),
    async lastToken(address) {
      const mails = await mailsTo(address);
      assert.ok(mails.length > 0, `no email to ${address}`);
      const m = /href="([^"]+)"/.exec(mails[mails.length - 1]!.html);
      assert.ok(m);
      const link = new URL(m[1]!.replace(/&amp;/g, '&'));
      return { token: link.searchParams.get('token')!, link };
    },
    mails: async (address) => (await mailsTo(address)).length,
  };
}

/** Records onAuthStateChange events. */
function events(c: SupabaseClient): AuthChangeEvent[] {
  const seen: AuthChangeEvent[] = [];
  c.auth.onAuthStateChange((e) => void seen.push(e));
  return seen;
}
const tick = () => new Promise((r) => setTimeout(r, 20));

/** The README's example, run as written: its code block with the import replaced by the real function. */
async function runReadmeExample(vars: { BASEPLATE_URL: string; PROJECT_ID: string; API_KEY: string }) {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const m = /<!-- supabase-js example: run by test\/api\/supabase-js\.test\.ts -->\s*```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(m, 'the README has the supabase-js example');
  const code = m[1]!.replace(/^import \{ createClient \} from '@supabase\/supabase-js'\n/m, '');
  assert.ok(!code.includes('import '), 'one import, replaced by the real createClient');
  const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor;
  const run = new AsyncFunction('createClient', 'BASEPLATE_URL', 'PROJECT_ID', 'API_KEY', `${code}\nreturn { supabase, session, inserted, todos, greeting };`);
  return run((u: string, k: string) => {
    const c = createClient(u, k);
    clients.push(c);
    return c;
  }, vars.BASEPLATE_URL, vars.PROJECT_ID, vars.API_KEY);
}

await describeEngines(
  'supabase-js compatibility',
  (ctx) => {
    let t: TestApp;
    let base: string;
    let p: Project;

    before(async () => {
      t = ctx();
      base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      p = await project(t, base);
    });
    after(async () => {
      for (const c of clients.splice(0)) await c.auth.stopAutoRefresh();
    });

    test('the README example runs as written: sign-up, sign-in, insert, select under a policy, invoke', async () => {
      const q = await project(t, base);
      // another user's row, which the example's user must not see
      const other = await q.client().auth.signUp({ email: uniqueEmail('other'), password: PASSWORD });
      assert.equal(other.error, null);
      const otherClient = q.client();
      await otherClient.auth.signInWithPassword({ email: other.data.user!.email!, password: PASSWORD });
      assert.equal((await otherClient.from('todos').insert({ title: 'not yours' })).error, null);
      const out = await runReadmeExample({ BASEPLATE_URL: base, PROJECT_ID: q.pid, API_KEY: q.key });
      assert.match(out.session.access_token, /^[0-9a-f]{64}$/);
      assert.equal(out.inserted.title, 'Write the docs');
      assert.deepEqual(out.todos.map((r: any) => r.title), ['Write the docs']);
      assert.equal(out.todos[0].owner_id, Number(out.session.user.id));
      assert.deepEqual({ hello: out.greeting.hello, user: out.greeting.user }, { hello: 'Ada', user: 'ada@example.com' });
      // the example signs out at the end: its token is dead on the native door too
      expectError(await q.native('GET', 'auth/user', { headers: { 'x-user-token': out.session.access_token } }), 401);
    });

    test('data: every postgrest-js call through supabase.from, as the signed-in user and as anonymous', async () => {
      const c = p.client();
      const email = uniqueEmail('data');
      const up = await c.auth.signUp({ email, password: PASSWORD });
      assert.equal(up.error, null);
      const me = Number(up.data.user!.id);
      const one = await c.from('todos').insert({ title: 'first', rank: 1, slug: 'first' }).select().single();
      assert.equal(one.error, null, JSON.stringify(one.error));
      assert.equal(one.status, 201);
      assert.equal(one.data.owner_id, me, 'the session token reached $auth.id');
      const bulk = await c.from('todos').insert([{ title: 'second', rank: 2, slug: 'second' }, { title: 'third', rank: 3, slug: 'third', done: true }]);
      assert.equal(bulk.error, null);
      const sel = await c.from('todos').select('title, rank', { count: 'exact' }).gte('rank', 1).order('rank', { ascending: false }).range(0, 1);
      assert.deepEqual(sel.data, [{ title: 'third', rank: 3 }, { title: 'second', rank: 2 }]);
      assert.equal(sel.count, 3);
      assert.deepEqual((await c.from('todos').select('slug').or('rank.eq.1,done.is.true').order('rank')).data, [{ slug: 'first' }, { slug: 'third' }]);
      assert.deepEqual((await c.from('todos').select('slug').in('slug', ['first', 'third']).ilike('title', '%IR%')).data, [{ slug: 'first' }, { slug: 'third' }]);
      const head = await c.from('todos').select('*', { count: 'exact', head: true });
      assert.equal(head.count, 3);
      assert.equal((await c.from('todos').select('*', { count: 'planned', head: true })).count, 3);
      assert.equal((await c.from('todos').select('slug, rank').order('rank').csv()).data, 'slug,rank\nfirst,1\nsecond,2\nthird,3\n');
      // limited writes, a dry run and max-affected, as supabase-js sends them
      const dry = await c.from('todos').update({ title: 'dry' }).gte('rank', 1).select('slug').rollback();
      assert.equal(dry.data?.length, 3);
      // typed for clients created against PostgREST 13; the call is the same
      const capped = await (c.from('todos').update({ title: 'capped' }).gte('rank', 1) as any).maxAffected(2);
      assert.equal(capped.error?.code, 'max_affected_exceeded');
      const limited = await c.from('todos').update({ title: 'top' }).gte('rank', 1).order('rank', { ascending: false }).limit(1).select('slug');
      assert.deepEqual(limited.data, [{ slug: 'third' }]);
      assert.deepEqual((await c.from('todos').select('title').order('rank')).data, [{ title: 'first' }, { title: 'second' }, { title: 'top' }]);
      assert.deepEqual((await c.from('todos').select('slug').eq('slug', 'second').single()).data, { slug: 'second' });
      const none = await c.from('todos').select('slug').eq('slug', 'nope').single();
      assert.equal(none.status, 406);
      assert.equal(none.error?.code, 'not_single');
      assert.equal((await c.from('todos').select('slug').eq('slug', 'nope').maybeSingle()).data, null);
      assert.deepEqual((await c.from('todos').update({ done: true }).eq('slug', 'first').select('slug, done')).data, [{ slug: 'first', done: true }]);
      assert.equal((await c.from('todos').delete().eq('slug', 'second')).status, 204);
      const upsert = await c.from('todos').upsert([{ slug: 'first', title: 'first v2' }, { slug: 'new', title: 'new' }], { onConflict: 'slug' }).select('slug, title').order('slug');
      assert.deepEqual(upsert.data, [{ slug: 'first', title: 'first v2' }, { slug: 'new', title: 'new' }]);
      // errors parse into PostgrestError with Baseplate's code and sentence
      const unknown = await c.from('todos').select('nope');
      assert.equal(unknown.status, 400);
      assert.equal(unknown.error?.code, 'unknown_column');
      assert.match(unknown.error!.message, /nope/);
      const rls = await c.from('todos').insert({ title: 'x', owner_id: me + 1000 });
      assert.equal(rls.status, 403);
      assert.equal(rls.error?.code, 'rls_violation');
      assert.equal((await c.from('todos').delete()).error?.code, 'filter_required');
      const table = await c.from('nosuch').select();
      assert.equal(table.status, 404);
      // anonymous: the key alone (Authorization: Bearer <key>, apikey: <key>); the policy shows nothing
      const anon = p.client();
      assert.deepEqual((await anon.from('todos').select('*')).data, []);
      // the same token, sent natively, sees the same rows
      const token = (await c.auth.getSession()).data.session!.access_token;
      const native = await t.req('GET', `/${p.pid}/rest/todos?select=slug&order=slug`, { headers: { authorization: `Bearer ${p.key}`, 'x-user-token': token } });
      assert.deepEqual(native.body, [{ slug: 'first' }, { slug: 'new' }, { slug: 'third' }]);
    });

    test('data: credentials on the compatibility door (apikey, bearer, other projects)', async () => {
      const c = p.client();
      const { data } = await c.auth.signUp({ email: uniqueEmail('cred'), password: PASSWORD });
      const token = data.session!.access_token;
      await c.from('todos').insert({ title: 'mine', slug: `cred-${token.slice(0, 8)}` });
      const rest = (headers: Record<string, string>) => t.req('GET', `/${p.pid}/rest/v1/todos?select=title`, { headers });
      assert.deepEqual((await rest({ apikey: p.key, authorization: `Bearer ${token}` })).body, [{ title: 'mine' }]);
      // the key in apikey alone, or in Authorization alone: anonymous
      assert.deepEqual((await rest({ apikey: p.key })).body, []);
      assert.deepEqual((await rest({ authorization: `Bearer ${p.key}` })).body, []);
      // where the bearer names no user, X-User-Token does (SPEC 5), as on the native routes
      assert.deepEqual((await rest({ apikey: p.key, 'x-user-token': token })).body, [{ title: 'mine' }]);
      assert.deepEqual((await rest({ authorization: `Bearer ${p.key}`, 'x-user-token': token })).body, [{ title: 'mine' }]);
      assert.deepEqual((await rest({ apikey: p.key, authorization: `Bearer ${p.key}`, 'x-user-token': token })).body, [{ title: 'mine' }]);
      // a user token as the bearer comes first
      const other = (await p.client().auth.signUp({ email: uniqueEmail('cred2'), password: PASSWORD })).data.session!.access_token;
      assert.deepEqual((await rest({ apikey: p.key, authorization: `Bearer ${other}`, 'x-user-token': token })).body, []);
      assert.equal((await t.req('GET', `/${p.pid}/auth/v1/user`, { headers: { apikey: p.key, 'x-user-token': token } })).status, 200);
      // nothing, a user token in apikey, an unknown key, another project's key: 401
      expectError(await rest({}), 401, 'missing_api_key');
      expectError(await rest({ apikey: token, authorization: `Bearer ${token}` }), 401, 'invalid_api_key');
      expectError(await rest({ apikey: 'f'.repeat(64) }), 401, 'invalid_api_key');
      const q = await project(t, base);
      expectError(await rest({ apikey: q.key }), 401, 'invalid_api_key');
      const foreign = q.client();
      assert.equal((await foreign.from('todos').select()).status, 200);
      assert.equal((await createClient(p.url, q.key).from('todos').select()).status, 401);
      // a user token of another project is anonymous
      const { data: qd } = await q.client().auth.signUp({ email: uniqueEmail('foreign'), password: PASSWORD });
      assert.deepEqual((await rest({ apikey: p.key, authorization: `Bearer ${qd.session!.access_token}` })).body, []);
      // and on the auth routes it is no user
      const u = await t.req('GET', `/${p.pid}/auth/v1/user`, { headers: { apikey: p.key, authorization: `Bearer ${qd.session!.access_token}` } });
      assert.equal(u.status, 401);
      assert.equal(u.body.code, 'session_not_found');
    });

    test('the native routes are unchanged, also for a table named v1', async () => {
      const tbl = await t.req('POST', `/projects/${p.pid}/tables`, { token: p.owner, body: { name: 'v1', columns: [{ name: 'x', type: 'integer' }] } });
      assert.equal(tbl.status, 201);
      const h = { authorization: `Bearer ${p.key}` };
      const ins = await t.req('POST', `/${p.pid}/rest/v1`, { headers: h, body: { x: 7 } });
      assert.equal(ins.status, 201);
      const one = await t.req('GET', `/${p.pid}/rest/v1/${ins.body[0]?.id ?? ins.body.id}`, { headers: h });
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.equal(one.body.x, 7);
      assert.equal((await t.req('GET', `/${p.pid}/rest/todos`, { headers: h })).status, 200);
      assert.equal((await t.req('GET', `/${p.pid}/functions/hello`, { headers: h })).status, 200);
    });

    test('auth: signUp, getSession, getUser, signOut and their events; the session fields supabase-js reads', async () => {
      const c = p.client();
      const seen = events(c);
      const email = uniqueEmail('Signup').toUpperCase();
      const up = await c.auth.signUp({ email, password: PASSWORD });
      assert.equal(up.error, null, JSON.stringify(up.error));
      const s = up.data.session!;
      assert.match(s.access_token, /^[0-9a-f]{64}$/, "Baseplate's own opaque token");
      assert.equal(s.token_type, 'bearer');
      assert.ok(s.expires_in > 29 * 24 * 3600 && s.expires_in <= 30 * 24 * 3600);
      assert.ok(Math.abs(s.expires_at! - (Date.now() / 1000 + s.expires_in)) < 5);
      assert.ok(s.refresh_token);
      assert.equal(s.user.email, email.toLowerCase());
      assert.match(s.user.id, /^\d+$/);
      assert.equal(s.user.email_confirmed_at, null);
      assert.equal(s.user.role, null);
      assert.ok(s.user.created_at);
      assert.equal((await c.auth.getSession()).data.session?.access_token, s.access_token);
      const u = await c.auth.getUser();
      assert.equal(u.error, null);
      assert.equal(u.data.user?.id, s.user.id);
      // the owner's role shows
      await t.req('PATCH', `/projects/${p.pid}/end-users/${s.user.id}`, { token: p.owner, body: { role: 'editor' } });
      assert.equal((await c.auth.getUser()).data.user?.role, 'editor');
      // a second session, then signOut (scope global by default) ends both
      const c2 = p.client();
      const si = await c2.auth.signInWithPassword({ email, password: PASSWORD });
      assert.equal(si.error, null);
      assert.equal((await c.auth.signOut()).error, null);
      await tick();
      assert.deepEqual(seen, ['INITIAL_SESSION', 'SIGNED_IN', 'SIGNED_OUT']);
      assert.equal((await c.auth.getSession()).data.session, null);
      for (const token of [s.access_token, si.data.session!.access_token]) expectError(await p.native('GET', 'auth/user', { headers: { 'x-user-token': token } }), 401);
      // getUser with a dead session: AuthSessionMissingError, and supabase-js forgets the session
      const r = await c2.auth.getUser();
      assert.equal(r.data.user, null);
      assert.equal(r.error?.name, 'AuthSessionMissingError');
      assert.equal((await c2.auth.getSession()).data.session, null);
      // scopes local and others
      const a = p.client();
      const b = p.client();
      await a.auth.signInWithPassword({ email, password: PASSWORD });
      await b.auth.signInWithPassword({ email, password: PASSWORD });
      assert.equal((await a.auth.signOut({ scope: 'others' })).error, null);
      assert.equal((await a.auth.getUser()).error, null);
      assert.ok((await b.auth.getUser()).error);
      assert.equal((await a.auth.signOut({ scope: 'local' })).error, null);
      assert.equal((await a.auth.getSession()).data.session, null);
    });

    test('auth: errors parse into AuthError with status, code and the sentence', async () => {
      const c = p.client();
      const email = uniqueEmail('err');
      assert.equal((await c.auth.signUp({ email, password: PASSWORD })).error, null);
      const taken = await c.auth.signUp({ email, password: PASSWORD });
      assert.equal(taken.error?.status, 409);
      assert.equal(taken.error?.code, 'user_already_exists');
      const weak = await p.client().auth.signUp({ email: uniqueEmail('weak'), password: 'short' });
      assert.equal(weak.error?.name, 'AuthWeakPasswordError');
      assert.equal(weak.error?.code, 'weak_password');
      assert.match(weak.error!.message, /password/i);
      const wrong = await p.client().auth.signInWithPassword({ email, password: 'wrong password' });
      assert.equal(wrong.error?.name, 'AuthApiError');
      assert.equal(wrong.error?.status, 401);
      assert.equal(wrong.error?.code, 'invalid_credentials');
      assert.equal(wrong.error?.message, 'The email or password is wrong.');
      // an unknown address answers the same
      const unknown = await p.client().auth.signInWithPassword({ email: uniqueEmail('nobody'), password: 'wrong password' });
      assert.deepEqual([unknown.error?.status, unknown.error?.code, unknown.error?.message], [wrong.error?.status, wrong.error?.code, wrong.error?.message]);
      const badEmail = await p.client().auth.signUp({ email: 'not an address', password: PASSWORD });
      assert.equal(badEmail.error?.status, 422);
      assert.equal(badEmail.error?.code, 'email_address_invalid');
      const meta = await p.client().auth.signUp({ email: uniqueEmail('meta'), password: PASSWORD, options: { data: { plan: 'pro' } } });
      assert.equal(meta.error?.status, 422);
      assert.match(meta.error!.message, /metadata.*not supported/);
      const pkce = await createClient(p.url, p.key, { auth: { flowType: 'pkce' } }).auth.signInWithOtp({ email });
      assert.equal(pkce.error?.status, 422);
      assert.match(pkce.error!.message, /PKCE/);
    });

    test('auth: refresh is refused with the error supabase-js turns into a clean sign-out once the session has expired', async () => {
      const c = p.client();
      const seen = events(c);
      const email = uniqueEmail('refresh');
      const up = await c.auth.signUp({ email, password: PASSWORD });
      // asked early: the error, and supabase-js keeps the still-valid session
      const r = await c.auth.refreshSession();
      assert.equal(r.data.session, null);
      assert.equal(r.error?.code, 'refresh_token_not_found');
      assert.equal(r.error?.status, 400);
      assert.match(r.error!.message, /no refresh tokens/);
      assert.equal((await c.auth.getSession()).data.session?.access_token, up.data.session!.access_token);
      assert.equal((await p.native('GET', 'auth/user', { headers: { 'x-user-token': up.data.session!.access_token } })).status, 200);
      // a session at the end of its 30 days: the refresh supabase-js then tries is refused, and it signs out
      const d = p.client();
      const dSeen = events(d);
      t.clock.advance(-31 * 24 * 3600 * 1000);
      let old;
      try {
        old = await d.auth.signInWithPassword({ email, password: PASSWORD });
      } finally {
        t.clock.advance(31 * 24 * 3600 * 1000);
      }
      assert.equal(old.error, null);
      assert.ok(old.data.session!.expires_at! * 1000 < Date.now());
      const g = await d.auth.getSession();
      assert.equal(g.data.session, null);
      assert.equal(g.error?.code, 'refresh_token_not_found');
      await tick();
      assert.deepEqual(dSeen, ['INITIAL_SESSION', 'SIGNED_IN', 'SIGNED_OUT']);
      assert.deepEqual(seen, ['INITIAL_SESSION', 'SIGNED_IN']);
      expectError(await p.native('GET', 'auth/user', { headers: { 'x-user-token': old.data.session!.access_token } }), 401);
    });

    test('auth: magic link (signInWithOtp) with emailRedirectTo, verifyOtp, single use, no enumeration', async () => {
      const c = p.client();
      const seen = events(c);
      const email = uniqueEmail('magic');
      await p.client().auth.signUp({ email, password: PASSWORD });
      const sent = await c.auth.signInWithOtp({ email, options: { emailRedirectTo: 'https://mobile.example.com/auth/callback?x=1' } });
      assert.deepEqual(sent, { data: { user: null, session: null }, error: null });
      const { token, link } = await p.lastToken(email);
      assert.equal(`${link.origin}${link.pathname}`, 'https://mobile.example.com/auth/callback');
      assert.equal(link.searchParams.get('x'), '1');
      const v = await c.auth.verifyOtp({ token_hash: token, type: 'magiclink' });
      assert.equal(v.error, null, JSON.stringify(v.error));
      assert.match(v.data.session!.access_token, /^[0-9a-f]{64}$/);
      assert.ok(v.data.user?.email_confirmed_at, 'a magic link verifies the address');
      await tick();
      assert.deepEqual(seen, ['INITIAL_SESSION', 'SIGNED_IN']);
      assert.equal((await c.auth.getUser()).data.user?.email, email);
      const again = await p.client().auth.verifyOtp({ token_hash: token, type: 'magiclink' });
      assert.equal(again.error?.code, 'otp_expired');
      assert.equal(again.error?.status, 400);
      // a redirect outside the project's URLs: 422, nothing sent
      const before = await p.mails(email);
      const bad = await c.auth.signInWithOtp({ email, options: { emailRedirectTo: 'https://evil.example.net/' } });
      assert.equal(bad.error?.status, 422);
      assert.equal(bad.error?.code, 'invalid_redirect_url');
      // an unknown address: the same answer, nothing sent (and shouldCreateUser creates nobody)
      const nobody = uniqueEmail('nobody');
      assert.deepEqual(await p.client().auth.signInWithOtp({ email: nobody }), sent);
      assert.equal(await p.mails(nobody), 0);
      assert.equal(await p.mails(email), before);
      // type 'email' takes a magic link too
      await p.client().auth.signInWithOtp({ email });
      const e = await p.client().auth.verifyOtp({ token_hash: (await p.lastToken(email)).token, type: 'email' });
      assert.ok(e.data.session);
    });

    test('auth: resetPasswordForEmail, verifyOtp recovery (PASSWORD_RECOVERY), updateUser password (USER_UPDATED)', async () => {
      const email = uniqueEmail('recover');
      const old = p.client();
      await old.auth.signUp({ email, password: PASSWORD });
      const c = p.client();
      const seen = events(c);
      assert.equal((await c.auth.resetPasswordForEmail(email, { redirectTo: `${SITE}/reset` })).error, null);
      const { token, link } = await p.lastToken(email);
      assert.equal(link.pathname, '/reset');
      const v = await c.auth.verifyOtp({ token_hash: token, type: 'recovery' });
      assert.equal(v.error, null, JSON.stringify(v.error));
      const u = await c.auth.updateUser({ password: 'a brand new password' });
      assert.equal(u.error, null, JSON.stringify(u.error));
      await tick();
      assert.deepEqual(seen, ['INITIAL_SESSION', 'PASSWORD_RECOVERY', 'USER_UPDATED']);
      assert.ok((await old.auth.getUser()).error, 'the new password ended the other sessions');
      assert.equal((await p.client().auth.signInWithPassword({ email, password: 'a brand new password' })).error, null);
      assert.equal((await p.client().auth.signInWithPassword({ email, password: PASSWORD })).error?.code, 'invalid_credentials');
      assert.equal((await p.client().auth.verifyOtp({ token_hash: token, type: 'recovery' })).error?.code, 'otp_expired');
      // an unknown address: the same answer, nothing sent
      const nobody = uniqueEmail('nobody');
      assert.equal((await p.client().auth.resetPasswordForEmail(nobody)).error, null);
      assert.equal(await p.mails(nobody), 0);
    });

    test('auth: updateUser email through the email-change flow; verifyOtp email_change', async () => {
      const c = p.client();
      const email = uniqueEmail('change');
      await c.auth.signUp({ email, password: PASSWORD });
      const next = uniqueEmail('changed');
      const u = await c.auth.updateUser({ email: next }, { emailRedirectTo: `${SITE}/changed` });
      assert.equal(u.error, null, JSON.stringify(u.error));
      assert.equal(u.data.user?.email, email, 'unchanged until the link is used');
      const { token, link } = await p.lastToken(next);
      assert.equal(link.pathname, '/changed');
      const bad = await c.auth.updateUser({ email: uniqueEmail('x') }, { emailRedirectTo: 'https://evil.example.net/' });
      assert.equal(bad.error?.code, 'invalid_redirect_url');
      const both = await c.auth.updateUser({ email: uniqueEmail('x'), password: 'another password' });
      assert.equal(both.error?.status, 422);
      assert.equal(both.error?.code, 'validation_failed', 'the address is not what is wrong');
      const v = await p.client().auth.verifyOtp({ token_hash: token, type: 'email_change' });
      assert.equal(v.error, null);
      assert.equal(v.data.user?.email, next);
      assert.equal(v.data.session, null);
      // as the address's first verification it ended the sessions from before (CONTRACT §10)
      assert.equal((await c.auth.getUser()).error?.name, 'AuthSessionMissingError');
      assert.equal((await p.client().auth.updateUser({ password: 'another password' })).error?.name, 'AuthSessionMissingError');
    });

    test('auth: a session older than 15 minutes sets a password only with current_password', async () => {
      const q = await project(t, base);
      const c = q.client();
      const email = uniqueEmail('reauth');
      await c.auth.signUp({ email, password: PASSWORD });
      t.clock.advance(16 * 60 * 1000);
      const no = await c.auth.updateUser({ password: 'another password' });
      assert.equal(no.error?.status, 403);
      assert.equal(no.error?.code, 'reauthentication_needed');
      const wrong = await c.auth.updateUser({ password: 'another password', current_password: 'not it at all' });
      assert.equal(wrong.error?.code, 'invalid_credentials');
      const yes = await c.auth.updateUser({ password: 'another password', current_password: PASSWORD });
      assert.equal(yes.error, null, JSON.stringify(yes.error));
      assert.equal((await q.client().auth.signInWithPassword({ email, password: 'another password' })).error, null);
      assert.equal((await c.auth.getUser()).error, null, 'the session that changed it lives on');
    });

    test('auth: require_email_confirmation: signUp gives the user only, sign-in waits for verifyOtp signup; resend', async () => {
      const q = await project(t, base, { confirm: true });
      const c = q.client();
      const seen = events(c);
      const email = uniqueEmail('confirm');
      // a bad emailRedirectTo: 422 and nobody registered
      const bad = await c.auth.signUp({ email, password: PASSWORD, options: { emailRedirectTo: 'https://app.example.com.evil.net/' } });
      assert.equal(bad.error?.code, 'invalid_redirect_url');
      assert.equal((await t.req('GET', `/projects/${q.pid}/end-users?email=${encodeURIComponent(email)}`, { token: q.owner })).body.length, 0);
      const up = await c.auth.signUp({ email, password: PASSWORD, options: { emailRedirectTo: `${SITE}/welcome` } });
      assert.equal(up.error, null, JSON.stringify(up.error));
      assert.equal(up.data.session, null);
      assert.equal(up.data.user?.email, email);
      assert.equal(up.data.user?.email_confirmed_at, null);
      const first = await q.lastToken(email);
      assert.equal(first.link.pathname, '/welcome');
      const early = await c.auth.signInWithPassword({ email, password: PASSWORD });
      assert.equal(early.error?.status, 403);
      assert.equal(early.error?.code, 'email_not_confirmed');
      assert.equal((await c.auth.resend({ type: 'signup', email, options: { emailRedirectTo: `${SITE}/again` } })).error, null);
      const second = await q.lastToken(email);
      assert.equal(second.link.pathname, '/again');
      assert.notEqual(second.token, first.token);
      const v = await c.auth.verifyOtp({ token_hash: second.token, type: 'signup' });
      assert.equal(v.error, null, JSON.stringify(v.error));
      assert.ok(v.data.user?.email_confirmed_at);
      assert.equal(v.data.session, null);
      const si = await c.auth.signInWithPassword({ email, password: PASSWORD });
      assert.equal(si.error, null, 'the confirmed registration keeps its password');
      await tick();
      assert.deepEqual(seen, ['INITIAL_SESSION', 'SIGNED_IN']);
      const ec = await c.auth.resend({ type: 'email_change', email });
      assert.equal(ec.error?.status, 422);
    });

    test('functions.invoke reaches the function service with the user and the function permission', async () => {
      const c = p.client();
      const anon = await c.functions.invoke('hello', { body: { name: 'Anon' } });
      assert.equal(anon.error, null);
      assert.equal(anon.data.hello, 'Anon');
      assert.equal(anon.data.user, null);
      assert.equal(anon.data.method, 'POST');
      for (const h of ['apikey', 'authorization', 'x-user-token', 'cookie']) assert.equal(anon.data.headers[h], undefined, `${h} stays with the service`);
      const email = uniqueEmail('fn');
      await c.auth.signUp({ email, password: PASSWORD });
      const as = await c.functions.invoke('hello/sub/path?x=1', { method: 'GET', headers: { 'x-custom': 'yes' } });
      assert.equal(as.error, null, String(as.error));
      assert.deepEqual([as.data.user, as.data.method, as.data.path, as.data.headers['x-custom']], [email, 'GET', '/sub/path', 'yes']);
      const missing = await c.functions.invoke('nosuch');
      assert.equal(missing.error?.name, 'FunctionsHttpError');
      assert.equal((missing.error as any).context.status, 404);
      // a key without the function permission: 403
      const key = await t.req('POST', `/projects/${p.pid}/keys`, { token: p.owner, body: { name: 'data only', permissions: ['select'] } });
      const res = await createClient(p.url, key.body.key).functions.invoke('hello');
      assert.equal((res.error as any).context.status, 403);
      assert.equal((await (res.error as any).context.json()).code, 'insufficient_permission');
    });

    test('rpc, storage and realtime answer 404 naming the feature as unsupported', async () => {
      const c = p.client();
      const rpc = await c.rpc('do_something', { a: 1 });
      assert.equal(rpc.status, 404);
      assert.equal(rpc.error?.code, 'not_supported');
      assert.match(rpc.error!.message, /rpc.*not supported/);
      assert.doesNotMatch(rpc.error!.message, /table/i);
      const st = await c.storage.from('avatars').list();
      assert.ok(st.error);
      assert.match(st.error!.message, /Storage.*not supported/);
      for (const path of ['realtime/v1/websocket?apikey=x&vsn=1.0.0', 'storage/v1/bucket', 'graphql/v1', 'auth/v1/factors', 'auth/v1/authorize?provider=github', 'rest/v1/rpc/f']) {
        const res = await t.req('GET', `/${p.pid}/${path}`, { headers: { apikey: p.key } });
        expectError(res, 404, 'not_supported');
      }
      // the auth and data doors check the key first, as their other routes do
      for (const path of ['auth/v1/factors', 'auth/v1/admin/users', 'rest/v1/rpc/f']) {
        for (const [pid, headers] of [[p.pid, {}], [p.pid, { apikey: 'f'.repeat(64) }], ['aaaaaaaaaaaaaaaa', { apikey: p.key }]] as const)
          assert.equal((await t.req('GET', `/${pid}/${path}`, { headers })).status, 401, `${pid}/${path} ${JSON.stringify(headers)}`);
      }
      // a feature's name is never read off Object.prototype
      for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        const err = expectError(await t.req('GET', `/${p.pid}/auth/v1/${name}`, { headers: { apikey: p.key } }), 404, 'not_supported');
        assert.doesNotMatch(err.message, /native code|function/, name);
      }
      const mfa = await c.auth.mfa.listFactors();
      assert.ok(mfa.error || mfa.data, 'listFactors reads the local session only');
    });

    test('bad input: a clear 4xx in the shape supabase-js expects, nothing changed', async () => {
      const h = { apikey: p.key };
      const post = (path: string, body: unknown, headers: Record<string, string> = h) => t.req('POST', `/${p.pid}/auth/v1/${path}`, { body, headers });
      const email = uniqueEmail('bad');
      const cases: Array<[string, Promise<any>, number, string]> = [
        ['no grant type', post('token', { email, password: PASSWORD }), 400, 'unsupported_grant_type'],
        ['an unknown grant type', post('token?grant_type=client_credentials', {}), 400, 'unsupported_grant_type'],
        ['a refresh token', post('token?grant_type=refresh_token', { refresh_token: 'baseplate-issues-no-refresh-tokens' }), 400, 'refresh_token_not_found'],
        ['pkce grant', post('token?grant_type=pkce', { auth_code: 'x', code_verifier: 'y' }), 400, 'unsupported_grant_type'],
        ['password grant without a password', post('token?grant_type=password', { email }), 422, 'validation_failed'],
        ['password grant with a typo', post('token?grant_type=password', { emial: email, password: PASSWORD }), 422, 'unknown_field'],
        ['phone sign-in', post('token?grant_type=password', { phone: '+15550100', password: PASSWORD }), 422, 'validation_failed'],
        ['phone sign-up', post('signup', { phone: '+15550100', password: PASSWORD }), 422, 'validation_failed'],
        ['sign-up without an email', post('signup', { password: PASSWORD }), 422, 'validation_failed'],
        ['an unknown OTP type', post('verify', { type: 'invite', token_hash: 'a'.repeat(64) }), 422, 'validation_failed'],
        ['an OTP code instead of token_hash', post('verify', { type: 'email', email, token: '123456' }), 422, 'validation_failed'],
        ['a bad token', post('verify', { type: 'signup', token_hash: 'a'.repeat(64) }), 400, 'otp_expired'],
        ['a malformed token', post('verify', { type: 'magiclink', token_hash: 'nope' }), 400, 'otp_expired'],
        ['otp without an email', post('otp', {}), 422, 'validation_failed'],
        ['resend of an unknown type', post('resend', { type: 'sms', email }), 422, 'validation_failed'],
        ['logout with an unknown scope', post('logout?scope=everyone', undefined, { ...h, authorization: `Bearer ${'a'.repeat(64)}` }), 422, 'validation_failed'],
        ['logout without a user', post('logout', undefined), 401, 'session_not_found'],
        ['no key at all', post('otp', { email }, {}), 401, 'missing_api_key'],
        ['a user token in apikey', post('otp', { email }, { apikey: 'b'.repeat(64) }), 401, 'invalid_api_key'],
        ['a malformed body', t.req('POST', `/${p.pid}/auth/v1/signup`, { rawBody: '{', headers: h }), 400, 'invalid_json'],
      ];
      for (const [what, res, status, code] of cases) {
        const r = await res;
        assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.code, code, what);
        assert.equal(typeof r.body.message, 'string', what);
        if (status !== 400 || code !== 'invalid_json') assert.equal(r.headers['x-supabase-api-version'], '2024-01-01', what);
      }
      // the key is checked before the body: an unauthenticated caller learns nothing about schemas
      expectError(await post('signup', { nonsense: true }, { apikey: 'c'.repeat(64) }), 401, 'invalid_api_key');
      // another project's key on this project's auth routes
      const q = await project(t, base);
      expectError(await post('signup', { email, password: PASSWORD }, { apikey: q.key }), 401, 'invalid_api_key');
      expectError(await t.req('POST', `/nosuchprojectid0/auth/v1/signup`, { body: { email, password: PASSWORD }, headers: h }), 401);
      // a browser's preflight allows the headers supabase-js sends, and exposes the version header auth-js reads
      const pre = await t.req('OPTIONS', `/${p.pid}/auth/v1/token?grant_type=password`, { headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } });
      assert.equal(pre.status, 204);
      for (const hdr of ['apikey', 'authorization', 'x-client-info', 'x-supabase-api-version']) assert.match(String(pre.headers['access-control-allow-headers']), new RegExp(`\\b${hdr}\\b`));
      assert.match(String(pre.headers['access-control-expose-headers']), /X-Supabase-Api-Version/);
      // nothing was registered by any of it
      assert.equal((await t.req('GET', `/projects/${p.pid}/end-users?email=${encodeURIComponent(email)}`, { token: p.owner })).body.length, 0);
      assert.equal(await p.mails(email), 0);
    });

    test('the email rate limit and the login throttle are the native ones, shared by both doors', async () => {
      const q = await project(t, base);
      const email = uniqueEmail('limit');
      await q.client().auth.signUp({ email, password: PASSWORD });
      // 5 per recipient per hour: 3 through the native door, 2 through supabase-js, then 429
      for (let i = 0; i < 3; i++) assert.equal((await q.native('POST', 'auth/magic-link', { body: { email } })).status, 200);
      for (let i = 0; i < 2; i++) assert.equal((await q.client().auth.signInWithOtp({ email })).error, null);
      const over = await q.client().auth.resetPasswordForEmail(email);
      assert.equal(over.error?.status, 429);
      assert.equal(over.error?.code, 'over_email_send_rate_limit');
      expectError(await q.native('POST', 'auth/password/forgot', { body: { email } }), 429);
      // unknown addresses count the same (no enumeration through the limit)
      const nobody = uniqueEmail('nobody');
      for (let i = 0; i < 5; i++) assert.equal((await q.client().auth.signInWithOtp({ email: nobody })).error, null);
      assert.equal((await q.client().auth.signInWithOtp({ email: nobody })).error?.status, 429);
      // 10 failed logins per email and client in 15 minutes
      for (let i = 0; i < 10; i++) assert.equal((await q.client().auth.signInWithPassword({ email, password: 'wrong password' })).error?.status, 401);
      const locked = await q.client().auth.signInWithPassword({ email, password: PASSWORD });
      assert.equal(locked.error?.status, 429);
      assert.equal(locked.error?.code, 'over_request_rate_limit');
      expectError(await q.native('POST', 'auth/login', { body: { email, password: PASSWORD } }), 429);
    });
  },
  { EMAIL_ALLOW_PRIVATE_HOSTS: 'true' },
  { mailers },
);
