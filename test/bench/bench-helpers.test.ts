// The benchmark's pure helpers: how runs are summed up, how the goals are judged and printed, the
// workload's answer check, the JWT the PostgREST peer is called with, and PocketBase's rows and rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { alternate, closedLoop, summarize } from '../../bench/load.ts';
import { cannon } from '../../bench/cannon.ts';
import { evaluateGoals, formatGoals } from '../../bench/goals.ts';
import { isReadersFirst20, todo } from '../../bench/workload.ts';
import { signJwt } from '../../bench/peers/postgrest.ts';
import { CREATE_RULE, isPocketbaseFirst20, OWNER_RULE, pbId, pocketbaseCollections, pocketbaseTodo } from '../../bench/peers/pocketbase.ts';

const result = (name: string, rps: number, p50: number, p99: number) => ({ name, requests: 1, errors: 0, rps, p50, p99 });

const run = (latencies: number[], errors: number, elapsed: number) => ({ requests: latencies.length, errors, elapsed, p50: -1, p99: -1, latencies });

test('summarize: requests over the summed time, percentiles over every run', () => {
  const r = summarize('x', [run([1, 2, 3, 4, 5], 1, 1), run([6, 7, 8, 9, 10], 0, 1.5)]);
  assert.equal(r.requests, 10);
  assert.equal(r.errors, 1);
  assert.equal(r.rps, 4);
  assert.equal(r.p50, 6);
  assert.equal(r.p99, 10);
  assert.deepEqual(summarize('empty', []), { name: 'empty', requests: 0, errors: 0, rps: 0, p50: 0, p99: 0 });
});

test('summarize: runs without their latencies weigh their percentiles by their requests', () => {
  const r = summarize('x', [
    { requests: 300, errors: 0, elapsed: 1, p50: 2, p99: 10 },
    { requests: 100, errors: 2, elapsed: 1, p50: 6, p99: 30 },
  ]);
  assert.deepEqual(r, { name: 'x', requests: 400, errors: 2, rps: 200, p50: 3, p99: 15 });
});

test('cannon: the requests autocannon counted after its warm-up, and every answer with another status or body a failure', async () => {
  let n = 0;
  let other = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      n++;
      const good = req.method === 'GET' ? n % 10 !== 0 : JSON.parse(body).title.startsWith('t ') && req.headers['x-h'] === 'v';
      res.writeHead(req.method === 'GET' || good ? 200 : 400, { 'content-type': 'application/json' });
      if (!good && req.method === 'GET') other++;
      res.end(good || req.method === 'POST' ? '["ok"]' : '["other"]');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  const failures: string[] = [];
  try {
    const get = await cannon({ method: 'GET', url, headers: {}, status: 200, expectBody: '["ok"]' }, { seconds: 1, concurrency: 2 }, 0, (f) => failures.push(f));
    assert.ok(get.requests > 50, `${get.requests} requests`);
    // every tenth answer has another body; at most one per connection is still on its way at the end
    assert.ok(get.errors <= other && get.errors >= other - 2 && get.errors > 0, `${get.errors} failures, ${other} other bodies`);
    assert.match(failures[0]!, /bodies other than the checked answer/);
    // a warm-up of 1 s before a measured second: the server answers what is counted and a second's
    // worth more (as many as 50 at least: a loaded machine may serve the two seconds unevenly)
    const before = n;
    const post = await cannon({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-h': 'v' }, body: '{"title":"t [<id>]"}', status: 200 }, { seconds: 1, concurrency: 2 }, 1, (f) => failures.push(f));
    assert.ok(post.requests > 50 && post.errors === 0, JSON.stringify(post));
    assert.ok(n - before - post.requests > 50, `${n - before} answers, ${post.requests} counted: the warm-up ran and was not counted`);
    const wrongStatus = await cannon({ method: 'POST', url, headers: {}, body: '{"title":"t"}', status: 200 }, { seconds: 1, concurrency: 1 }, 0.5, (f) => failures.push(f));
    assert.ok(wrongStatus.errors > wrongStatus.requests, 'no header, no 200: every answer, the warm-up ones too, a failure');
    assert.match(failures.at(-1)!, /answers with another status or body/);
    assert.match(failures.at(-1)!, /[1-9]\d* failures in the warm-up/);
  } finally {
    server.close();
  }
  // nobody listening: no answer at all is a failure, not an empty success
  const none = await cannon({ method: 'GET', url, headers: {}, status: 200 }, { seconds: 0.5, concurrency: 1 }, 0, (f) => failures.push(f));
  assert.ok(none.requests === 0 && none.errors > 0, JSON.stringify(none));
});

test('alternate: runs A B B A and counts each side on its own', async () => {
  const order: string[] = [];
  const side = (name: string) =>
    closedLoop(name, async () => {
      if (order.at(-1) !== name) order.push(name);
      await new Promise((r) => setTimeout(r, 2));
      return name === 'a';
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

test('goals: a figure measured on failed answers is not met, and says how many failed', () => {
  const failing = { ...result('r', 300, 5, 20), errors: 7 };
  const goals = evaluateGoals({ postgres: { reads: failing, inserts: result('i', 200, 5, 30) }, postgrest: { reads: result('r', 100, 6, 25), inserts: result('i', 100, 4, 20) } });
  const reads = goals.find((g) => g.goal === 'PostgreSQL engine reads >= 1.5x PostgREST req/s')!;
  assert.equal(reads.met, false);
  assert.match(reads.measured, /3\.00x .*; 7 failed answers$/);
  assert.equal(goals.find((g) => g.goal === 'PostgreSQL engine single-row inserts >= 1x PostgREST req/s')!.met, true);
});

test('goals: without --peers the peer comparisons are not measured', () => {
  const goals = evaluateGoals({ sqlite: { idleRssMiB: 70 }, postgres: {} });
  for (const g of goals.slice(0, 4)) assert.deepEqual([g.met, g.measured], [null, 'not measured (run with --peers)']);
  assert.equal(goals[3]!.goal, 'embedded engine reads >= 2x PocketBase req/s');
  assert.ok(!goals.some((g) => g.goal.includes('inserts vs PocketBase')));
  assert.deepEqual(goals.at(-1), { goal: 'SQLite: idle RSS <= 80 MiB', measured: '70.0 MiB', met: true });
});

test("goals: a peer's comparison without its engine in the run says which engine is missing", () => {
  const sqliteOnly = evaluateGoals({ sqlite: {}, pocketbase: {} });
  for (const g of sqliteOnly.slice(0, 3)) assert.equal(g.measured, 'not measured (no PostgreSQL engine in this run)');
  const postgresOnly = evaluateGoals({ postgres: {}, postgrest: {} });
  assert.equal(postgresOnly.find((g) => g.goal.startsWith('embedded engine reads'))?.measured, 'not measured (no embedded engine in this run)');
});

test('goals: the embedded engine against PocketBase, reads judged at 2x, inserts printed unjudged', () => {
  const goals = evaluateGoals({
    sqlite: { reads: result('r', 3000, 10, 30), inserts: result('i', 1500, 20, 40) },
    pocketbase: { reads: result('r', 1000, 28, 130), inserts: result('i', 600, 50, 90) },
  });
  const reads = goals.find((g) => g.goal === 'embedded engine reads >= 2x PocketBase req/s');
  assert.deepEqual(reads, { goal: 'embedded engine reads >= 2x PocketBase req/s', measured: '3.00x (3000 vs 1000 req/s)', met: true });
  const inserts = goals.find((g) => g.goal === 'embedded engine single-row inserts vs PocketBase');
  assert.equal(inserts?.met, null);
  assert.match(inserts!.measured, /^2\.50x \(1500 vs 600 req\/s; information, no goal\)$/);
  const lines = formatGoals(goals);
  assert.ok(lines.some((l) => /^ {2}met {5}embedded engine reads >= 2x PocketBase req\/s +3\.00x/.test(l)));
  assert.ok(lines.some((l) => /^ {2}- {7}embedded engine single-row inserts vs PocketBase +2\.50x/.test(l)));
  const missed = evaluateGoals({ sqlite: { reads: result('r', 1900, 10, 30) }, pocketbase: { reads: result('r', 1000, 28, 130) } });
  assert.equal(missed.find((g) => g.goal.startsWith('embedded engine reads'))?.met, false);
  // a PocketBase run that measured no reads is not mistaken for one without --peers
  assert.equal(evaluateGoals({ sqlite: {}, pocketbase: {} }).find((g) => g.goal.startsWith('embedded engine reads'))?.measured, 'not measured');
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

test("PocketBase's rows: the workload's todos, zero-padded ids that sort as numbers, the owner's user id", () => {
  assert.equal(pbId(42), '000000000000042');
  assert.equal(pbId(100_000).length, 15);
  assert.ok(pbId(999) < pbId(1000));
  assert.deepEqual(pocketbaseTodo(1042, 'T'), { id: '000000000001042', created: 'T', updated: 'T', title: 'todo 1042', done: 0, created_by: 42, owner: '000000000000042' });
  assert.equal(pocketbaseTodo(3, 'T').done, 1);
  assert.equal(pocketbaseTodo(1000, 'T').owner, pbId(1000));
});

test("PocketBase's rules: own rows by the indexed owner; creation only by an end user, of their own rows", () => {
  assert.equal(OWNER_RULE, 'owner = @request.auth.id');
  assert.equal(CREATE_RULE, '@request.auth.id != "" && owner = @request.auth.id');
  const [todos, ins] = pocketbaseCollections();
  for (const c of [todos!, ins!]) {
    assert.deepEqual([c.listRule, c.viewRule, c.updateRule, c.deleteRule], [OWNER_RULE, OWNER_RULE, null, null]);
    assert.ok(c.schema.some((f) => f.name === 'owner' && f.type === 'text'));
    assert.deepEqual(c.indexes, [`CREATE INDEX \`idx_${c.name}_owner\` ON \`${c.name}\` (\`owner\`)`]);
  }
  assert.deepEqual([todos!.name, todos!.createRule, ins!.name, ins!.createRule], ['todos', null, 'todos_ins', CREATE_RULE]);
});

test("PocketBase's answer: the reader's first 20 todos as its list's items", () => {
  const items = Array.from({ length: 20 }, (_, k) => {
    const r = pocketbaseTodo(42 + 1000 * k, 'T');
    return { ...r, done: r.done === 1, collectionName: 'todos' };
  });
  assert.equal(isPocketbaseFirst20({ page: 1, perPage: 20, totalItems: -1, totalPages: -1, items }), true);
  assert.equal(isPocketbaseFirst20({ items: items.slice(1) }), false);
  assert.equal(isPocketbaseFirst20(items), false);
  assert.equal(isPocketbaseFirst20(null), false);
});
