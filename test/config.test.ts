// Settings are validated once, with a message naming the setting and what it accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../src/config.ts';

test('SQLITE_OPEN_PROJECTS: unset or empty is the engine default (null), a whole number from 1 is taken, anything else refused', () => {
  assert.equal(loadConfig({}).sqliteOpenProjects, null);
  assert.equal(loadConfig({ SQLITE_OPEN_PROJECTS: '' }).sqliteOpenProjects, null);
  assert.equal(loadConfig({ SQLITE_OPEN_PROJECTS: '5000' }).sqliteOpenProjects, 5000);
  for (const bad of ['many', '-1', '1.5', '1e3', ' 10'])
    assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: bad }), { message: `SQLITE_OPEN_PROJECTS must be a whole number, got '${bad}'` });
  assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: '0' }), { message: 'SQLITE_OPEN_PROJECTS must be between 1 and 1000000, got 0' });
  assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: '1000001' }), { message: 'SQLITE_OPEN_PROJECTS must be between 1 and 1000000, got 1000001' });
});

test('switches (GUESSED_READS, EMAIL_ALLOW_PRIVATE_HOSTS): unset or empty is the default, true/1 and false/0 are taken, anything else refused', () => {
  assert.equal(loadConfig({}).guessedReads, true);
  assert.equal(loadConfig({}).email.allowPrivateHosts, false);
  for (const [raw, value] of [['', true], ['true', true], ['1', true], ['false', false], ['0', false]] as const) assert.equal(loadConfig({ GUESSED_READS: raw }).guessedReads, value);
  assert.equal(loadConfig({ EMAIL_ALLOW_PRIVATE_HOSTS: 'true' }).email.allowPrivateHosts, true);
  for (const bad of ['yes', 'on', 'TRUE', ' true'])
    for (const name of ['GUESSED_READS', 'EMAIL_ALLOW_PRIVATE_HOSTS']) assert.throws(() => loadConfig({ [name]: bad }), { message: `${name} must be true or false, got '${bad}'` });
});

test('METRICS: on by default, true/false/1/0, anything else refused; METRICS_TOKEN: 16 to 1024 printable characters without spaces', () => {
  assert.deepEqual(loadConfig({}).metrics, { enabled: true, token: null });
  for (const [raw, enabled] of [['true', true], ['1', true], ['false', false], ['0', false], ['', true]] as const) assert.equal(loadConfig({ METRICS: raw }).metrics.enabled, enabled, raw);
  for (const bad of ['yes', 'off', 'TRUE', ' true']) assert.throws(() => loadConfig({ METRICS: bad }), { message: `METRICS must be true or false, got '${bad}'` });
  const token = 'a'.repeat(16);
  assert.equal(loadConfig({ METRICS_TOKEN: token }).metrics.token, token);
  assert.equal(loadConfig({ METRICS_TOKEN: '' }).metrics.token, null);
  for (const bad of ['a'.repeat(15), 'a'.repeat(1025), `${token} b`, `${token}\n`, `${token}é`])
    assert.throws(() => loadConfig({ METRICS_TOKEN: bad }), { message: 'METRICS_TOKEN must be 16 to 1024 printable characters without spaces' });
});

test('SHUTDOWN_TIMEOUT_MS: 30 s by default, 100 ms to an hour', () => {
  assert.equal(loadConfig({}).shutdownTimeoutMs, 30000);
  assert.equal(loadConfig({ SHUTDOWN_TIMEOUT_MS: '5000' }).shutdownTimeoutMs, 5000);
  assert.throws(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: '50' }), { message: 'SHUTDOWN_TIMEOUT_MS must be between 100 and 3600000, got 50' });
});

test('PG_POOL_SIZE: 20 by default (a project may then use 9 connections), at least 3', () => {
  assert.equal(loadConfig({}).postgres.poolSize, 20);
  assert.equal(loadConfig({ PG_POOL_SIZE: '3' }).postgres.poolSize, 3);
  assert.throws(() => loadConfig({ PG_POOL_SIZE: '2' }), { message: 'PG_POOL_SIZE must be between 3 and 1000, got 2' });
});

test('SQLITE_WORKER_IDLE_MS: 30 s by default, 0 keeps the workers, at most a day', () => {
  assert.equal(loadConfig({}).sqliteWorkerIdleMs, 30000);
  assert.equal(loadConfig({ SQLITE_WORKER_IDLE_MS: '0' }).sqliteWorkerIdleMs, 0);
  assert.equal(loadConfig({ SQLITE_WORKER_IDLE_MS: '600000' }).sqliteWorkerIdleMs, 600000);
  assert.throws(() => loadConfig({ SQLITE_WORKER_IDLE_MS: '86400001' }), { message: 'SQLITE_WORKER_IDLE_MS must be between 0 and 86400000, got 86400001' });
  assert.throws(() => loadConfig({ SQLITE_WORKER_IDLE_MS: '-1' }), { message: "SQLITE_WORKER_IDLE_MS must be a whole number, got '-1'" });
});

test('IDLE_GC_MS: 5 s by default, 0 turns the idle collection off, at most an hour', () => {
  assert.equal(loadConfig({}).idleCollectMs, 5000);
  assert.equal(loadConfig({ IDLE_GC_MS: '0' }).idleCollectMs, 0);
  assert.throws(() => loadConfig({ IDLE_GC_MS: '3600001' }), { message: 'IDLE_GC_MS must be between 0 and 3600000, got 3600001' });
  assert.throws(() => loadConfig({ IDLE_GC_MS: 'soon' }), { message: "IDLE_GC_MS must be a whole number, got 'soon'" });
});

test("PASSWORD_HASH_CONCURRENCY: libuv's thread pool less one by default (UV_THREADPOOL_SIZE, 4), at least 1, from 1 to 1024", () => {
  assert.equal(loadConfig({}).argon2.concurrency, 3);
  assert.equal(loadConfig({ UV_THREADPOOL_SIZE: '16' }).argon2.concurrency, 15);
  assert.equal(loadConfig({ UV_THREADPOOL_SIZE: '1' }).argon2.concurrency, 1);
  assert.equal(loadConfig({ PASSWORD_HASH_CONCURRENCY: '8' }).argon2.concurrency, 8);
  assert.throws(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: '0' }), { message: 'PASSWORD_HASH_CONCURRENCY must be between 1 and 1024, got 0' });
  assert.throws(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: 'all' }), { message: "PASSWORD_HASH_CONCURRENCY must be a whole number, got 'all'" });
  // libuv's own reading of its setting, which the service does not refuse: at least 1, at most 1024
  assert.equal(loadConfig({ UV_THREADPOOL_SIZE: '2000' }).argon2.concurrency, 1023);
  assert.equal(loadConfig({ UV_THREADPOOL_SIZE: '0' }).argon2.concurrency, 1);
  assert.equal(loadConfig({ UV_THREADPOOL_SIZE: 'many' }).argon2.concurrency, 1);
});

test('PROJECT_MAX_BYTES: 1 GiB by default, 1 MiB to 1 PiB', () => {
  assert.equal(loadConfig({}).projectMaxBytes, 1024 ** 3);
  assert.equal(loadConfig({ PROJECT_MAX_BYTES: '10737418240' }).projectMaxBytes, 10 * 1024 ** 3);
  assert.throws(() => loadConfig({ PROJECT_MAX_BYTES: '1048575' }), { message: `PROJECT_MAX_BYTES must be between 1048576 and ${2 ** 50}, got 1048575` });
  assert.throws(() => loadConfig({ PROJECT_MAX_BYTES: '1G' }), { message: "PROJECT_MAX_BYTES must be a whole number, got '1G'" });
});
