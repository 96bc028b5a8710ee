// The console's signature path, in Chromium, on both engines: from nothing to a table with a
// policy, end users and rows seen as each of them, with live policy validation, per-type row forms
// and the server's errors on their fields, paging, sorting, filters, and the policy simulator.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeConsole, type ConsoleRun } from '../support/browser.ts';

await describeConsole('console: tables, rows as each caller, policies and the simulator', ['sqlite', 'postgres'], (ctx) => {
  let run: ConsoleRun;
  let page: Page;
  let pid: string;
  let tableId: string;
  const users: Record<string, number> = {};
  const token = () => page.evaluate(() => JSON.parse(sessionStorage.getItem('baseplate.session')!).token as string);
  /** waits until the grid shows the rows of the query the screen asks for */
  const settled = () =>
    page.waitForFunction(() => {
      const el = document.querySelector<HTMLElement>('.data-browser');
      return !!el && el.getAttribute('aria-busy') === 'false' && el.dataset.want === el.dataset.query;
    });
  const titles = async () => {
    await settled();
    return (await page.locator('table.grid tbody tr td:nth-child(3)').allTextContents()).map((s) => s.trim());
  };
  const viewAs = async (who: 'Owner' | 'Anonymous' | string) => {
    if (who === 'Owner' || who === 'Anonymous') await page.getByRole('radio', { name: who }).check();
    else {
      await page.getByRole('radio', { name: 'End user' }).check();
      await page.getByLabel('Which end user').selectOption({ label: who });
    }
    await settled();
  };
  const insertRow = async (values: Record<string, string>) => {
    await page.getByRole('button', { name: 'Insert row' }).click();
    const dialog = page.getByRole('dialog', { name: 'Insert a row' });
    for (const [col, v] of Object.entries(values)) await dialog.locator(`#row-${col}`).fill(v);
    await dialog.getByRole('button', { name: 'Insert row' }).click();
    return dialog;
  };

  before(async () => {
    run = ctx();
    page = await run.page();
  });

  test('a new owner signs up, creates a project, and the getting-started steps lead to a table', async () => {
    await page.goto(`${run.base}/console/sign-up`);
    await page.getByLabel('Your name').fill('Grace');
    await page.getByLabel('Email').fill('grace@example.com');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByLabel('Project name').fill('Todos');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Getting started' }).waitFor();
    pid = /projects\/([a-z2-7]{16})/.exec(page.url())![1]!;
    await page.getByRole('link', { name: 'Create a table' }).click();
    await page.getByLabel('Table name').fill('todos');
    await page.getByRole('button', { name: 'Fill in the todos example' }).click();
    // one more column of every remaining type, unique and indexed
    await page.getByRole('button', { name: 'Add column' }).click();
    const last = page.locator('fieldset.column-draft').last();
    await last.getByLabel('Column name').fill('due');
    await last.getByLabel('Type').selectOption('date');
    await last.getByLabel('Default').selectOption('now()');
    await page.getByRole('button', { name: 'Add column' }).click();
    const meta = page.locator('fieldset.column-draft').last();
    await meta.getByLabel('Column name').fill('meta');
    await meta.getByLabel('Type').selectOption('json');
    await page.getByRole('button', { name: 'Add column' }).click();
    const code = page.locator('fieldset.column-draft').last();
    await code.getByLabel('Column name').fill('code');
    await code.getByLabel('Type').selectOption('text');
    await code.getByLabel('unique').check();
    await page.getByRole('button', { name: 'Add column' }).click();
    const author = page.locator('fieldset.column-draft').last();
    await author.getByLabel('Column name').fill('author');
    await author.getByLabel('Default').selectOption('$auth.email');
    await page.getByRole('button', { name: 'Add column' }).click();
    const score = page.locator('fieldset.column-draft').last();
    await score.getByLabel('Column name').fill('score');
    await score.getByLabel('Type').selectOption('number');
    await score.getByLabel('Default').selectOption('value');
    await score.getByLabel('Default value of score').fill('abc');
    await page.getByRole('button', { name: 'Create table' }).click();
    await score.getByText('Default: Enter a number.').waitFor();
    await score.getByLabel('Default value of score').fill('1.5');
    await page.getByRole('button', { name: 'Create table' }).click();
    await page.getByRole('heading', { name: 'Table todos' }).waitFor();
    await page.getByText('No enabled policy').waitFor();
    tableId = /tables\/([a-z2-7]{16})/.exec(page.url())![1]!;
    const table = (await run.api('GET', `/projects/${pid}/tables/${tableId}`, { token: await token() })).body;
    const col = (n: string) => table.columns.find((c: { name: string }) => c.name === n);
    assert.deepEqual(table.columns.map((c: { name: string; type: string }) => `${c.name}:${c.type}`), ['id:integer', 'title:text', 'done:boolean', 'owner_id:integer', 'created_at:timestamp', 'due:date', 'meta:json', 'code:text', 'author:text', 'score:number']);
    assert.deepEqual([col('title').nullable, col('done').default, col('owner_id').default, col('owner_id').indexed, col('created_at').default, col('due').default, col('code').unique, col('author').default, col('score').default], [false, false, '$auth.id', true, 'now()', 'now()', true, '$auth.email', 1.5]);
  });

  test('a policy with a mistake is highlighted live where it is wrong; the fixed one is created', async () => {
    await page.getByRole('navigation', { name: 'Table' }).getByRole('link', { name: /Policies/ }).click();
    await page.getByRole('button', { name: 'Create a policy' }).click();
    const dialog = page.getByRole('dialog', { name: 'New policy' });
    await dialog.getByLabel('Name').fill('Own rows');
    await dialog.getByLabel('Expression').fill('owner_id = $auth.idd');
    await dialog.locator('.expr-highlight mark').filter({ hasText: '$auth.idd' }).waitFor();
    await dialog.getByText('At line 1, column 12').waitFor();
    assert.equal(await dialog.getByLabel('Expression').getAttribute('aria-invalid'), 'true');
    await run.shot(page, 'policy-editor-error');
    await dialog.getByLabel('Expression').fill('owner_id = ');
    await dialog.getByRole('button', { name: '$auth.id', exact: true }).click();
    assert.equal(await dialog.getByLabel('Expression').inputValue(), 'owner_id = $auth.id');
    await dialog.getByText('✓ Valid for this table').waitFor();
    await dialog.getByRole('button', { name: 'Create policy' }).click();
    await page.getByRole('cell', { name: 'owner_id = $auth.id' }).waitFor();
    const policies = (await run.api('GET', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: await token() })).body;
    assert.deepEqual(policies.map((p: { name: string; operation: string; expression: string; enabled: boolean }) => [p.name, p.operation, p.expression, p.enabled]), [['Own rows', 'ALL', 'owner_id = $auth.id', true]]);
  });

  test('end users are added from the console', async () => {
    await page.getByRole('link', { name: 'End users' }).click();
    for (const who of ['ada', 'bob']) {
      await page.getByLabel('Email', { exact: true }).fill(`${who}@example.com`);
      await page.getByLabel('Password', { exact: true }).fill('end user password');
      await page.getByRole('button', { name: 'Add end user' }).click();
      await page.getByRole('cell', { name: `${who}@example.com`, exact: true }).waitFor();
    }
    for (const u of (await run.api('GET', `/projects/${pid}/end-users`, { token: await token() })).body) users[u.email.split('@')[0]] = u.id;
    assert.ok(users.ada && users.bob);
  });

  test('rows written as the owner and as each end user; each caller sees exactly their rows', async () => {
    await page.getByRole('link', { name: 'todos' }).click();
    await viewAs('Owner');
    await (await insertRow({ title: 'owner row', due: '2030-05-01', created_at: '2030-05-01T10:20', score: '2.25' })).waitFor({ state: 'detached' });
    await viewAs('ada@example.com');
    await page.getByText('What ada@example.com reads').waitFor();
    await (await insertRow({ title: 'ada task', meta: '{"tags": ["home"]}' })).waitFor({ state: 'detached' });
    await viewAs('bob@example.com');
    await (await insertRow({ title: 'bob task' })).waitFor({ state: 'detached' });
    assert.deepEqual(await titles(), ['bob task']);
    await viewAs('ada@example.com');
    assert.deepEqual(await titles(), ['ada task']);
    await run.shot(page, 'data-as-end-user');
    await viewAs('Anonymous');
    await page.getByText('No rows visible to an anonymous caller').waitFor();
    await viewAs('Owner');
    assert.deepEqual((await titles()).sort(), ['ada task', 'bob task', 'owner row']);
    const rows = (await run.api('GET', `/projects/${pid}/tables/${tableId}/rows?order=id`, { token: await token() })).body;
    assert.deepEqual(rows.map((r: { title: string; owner_id: number | null }) => [r.title, r.owner_id]), [['owner row', null], ['ada task', users.ada], ['bob task', users.bob]]);
    assert.deepEqual([rows[0].due, rows[0].created_at, rows[0].score, rows[0].author], ['2030-05-01', '2030-05-01T10:20:00.000Z', 2.25, null]);
    assert.deepEqual(rows[1].meta, { tags: ['home'] });
    assert.equal(rows[1].author, 'ada@example.com');
    assert.equal(rows[1].done, false);
    assert.match(rows[1].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('the server\'s refusals are shown: an RLS violation on the form, a bad value on its field', async () => {
    await viewAs('ada@example.com');
    const dialog = await insertRow({ title: 'forged', owner_id: String(users.bob) });
    await dialog.getByRole('alert').filter({ hasText: /policy|polic/i }).waitFor();
    assert.match((await dialog.getByRole('alert').textContent())!, /rls_violation/);
    await dialog.locator('#row-owner_id').fill('99999999999999999999');
    await dialog.getByRole('button', { name: 'Insert row' }).click();
    await dialog.locator('#row-owner_id-error').filter({ hasText: "column 'owner_id'" }).waitFor();
    assert.equal(await dialog.locator('#row-owner_id').getAttribute('aria-invalid'), 'true');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await viewAs('Owner');
    const unique = await insertRow({ title: 'dup 1', code: 'X' });
    await unique.waitFor({ state: 'detached' });
    const again = await insertRow({ title: 'dup 2', code: 'X' });
    await again.getByRole('alert').filter({ hasText: 'unique' }).waitFor();
    await again.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await run.api('GET', `/projects/${pid}/tables/${tableId}/rows?title=eq.forged`, { token: await token() })).body.length, 0);
  });

  test('edit and delete as an end user, under the policies', async () => {
    await viewAs('ada@example.com');
    await page.getByRole('button', { name: 'Edit row', exact: false }).first().click();
    const dialog = page.getByRole('dialog', { name: /Edit row/ });
    await dialog.locator('#row-title').fill('ada task, edited');
    await dialog.locator('#row-done').selectOption('true');
    await dialog.getByRole('button', { name: 'Save row' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(await titles(), ['ada task, edited']);
    await page.getByRole('button', { name: /^Delete row/ }).first().click();
    await page.getByRole('dialog', { name: /Delete row/ }).getByRole('button', { name: 'Delete row' }).click();
    await page.getByText('No rows visible to ada@example.com').waitFor();
    const left = (await run.api('GET', `/projects/${pid}/tables/${tableId}/rows?order=id`, { token: await token() })).body.map((r: { title: string }) => r.title);
    assert.deepEqual(left, ['owner row', 'bob task', 'dup 1']);
  });

  test('as the owner: paging with the total, sorting by a column, and filters in the passthrough grammar', async () => {
    const many = Array.from({ length: 30 }, (_, i) => ({ title: `item ${String(i).padStart(2, '0')}`, owner_id: users.bob, score: i }));
    assert.equal((await run.api('POST', `/projects/${pid}/tables/${tableId}/rows`, { token: await token(), body: many })).status, 201);
    await viewAs('Owner');
    await page.reload();
    await page.getByText('Rows 1–25 of 33').waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Rows 26–33 of 33').waitFor();
    await page.getByRole('button', { name: 'Previous' }).click();
    await page.getByRole('button', { name: 'title', exact: true }).click();
    await page.getByRole('columnheader', { name: /title/ }).and(page.locator('[aria-sort="ascending"]')).waitFor();
    assert.equal((await titles())[0], 'bob task');
    await page.getByRole('button', { name: 'title', exact: true }).click();
    await page.locator('[aria-sort="descending"]').waitFor();
    assert.equal((await titles())[0], 'owner row');
    await page.getByRole('button', { name: 'Add filter' }).click();
    const filter = page.getByRole('group', { name: 'Filter 1' });
    await filter.getByLabel('Column').selectOption('score');
    await filter.getByLabel('Operator').selectOption('gte');
    await filter.getByLabel('Value').fill('28');
    await page.getByRole('button', { name: 'Add filter' }).click();
    const second = page.getByRole('group', { name: 'Filter 2' });
    await second.getByLabel('Column').selectOption('title');
    await second.getByLabel('Operator').selectOption('ilike');
    await second.getByLabel('Value').fill('*ITEM*');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('Rows 1–2 of 2').waitFor();
    assert.deepEqual(await titles(), ['item 29', 'item 28']);
    await filter.getByLabel('not').check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('Rows 1–25 of 28').waitFor();
    await page.getByRole('button', { name: 'Remove filter 1' }).click();
    await page.getByRole('button', { name: 'Remove filter 1' }).click();
    await page.getByText('Rows 1–25 of 33').waitFor();
  });

  test('the simulator: which rows each caller gets, and why a row is hidden', async () => {
    await viewAs('Anonymous');
    await page.getByRole('link', { name: 'Ask the simulator' }).click();
    await page.getByRole('button', { name: 'Simulate' }).waitFor();
    assert.equal(await page.getByRole('radio', { name: 'Anonymous' }).isChecked(), true, 'the caller came along');
    await page.getByRole('radio', { name: 'End user' }).check();
    await page.getByLabel('Which end user').selectOption({ label: 'ada@example.com' });
    await page.getByRole('radio', { name: 'These row ids' }).check();
    await page.getByRole('textbox', { name: 'Row ids' }).fill('1, 3, 999');
    await page.getByRole('button', { name: 'Simulate' }).click();
    await page.getByRole('heading', { name: 'SELECT as ada@example.com' }).waitFor();
    await page.getByText('0 of 3 rows allowed.').waitFor();
    const explain = page.locator('#sim-explain');
    await page.getByRole('button', { name: 'Explain row 3' }).click();
    await explain.getByRole('heading', { name: /Row 3/ }).waitFor();
    await explain.locator('.stage-policies li').first().waitFor();
    assert.match((await explain.locator('.stage-policies li').first().textContent())!, /false ✗.*Own rows.*owner_id = \$auth\.id/);
    assert.match((await explain.locator('.reason').textContent())!, /\S/);
    await run.shot(page, 'simulator');
    await page.getByRole('button', { name: 'Explain row 999' }).click();
    await explain.getByText('No such row').waitFor();
    // anonymous: $auth.id is NULL, the policy's result is NULL, not a match
    await page.getByRole('radio', { name: 'Anonymous' }).check();
    await page.getByRole('radio', { name: 'First rows' }).check();
    await page.getByRole('button', { name: 'Simulate' }).click();
    await page.getByRole('heading', { name: 'SELECT as anonymous' }).waitFor();
    await page.getByText('Anonymous: every $auth value is NULL.').waitFor();
    await explain.locator('.stage-policies .null').first().waitFor();
    // INSERT as bob of a row owned by ada: refused at the check after the write
    await page.getByRole('radio', { name: 'End user' }).check();
    await page.getByLabel('Which end user').selectOption({ label: 'bob@example.com' });
    await page.getByLabel('Operation').selectOption('INSERT');
    await page.getByLabel('The row to insert (JSON)').fill(JSON.stringify({ title: 'x', owner_id: users.ada }));
    await page.getByRole('button', { name: 'Simulate' }).click();
    await page.getByRole('heading', { name: 'INSERT as bob@example.com' }).waitFor();
    await page.getByText('0 of 1 rows allowed.').waitFor();
    await page.getByLabel('The row to insert (JSON)').fill(JSON.stringify({ title: 'x' }));
    await page.getByRole('button', { name: 'Simulate' }).click();
    await page.getByText('1 of 1 rows allowed.').waitFor();
    assert.equal((await run.api('GET', `/projects/${pid}/tables/${tableId}/rows?title=eq.x`, { token: await token() })).body.length, 0, 'nothing written');
  });

  test('the getting-started steps show the progress and lead to the rows as an end user', async () => {
    await page.getByRole('link', { name: 'Getting started' }).click();
    await page.locator('.steps li.done').nth(4).waitFor();
    assert.equal(await page.locator('.steps li.done').count(), 5);
    await page.getByRole('link', { name: /^Browse as .+@example\.com$/ }).click();
    await page.getByText(/^What .+@example\.com reads/).waitFor();
    assert.match(page.url(), /\/data\?as=end_user(:|%3A)\d+$/);
  });

  test('at 390 px the data browser fits: the grid scrolls inside its own box', async () => {
    const narrow = await run.page(390);
    await run.signIn(narrow, 'grace@example.com', 'correct horse battery');
    await narrow.goto(`${run.base}/console/projects/${pid}/tables/${tableId}/data?as=end_user:${users.bob}`);
    await narrow.getByText('What bob@example.com reads').waitFor();
    await narrow.locator('table.grid tbody tr').first().waitFor();
    assert.ok(await narrow.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no page-wide horizontal scroll');
    assert.ok(await narrow.locator('.grid-wrap').evaluate((el) => el.scrollWidth > el.clientWidth), 'the grid scrolls in its box');
    await run.shot(narrow, 'data-390');
    await narrow.close();
    assert.deepEqual(run.problems, []);
  });
});
