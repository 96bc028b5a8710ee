// Route validators are Fastify's own ajv validators, built on a route's first request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { lazyValidators } from '../../src/http/lazy-validators.ts';

test('a route validates its body as before, with the errors Fastify reads, once it is first called', async () => {
  const app = Fastify({ ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: lazyValidators() } } });
  app.addSchema({ $id: 'Name', type: 'string', minLength: 2 });
  app.post('/a', { schema: { body: Type.Object({ name: Type.Ref('Name') }, { additionalProperties: false }) } }, async (req) => req.body);
  await app.ready();
  const ok = await app.inject({ method: 'POST', url: '/a', payload: { name: 'ab' } });
  assert.deepEqual([ok.statusCode, ok.json()], [200, { name: 'ab' }]);
  const short = await app.inject({ method: 'POST', url: '/a', payload: { name: 'a' } });
  assert.equal(short.statusCode, 400);
  assert.match(short.json().message, /must NOT have fewer than 2 characters/);
  const extra = await app.inject({ method: 'POST', url: '/a', payload: { name: 'ab', x: 1 } });
  assert.match(extra.json().message, /must NOT have additional properties/);
  await app.close();
});

test('nothing is compiled until a route is called', () => {
  let compiled = 0;
  const build = lazyValidators() as unknown as (e: unknown, o: unknown) => (route: unknown) => (data: unknown) => unknown;
  const validatorFor = build({}, { customOptions: {} });
  const route = { schema: { get type() { compiled++; return 'object'; } }, method: 'POST', url: '/x', httpPart: 'body' };
  const validate = validatorFor(route);
  assert.equal(compiled, 0);
  assert.equal(validate({}), true);
  assert.ok(compiled > 0);
});
