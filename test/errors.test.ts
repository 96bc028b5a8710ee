// The error table (src/error-table.ts) is well-formed, every template renders from the values it
// names, and the error handler turns AppErrors into the flat shape and anything else into an
// opaque 500 that names the request id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { randomUUID } from 'node:crypto';
import { ERRORS, ERROR_SECTIONS } from '../src/error-table.ts';
import { AppError, type AppErrorArgs, type ErrorSpec } from '../src/errors.ts';
import { installErrorHandling } from '../src/http/error-handler.ts';
import { QueryTimeout } from '../src/storage/engine.ts';

const entries = Object.entries(ERRORS) as [AppErrorArgs[0], ErrorSpec][];
const SNAKE = /^[a-z][a-z0-9_]*$/;

/** Every `{{name}}` of an entry's templates. */
function holes(spec: ErrorSpec): string[] {
  const text = JSON.stringify([spec.message, spec.details ?? null, spec.hint ?? null, spec.headers ?? null]);
  return [...new Set([...text.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]!))];
}

/** An error built from the entry with a recognisable sample value in every hole. */
function sample(key: AppErrorArgs[0], spec: ErrorSpec): AppError {
  const values = Object.fromEntries(holes(spec).map((h) => [h, `<${h}>`]));
  return new (AppError as unknown as new (key: string, values: object) => AppError)(key, values);
}

test('no key is defined in two sections of the table (a later one would silently win)', () => {
  const seen = new Map<string, number>();
  ERROR_SECTIONS.forEach((section, i) => {
    for (const key of Object.keys(section)) {
      assert.ok(!seen.has(key), `${key} is in sections ${seen.get(key)} and ${i}`);
      seen.set(key, i);
    }
  });
  assert.equal(seen.size, entries.length);
});

test('every entry: an error status, a snake_case code and variant, a sentence', () => {
  for (const [key, spec] of entries) {
    assert.ok(Number.isInteger(spec.status) && spec.status >= 400 && spec.status <= 599, `${key}: status ${spec.status}`);
    const parts = key.split('.');
    assert.ok(parts.length <= 2 && parts.every((p) => SNAKE.test(p)), `${key}: code or code.variant, snake_case`);
    assert.ok(spec.message.length > 0, `${key}: a message`);
  }
});

test('no two entries say the same thing (one code, status and sentence has one key)', () => {
  const seen = new Map<string, string>();
  for (const [key, spec] of entries) {
    const said = JSON.stringify([key.split('.')[0], spec.status, spec.message, spec.details ?? null, spec.hint ?? null]);
    assert.ok(!seen.has(said), `${key} repeats ${seen.get(said)}`);
    seen.set(said, key);
  }
});

test('a code keeps one status, except where CONTRACT.md fixes two', () => {
  const statuses = new Map<string, Set<number>>();
  for (const [key, spec] of entries) {
    const code = key.split('.')[0]!;
    statuses.set(code, (statuses.get(code) ?? new Set()).add(spec.status));
  }
  const several = [...statuses].filter(([, s]) => s.size > 1).map(([c, s]) => `${c}: ${[...s].sort().join('/')}`);
  assert.deepEqual(several.sort(), [
    'invalid_credentials: 401/403', // wrong password at login; wrong current_password when authenticated (§1)
    'invalid_token: 400/401', // a spent emailed token (§6); a platform credential
    'unknown_column: 400/422', // a query or row names it (§5); a table change names it in a field (§3)
  ]);
});

test('every template renders from the values it names: no hole is left, every value shows', () => {
  for (const [key, spec] of entries) {
    const err = sample(key, spec);
    const rendered = JSON.stringify([err.message, err.details, err.hint, err.headers]);
    assert.doesNotMatch(rendered, /\{\{|\}\}/, `${key}: ${rendered}`);
    for (const h of holes(spec)) assert.ok(rendered.includes(`<${h}>`), `${key}: the value of ${h} shows`);
    assert.equal(err.status, spec.status);
    assert.equal(err.code, key.split('.')[0]);
    assert.deepEqual(Object.keys(err.toJSON()), ['code', 'message', 'details', 'hint']);
  }
});

test('details: a hole alone keeps its JSON type, an undefined value drops its key, a 401 asks for a Bearer credential', () => {
  const withPosition = new AppError('invalid_filter', { param: 'a', text: 'eq.', reason: 'missing_value', position: 3 });
  assert.deepEqual(withPosition.details, { param: 'a', text: 'eq.', reason: 'missing_value', position: 3 });
  assert.equal(withPosition.message, "The filter 'a' is malformed (missing_value).");
  const without = new AppError('invalid_filter', { param: 'a', text: 'eq.', reason: 'missing_value', position: undefined });
  assert.deepEqual(without.details, { param: 'a', text: 'eq.', reason: 'missing_value' });
  assert.equal(new AppError('not_single', { rows: 2 }).details, 'The result contains 2 rows');
  assert.equal(new AppError('not_found', { what: 'table' }).details, null);
  assert.deepEqual(new AppError('invalid_api_key').headers, { 'WWW-Authenticate': 'Bearer' });
  assert.deepEqual(new AppError('rate_limited', { retry_after: 7 }).headers, { 'Retry-After': '7' });
});

async function appThrowing(error: unknown) {
  const app = Fastify({ genReqId: () => randomUUID() });
  installErrorHandling(app);
  let id = '';
  app.get('/boom', async (req) => {
    id = req.id;
    throw error;
  });
  const res = await app.inject({ method: 'GET', url: '/boom' });
  await app.close();
  return { res, body: res.json(), id };
}

test('an unknown thrown error is an opaque 500 naming the request id, never its message or stack', async () => {
  const unknown = [
    new Error('relation "p_1._bp_tables" does not exist: SELECT * FROM secret'),
    new TypeError("Cannot read properties of undefined (reading 'x')"),
    Object.assign(new Error('upstream said no'), { statusCode: 502 }),
  ];
  for (const err of unknown) {
    const { res, body, id } = await appThrowing(err);
    assert.equal(res.statusCode, 500);
    assert.deepEqual(body, { code: 'internal_error', message: `An unexpected error occurred (request id ${id}).`, details: { request_id: id }, hint: null });
  }
});

test('an AppError leaves as itself, a database failure too, in the flat shape with its headers', async () => {
  const { res, body } = await appThrowing(new AppError('missing_api_key'));
  assert.equal(res.statusCode, 401);
  assert.equal(res.headers['www-authenticate'], 'Bearer');
  assert.deepEqual(body, { code: 'missing_api_key', message: 'A project API key is required (Authorization: Bearer <key>).', details: null, hint: null });
  const timeout = await appThrowing(new QueryTimeout());
  assert.equal(timeout.res.statusCode, 503);
  assert.deepEqual(timeout.body, {
    code: 'query_timeout',
    message: 'The database cancelled the query because it ran longer than the statement timeout.',
    details: null,
    hint: 'Narrow the filter or add an index.',
  });
});
