// A typed client generated from the live /openapi.json (issue [H]): openapi-typescript writes the
// types, tsc type-checks a small client program against them, and the program runs through
// openapi-fetch against a listening server, on every engine: register, login, project, table, key,
// an end user, insert and select through the passthrough. A spec with a wrong field name, type,
// status or parameter fails the type-check or the run; a program that misuses the API is refused by
// tsc (the types are precise, not `any`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import openapiTS, { astToString } from 'baseplate-openapi-typegen';
import { describeEngines, uniqueEmail } from '../support/app.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules/.bin/tsc');

/** The client program: every value it reads is typed by the generated `paths`. */
const PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths, components } from './api.ts';

type Table = components['schemas']['Table'];
type Row = components['schemas']['Row'];

function must<T>(r: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (r.data === undefined) throw new Error(what + ': ' + r.response.status + ' ' + JSON.stringify(r.error));
  return r.data;
}

export async function run(baseUrl: string, email: string) {
  const client = createClient<paths>({ baseUrl });
  const registered = must(await client.POST('/auth/register', { body: { name: 'Typed', email, password: 'typed password' } }), 'register');
  const accountId: string = registered.account.id;
  const login = must(await client.POST('/auth/login', { body: { email, password: 'typed password' } }), 'login');
  const auth = { Authorization: 'Bearer ' + login.token };
  const wrong = await client.POST('/auth/login', { body: { email, password: 'not the password' } });
  const wrongCode: string | undefined = wrong.error?.code;

  const project = must(await client.POST('/projects', { headers: auth, body: { name: 'Typed project' } }), 'project');
  const created: string = project.created_at;
  const table: Table = must(
    await client.POST('/projects/{id}/tables', {
      headers: auth,
      params: { path: { id: project.id } },
      body: { name: 'todos', columns: [{ name: 'title', type: 'text' }, { name: 'done', type: 'boolean', default: false }] },
    }),
    'table',
  );
  const key = must(
    await client.POST('/projects/{id}/keys', { headers: auth, params: { path: { id: project.id } }, body: { name: 'app', permissions: ['select', 'insert'] } }),
    'key',
  );
  const secret: string = key.key;

  const registeredUser = must(
    await client.POST('/{project_id}/auth/register', { params: { path: { project_id: project.id } }, body: { email: 'u-' + email, password: 'user password' } }),
    'end user',
  );
  const userToken = registeredUser.token;
  if (userToken === null) throw new Error('a session was expected');
  const asUser = { Authorization: 'Bearer ' + secret, 'X-User-Token': userToken };

  const inserted = must(
    await client.POST('/{project_id}/rest/{table}', {
      headers: asUser,
      params: { path: { project_id: project.id, table: table.name } },
      body: [{ title: 'typed one' }, { title: 'typed two', done: true }],
    }),
    'insert',
  );
  const read = await client.GET('/{project_id}/rest/{table}', {
    headers: asUser,
    params: { path: { project_id: project.id, table: table.name }, query: { select: 'id,title', order: 'id.asc', filters: { title: 'like.*one' } }, header: { Prefer: 'count=exact' } },
    querySerializer: { object: { style: 'form', explode: true } },
  });
  // the route answers text/csv too (with Accept: text/csv): a typed client narrows to the JSON rows
  const body = must(read, 'select');
  if (typeof body === 'string') throw new Error('CSV without asking for it');
  const rows: Row | Row[] = body;

  // the owner's view of the same rows as that end user, and the simulator's explanation
  const ownerPath = { id: project.id, table_id: table.id };
  const asEndUser = 'end_user:' + registeredUser.user.id;
  const seenAsUser = must(await client.GET('/projects/{id}/tables/{table_id}/rows', { headers: auth, params: { path: ownerPath, query: { as: asEndUser, select: 'title', order: 'id' } } }), 'owner rows');
  const simulation = must(
    await client.POST('/projects/{id}/tables/{table_id}/simulate', { headers: auth, params: { path: ownerPath }, body: { as: asEndUser, operation: 'update', row_ids: [1], values: { done: true } } }),
    'simulate',
  );
  const first = simulation.rows[0];
  const explained: { allowed: boolean; open: boolean | undefined; reason: string; callerId: number | undefined } = {
    allowed: first.allowed,
    open: first.stages.check?.open,
    reason: first.reason,
    callerId: simulation.auth?.id,
  };
  return {
    accountId,
    wrongStatus: wrong.response.status,
    wrongCode,
    created,
    columns: table.columns.map((c) => c.name + ':' + c.type),
    keyPrefix: key.key_prefix,
    secretLength: secret.length,
    inserted: Array.isArray(inserted) ? inserted.length : 1,
    rows,
    contentRange: read.response.headers.get('content-range'),
    seenAsUser,
    simulated: { operation: simulation.operation, stages: simulation.stages, after: first.after, ...explained },
    userId: registeredUser.user.id,
  };
}
`;

/** Programs tsc must refuse: a field the API does not have, a wrong body, a wrong path parameter. */
const MISUSES: Record<string, string> = {
  'an unknown response field': "const r = await client.POST('/projects', { body: { name: 'x' } }); if (r.data) r.data.owner_id.toString();",
  'a body field of the wrong type': "await client.POST('/projects/{id}/keys', { params: { path: { id: 'p' } }, body: { name: 'k', permissions: 'select' } });",
  'a missing path parameter': "await client.GET('/projects/{id}/tables/{table_id}', { params: { path: { id: 'p' } } });",
  'a simulation field the API does not have':
    "const r = await client.POST('/projects/{id}/tables/{table_id}/simulate', { params: { path: { id: 'p', table_id: 't' } }, body: { as: 'anonymous', operation: 'SELECT' } }); if (r.data) r.data.rows[0].visible.toString();",
  'a column type the API does not have': "await client.POST('/projects/{id}/tables', { params: { path: { id: 'p' } }, body: { name: 't', columns: [{ name: 'a', type: 'varchar' }] } });",
};

function tsc(dir: string): { ok: boolean; output: string } {
  const res = spawnSync(TSC, ['-p', join(dir, 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 });
  return { ok: res.status === 0, output: `${res.stdout}${res.stderr}` };
}

function project(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const compilerOptions = { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', allowImportingTsExtensions: true, skipLibCheck: true, types: [] };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}

await describeEngines('typed client from /openapi.json', (ctx) => {
  test('openapi-typescript types type-check a client program that runs through openapi-fetch against the server', async () => {
    const t = ctx();
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    // inside the repository (.tmp/ is ignored) so that the program resolves openapi-fetch
    const dir = join(ROOT, '.tmp', `openapi-client-${randomUUID()}`);
    try {
      const doc = await (await fetch(`${address}/openapi.json`)).json();
      const types = astToString(await openapiTS(doc));
      project(dir, { 'api.ts': types, 'client.ts': PROGRAM, 'package.json': '{ "type": "module" }' });
      const checked = tsc(dir);
      assert.ok(checked.ok, `the client program type-checks against the generated types:\n${checked.output}`);

      const { run } = (await import(pathToFileURL(join(dir, 'client.ts')).href)) as { run: (base: string, email: string) => Promise<any> };
      const out = await run(address, uniqueEmail('typed'));
      assert.match(out.accountId, /\S/);
      assert.equal(out.wrongStatus, 401);
      assert.equal(out.wrongCode, 'invalid_credentials');
      assert.ok(!Number.isNaN(Date.parse(out.created)));
      assert.deepEqual(out.columns, ['id:integer', 'title:text', 'done:boolean']);
      assert.match(out.keyPrefix, /^[0-9a-f]{8}$/);
      assert.equal(out.secretLength, 64);
      assert.equal(out.inserted, 2);
      assert.deepEqual(out.rows, [{ id: 1, title: 'typed one' }], 'the select returns the inserted row the filter keeps');
      assert.equal(out.contentRange, '0-0/1');
      assert.deepEqual(out.seenAsUser, [{ title: 'typed one' }, { title: 'typed two' }], 'the owner reads as the end user (no policy: every row)');
      assert.deepEqual(out.simulated, {
        operation: 'UPDATE',
        stages: ['select', 'update', 'check'],
        after: { id: 1, title: 'typed one', done: true },
        allowed: true,
        open: true,
        reason: 'Allowed: no SELECT policy is enabled; no UPDATE policy is enabled; no UPDATE policy is enabled.',
        callerId: out.userId,
      });

      // a spec that lies about a field fails the same program
      const lying = structuredClone(doc);
      delete lying.components.schemas.Project.properties.created_at;
      lying.components.schemas.Project.required = lying.components.schemas.Project.required.filter((f: string) => f !== 'created_at');
      const lie = join(dir, 'lying-spec');
      project(lie, { 'api.ts': astToString(await openapiTS(lying)), 'client.ts': PROGRAM, 'package.json': '{ "type": "module" }' });
      assert.match(tsc(lie).output, /client\.ts\(\d+,\d+\): error TS\d+: Property 'created_at' does not exist/, 'a spec without created_at fails the program');

      for (const [what, misuse] of Object.entries(MISUSES)) {
        const bad = join(dir, `misuse-${Object.keys(MISUSES).indexOf(what)}`);
        const body = `import createClient from 'openapi-fetch';\nimport type { paths } from '../api.ts';\nconst client = createClient<paths>({ baseUrl: 'http://x' });\n${misuse}\n`;
        project(bad, { 'misuse.ts': body, 'package.json': '{ "type": "module" }' });
        const refused = tsc(bad);
        assert.equal(refused.ok, false, `tsc refuses ${what}`);
        assert.match(refused.output, /misuse\.ts\(\d+,\d+\): error TS\d+/, `${what}: refused for the program's own line`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
