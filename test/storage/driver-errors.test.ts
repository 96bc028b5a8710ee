// Driver errors as the adapters translate them: every way of losing or not reaching PostgreSQL is a
// DatabaseUnavailable (the error handler's 503), a full SQLite disk a StorageFull (507); other
// errors keep their meaning. Engine-free: the errors are built as the drivers build them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { translatePgError } from '../../src/storage/postgres/postgres-db.ts';
import { translateSqliteError } from '../../src/storage/sqlite/sqlite-db.ts';
import { DatabaseUnavailable, QueryTimeout, StorageFull, UniqueViolation } from '../../src/storage/engine.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('PostgreSQL: a lost or refused connection is DatabaseUnavailable', () => {
  const lost: [string, unknown][] = [
    ['57P01 admin shutdown (pg_terminate_backend)', withCode('57P01', 'terminating connection due to administrator command')],
    ['57P02 crash shutdown', withCode('57P02')],
    ['57P03 cannot connect now', withCode('57P03', 'the database system is starting up')],
    ['53300 too many connections', withCode('53300')],
    ['25P03 idle in transaction too long', withCode('25P03', 'terminating connection due to idle-in-transaction timeout')],
    ['08000 connection exception', withCode('08000')],
    ['08001 unable to connect', withCode('08001')],
    ['08003 connection does not exist', withCode('08003')],
    ['08006 connection failure', withCode('08006')],
    ['ECONNREFUSED', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['ECONNRESET', withCode('ECONNRESET', 'read ECONNRESET')],
    ['ETIMEDOUT', withCode('ETIMEDOUT')],
    ['EPIPE', withCode('EPIPE', 'write EPIPE')],
    ['a connect to several addresses', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])],
    ['the server closed the connection', new Error('Connection terminated unexpectedly')],
    ['the connect timeout', new Error('Connection terminated due to connection timeout')],
    ['no free pooled client in time', new Error('timeout exceeded when trying to connect')],
    ['the client-side query timeout', new Error('Query read timeout')],
    ['a client broken earlier', new Error('Client has encountered a connection error and is not queryable')],
  ];
  for (const [what, err] of lost) {
    const out = translatePgError(err);
    assert.ok(out instanceof DatabaseUnavailable, what);
    assert.equal(out.reason, 'connection_lost', what);
  }
});

test('PostgreSQL: a standby refusing writes (failover) is DatabaseUnavailable read_only; 55000 otherwise keeps its meaning', () => {
  for (const err of [withCode('25006', 'cannot execute INSERT in a read-only transaction'), withCode('55000', 'recovery is in progress')]) {
    const out = translatePgError(err);
    assert.ok(out instanceof DatabaseUnavailable);
    assert.equal(out.reason, 'read_only');
  }
  const other = withCode('55000', 'currval of sequence "s" is not yet defined in this session');
  assert.equal(translatePgError(other), other);
});

test('PostgreSQL: other errors keep their translation', () => {
  assert.ok(translatePgError(withCode('23505')) instanceof UniqueViolation);
  assert.ok(translatePgError(withCode('57014')) instanceof QueryTimeout);
  const syntax = withCode('42601');
  assert.equal(translatePgError(syntax), syntax);
});

test('SQLite: SQLITE_FULL (a full disk, or a file at max_page_count) is StorageFull; other I/O errors are not', () => {
  assert.ok(translateSqliteError(withCode('SQLITE_FULL', 'database or disk is full')) instanceof StorageFull);
  const io = withCode('SQLITE_IOERR_READ', 'disk I/O error');
  assert.equal(translateSqliteError(io), io);
});

test('PostgreSQL: a deadlock or serialization failure is 503 write_conflict, retryable; nothing was written', async () => {
  const { AppError } = await import('../../src/errors.ts');
  for (const code of ['40P01', '40001']) {
    const out = translatePgError(withCode(code, 'deadlock detected'));
    assert.ok(out instanceof AppError, code);
    assert.equal(out.status, 503);
    assert.equal(out.code, 'write_conflict');
    assert.equal(out.headers['Retry-After'], '1');
  }
});

test('SQLite: a write lock held past the wait is 503 project_busy, an interrupted statement a QueryTimeout', async () => {
  const { AppError } = await import('../../src/errors.ts');
  for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT']) {
    const out = translateSqliteError(withCode(code, 'database is locked'));
    assert.ok(out instanceof AppError && out.status === 503 && out.code === 'project_busy', code);
  }
  assert.ok(translateSqliteError(withCode('SQLITE_INTERRUPT', 'interrupted')) instanceof QueryTimeout);
});
