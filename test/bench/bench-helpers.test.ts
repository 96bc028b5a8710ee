// The benchmark's pure helpers: how runs are summed up, how the goals are judged and printed, the
// workload's answer check, and the JWT the PostgREST peer is called with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alternate, summarize } from '../../bench/load.ts';
import { evaluateGoals, formatGoals } from '../../bench/goals.ts';
import { isReadersFirst20, todo } from '../../bench/workload.ts';
import { signJwt } from '../../bench/peers/postgrest.ts';

const result = (name: string, rps: number, p50: number, p99: number) => ({ name, requests: 1, errors: 0, rps, p50, p99 });

test('summarize: requests over the summed time, percentiles over every run', () => {
  const r = summarize('x', [
    { latencies: [1, 2, 3, 4, 5], errors: 1, elapsed: 1 },
    { latencies: [10, 6, 7, 8, 9], errors: 0, elapsed: 1.5 },
  ]);
  assert.equal(r.requests, 10);
  assert.equal(r.errors, 1);
  assert.equal(r.rps, 4);
  assert.equal(r.p50, 6);
  assert.equal(r.p99, 10);
  assert.deepEqual(summarize('empty', []), { name: 'empty', requests: 0, errors: 0, rps: 0, p50: 0, p99: 0 });
});

test('alternate: runs A B B A and counts each side on its own', async () => {
  const order: string[] = [];
  const side = (name: string) => ({
    name,
    send: async () => {
      if (order.at(-1) !== name) order.push(name);
      await new Promise((r) => setTimeout(r, 2));
      return name === 'a';
    },
  });
  const [a, b] = await alternate(side('a'), side('b'), { seconds: 0.04, concurrency: 1 });
  assert.deepEqual(order, ['a', 'b', 'a']); // a, then b twice in a row, then a
  assert.equal(a.name, 'a');
  assert.equal(a.errors, 0);
  assert.equal(b.errors, b.requests);
});

test('goals: ratios judged against their thresholds; what was not measured says so', () => {
  const goals = evaluateGoals({
    postgres: { reads: result('r', 300, 5, 20), inserts: result('i', 90, 5, 30), oneProject: result('1', 100, 4, 9), randomProjects: result('n', 90, 5.2, 12), projects: 1000, idleRssMiB: 60, peakReadRssMiB: 210, startupMs: 400 },
    postgrest: { reads: result('r', 200, 6, 25), inserts: result('i', 100, 4, 20) },
  });
  const met = Object.fromEntries(goals.map((g) => [g.goal, g.met]));
  assert.equal(met['PostgreSQL engine reads >= 1.5x PostgREST req/s'], true);
  assert.equal(met['PostgreSQL engine reads p99 <= PostgREST p99'], true);
  assert.equal(met['PostgreSQL engine single-row inserts >= 1x PostgREST req/s'], false);
  assert.equal(met['embedded engine reads >= 2x PocketBase req/s'], null);
  assert.equal(met["PostgreSQL: 1000 projects read at random, p50 <= 1.25x one project's"], false);
  assert.equal(met['PostgreSQL: idle RSS <= 80 MiB'], true);
  assert.equal(met['PostgreSQL: peak RSS under read load <= 200 MiB'], false);
  assert.equal(met['PostgreSQL: start-up to the first /health 200 < 1 s'], true);
  assert.ok(!goals.some((g) => g.goal.startsWith('SQLite')));
  const lines = formatGoals(goals);
  assert.match(lines[0]!, /^ {2}met {5}PostgreSQL engine reads >= 1\.5x PostgREST req\/s +1\.50x \(300 vs 200 req\/s\)$/);
  assert.match(lines[2]!, /^ {2}MISSED/);
});

test('goals: without --peers the PostgREST comparisons are not measured', () => {
  const goals = evaluateGoals({ sqlite: { idleRssMiB: 70 } });
  for (const g of goals.slice(0, 3)) assert.deepEqual([g.met, g.measured], [null, 'not measured (run with --peers)']);
  assert.deepEqual(goals.at(-1), { goal: 'SQLite: idle RSS <= 80 MiB', measured: '70.0 MiB', met: true });
});

test("the workload's answer: user 42's first 20 todos, in id order, nothing else", () => {
  const rows = Array.from({ length: 20 }, (_, k) => todo(42 + 1000 * k));
  assert.equal(isReadersFirst20(rows), true);
  assert.equal(isReadersFirst20(rows.map((r) => ({ ...r, id: String(r.id), created_by: String(r.created_by) }))), true); // PostgREST's bigint as text
  assert.equal(isReadersFirst20(rows.slice(1)), false);
  assert.equal(isReadersFirst20([...rows.slice(1), rows[0]]), false);
  assert.equal(isReadersFirst20([todo(43), ...rows.slice(1)]), false);
  assert.equal(isReadersFirst20({ rows }), false);
});

test('signJwt: HS256 as jwt.io signs it', () => {
  assert.equal(
    signJwt('your-256-bit-secret', { sub: '1234567890', name: 'John Doe', iat: 1516239022 }),
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  );
});
