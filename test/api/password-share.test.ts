// Anyone who knows a project's id may make it hash a password (sign-up and login need no key), and
// hashing runs on the few threads of libuv's pool the whole process shares. Each project hashes
// within its share of PASSWORD_HASH_CONCURRENCY (services/password-share.ts): a flood against one
// project queues behind itself, or is refused 503, while another project's users log in. Nothing
// here measures time: the order in which answers arrive is what the share decides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeEngines, createProject, expectError, registerAccount, uniqueEmail, type Reply, type TestApp } from '../support/app.ts';
import { startServer } from '../support/server-process.ts';

async function projectWithUser(t: TestApp) {
  const { token } = await registerAccount(t);
  const { id: pid } = await createProject(t, token, 'passwords');
  const user = { email: uniqueEmail('end'), password: 'a long password' };
  const res = await t.req('POST', `/${pid}/auth/register`, { body: user });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { pid, user };
}

const signUp = (t: TestApp, pid: string) => t.req('POST', `/${pid}/auth/register`, { body: { email: uniqueEmail('flood'), password: 'a long password' } });

// hashes of about 0.2 s each here, three at a time: a project's share is two
await describeEngines(
  'password hashing is shared fairly among projects',
  (ctx) => {
    test("another project's login answers while a flood of sign-ups against one project is still being hashed", async () => {
      const t = ctx();
      const A = await projectWithUser(t);
      const B = await projectWithUser(t);
      const pending = new Set<number>();
      const flood = Array.from({ length: 12 }, (_, i) => {
        pending.add(i);
        return signUp(t, A.pid).finally(() => pending.delete(i));
      });
      try {
        // A holds its two slots; B's check takes the third instead of queueing behind A's twelve
        const login = await t.req('POST', `/${B.pid}/auth/login`, { body: B.user });
        assert.equal(login.status, 200, JSON.stringify(login.body));
        assert.ok(pending.size >= 6, `B's login answered with ${pending.size} of A's 12 sign-ups left (at most 2 at a time)`);
      } finally {
        for (const res of await Promise.all(flood)) assert.equal(res.status, 201, JSON.stringify(res.body));
      }
    });
  },
  { ARGON2_TIME_COST: '4', ARGON2_MEMORY_KIB: '65536', PASSWORD_HASH_CONCURRENCY: '3' },
);

// cheap hashes, one at a time: a project's queue fills
await describeEngines(
  'a flood of sign-ups beyond a project queue is refused and changes nothing',
  (ctx, kind) => {
    test('sign-ups beyond the queue get 503 project_busy with Retry-After, create no user, and another project logs in meanwhile', async () => {
      const t = ctx();
      const A = await projectWithUser(t);
      const B = await projectWithUser(t);
      const before = (await t.engine.project(A.pid).then((db) => db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${db.t('_bp_users')}`)))!.n;
      const flood = Array.from({ length: 120 }, () => signUp(t, A.pid));
      const login = await t.req('POST', `/${B.pid}/auth/login`, { body: B.user });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      const answers: Reply[] = await Promise.all(flood);
      const created = answers.filter((r) => r.status === 201).length;
      const refused = answers.filter((r) => r.status !== 201);
      assert.ok(refused.length > 0, 'a queue of 64 and one running hash leave some of 120 refused');
      for (const r of refused) {
        expectError(r, 503, 'project_busy');
        assert.equal(r.headers['retry-after'], '1');
      }
      // (PostgreSQL: the sign-up's first look-up, the project's email settings, waits in the
      // project's share of the pool first, whose queue refuses its own overflow)
      if (kind === 'sqlite') assert.ok(refused.every((r) => /password checks/.test(r.body.message)), refused[0]?.body.message);
      const after = (await t.engine.project(A.pid).then((db) => db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${db.t('_bp_users')}`)))!.n;
      assert.equal(Number(after) - Number(before), created, 'a refused sign-up creates no user');
    });

    test("an owner's login has a share of its own: it answers while a project's flood is still being hashed", async () => {
      const t = ctx();
      const owner = await registerAccount(t);
      const A = await projectWithUser(t);
      let pending = 100;
      const flood = Array.from({ length: pending }, () => signUp(t, A.pid).finally(() => pending--));
      const login = await t.req('POST', '/auth/login', { body: { email: owner.account.email, password: owner.password } });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      // about 35 refused at once; of the other 65, one is hashed at a time
      assert.ok(pending >= 30, `the owner's login answered with ${pending} of A's 100 sign-ups left`);
      await Promise.all(flood);
    });
  },
  { PASSWORD_HASH_CONCURRENCY: '2' },
);

test('the service warns at start when PASSWORD_HASH_CONCURRENCY leaves libuv no thread, and not by default', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-hash-warn-'));
  try {
    for (const [env, warned] of [[{}, false], [{ PASSWORD_HASH_CONCURRENCY: '4' }, true], [{ UV_THREADPOOL_SIZE: '8', PASSWORD_HASH_CONCURRENCY: '4' }, false]] as const) {
      const server = await startServer({ DATA_DIR: join(dir, `data-${Object.values(env).join('-')}`), LOG_LEVEL: 'info', ...env });
      try {
        assert.equal(/PASSWORD_HASH_CONCURRENCY \(\d+\) is not below libuv's thread pool/.test(server.output()), warned, `${JSON.stringify(env)}: ${server.output().slice(0, 2000)}`);
      } finally {
        await server.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
