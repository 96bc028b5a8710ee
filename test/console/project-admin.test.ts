// The console in Chromium: a table's columns (add, rename, drop, with the server's errors on the
// column they name), renaming and deleting tables, policies (edit with a highlighted 422,
// enable/disable, delete), API keys (plaintext once, copy, list, revoke) and end users (search,
// roles, delete).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeConsole, type ConsoleRun } from '../support/browser.ts';

await describeConsole('console: columns, policies, keys and end users', ['sqlite'], (ctx) => {
  let run: ConsoleRun;
  let page: Page;
  let owner: string;
  let pid: string;
  let tableId: string;
  const base = () => `${run.base}/console/projects/${pid}`;
  const table = async () => (await run.api('GET', `/projects/${pid}/tables/${tableId}`, { token: owner })).body;

  before(async () => {
    run = ctx();
    const reg = await run.api('POST', '/auth/register', { body: { name: 'Lin', email: 'lin@example.com', password: 'correct horse battery' } });
    owner = reg.body.token;
    pid = (await run.api('POST', '/projects', { token: owner, body: { name: 'Admin' } })).body.id;
    tableId = (await run.api('POST', `/projects/${pid}/tables`, { token: owner, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).body.id;
    page = await run.page();
    await run.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: run.base });
    await run.signIn(page, 'lin@example.com', 'correct horse battery');
  });

  test('columns: add (a duplicate name refused on its row), rename, drop', async () => {
    await page.goto(`${base()}/tables/${tableId}/columns`);
    await page.getByRole('button', { name: 'Add a column' }).click();
    const draft = page.locator('fieldset.column-draft').last();
    await draft.getByLabel('Column name').fill('body');
    await draft.getByLabel('Type').selectOption('boolean');
    await draft.getByLabel('nullable').uncheck();
    await page.getByRole('button', { name: 'Save new columns' }).click();
    await draft.locator('.field-error').filter({ hasText: "'body' already exists" }).waitFor();
    await draft.getByLabel('Column name').fill('pinned');
    await page.getByRole('button', { name: 'Save new columns' }).click();
    // a NOT NULL column added to a table needs a literal default: the server says so on the row
    await draft.locator('.field-error').filter({ hasText: 'needs a literal default' }).waitFor();
    await draft.getByLabel('Default', { exact: true }).selectOption('value');
    await draft.getByLabel('Default value of pinned').selectOption('false');
    await page.getByRole('button', { name: 'Save new columns' }).click();
    await page.getByRole('cell', { name: 'pinned', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Rename body' }).click();
    await page.getByLabel('New name for body').fill('content');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('cell', { name: 'content', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Drop pinned' }).click();
    await page.getByRole('dialog', { name: 'Drop column pinned?' }).getByRole('button', { name: 'Drop column' }).click();
    await page.getByRole('cell', { name: 'pinned', exact: true }).waitFor({ state: 'detached' });
    assert.deepEqual((await table()).columns.map((c: { name: string }) => c.name), ['id', 'content']);
  });

  test('policies: disable and enable, edit with a refused expression highlighted, delete', async () => {
    for (const [name, expression] of [['mine', 'content = $auth.email'], ['admins', "$auth.role = 'admin'"]]) {
      assert.equal((await run.api('POST', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: owner, body: { name, operation: 'SELECT', expression } })).status, 201);
    }
    await page.getByRole('navigation', { name: 'Table' }).getByRole('link', { name: /Policies/ }).click();
    await page.getByRole('cell', { name: 'content = $auth.email' }).waitFor();
    await page.getByRole('checkbox', { name: /mine/ }).uncheck();
    await page.getByRole('status').filter({ hasText: 'Policy mine disabled.' }).waitFor();
    const policies = async () => (await run.api('GET', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: owner })).body;
    assert.deepEqual((await policies()).map((p: { enabled: boolean }) => p.enabled), [false, true]);
    await page.getByRole('checkbox', { name: /mine/ }).check();
    await page.getByRole('status').filter({ hasText: 'Policy mine enabled.' }).waitFor();
    await page.getByRole('button', { name: 'Edit admins' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit policy admins' });
    assert.equal(await dialog.getByLabel('Operation').isDisabled(), true);
    await dialog.getByLabel('Expression').fill("$auth.role = 'admin' OR body IS NULL");
    await dialog.getByRole('button', { name: 'Save policy' }).click();
    await dialog.locator('.expr-highlight mark').filter({ hasText: 'body' }).waitFor();
    await dialog.getByLabel('Expression').fill("$auth.role = 'admin' OR content IS NULL");
    await dialog.getByText('✓ Valid for this table').waitFor();
    await dialog.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('cell', { name: "$auth.role = 'admin' OR content IS NULL" }).waitFor();
    await page.getByRole('button', { name: 'Delete mine' }).click();
    await page.getByRole('dialog', { name: 'Delete policy mine?' }).getByRole('button', { name: 'Delete policy' }).click();
    await page.getByRole('cell', { name: 'content = $auth.email' }).waitFor({ state: 'detached' });
    assert.deepEqual((await policies()).map((p: { name: string; expression: string }) => [p.name, p.expression]), [['admins', "$auth.role = 'admin' OR content IS NULL"]]);
  });

  test('tables: rename, then delete with the name typed', async () => {
    await page.getByRole('navigation', { name: 'Table' }).getByRole('link', { name: 'Columns' }).click();
    await page.getByLabel('Table name').fill('Notes!');
    await page.getByRole('button', { name: 'Rename table' }).click();
    await page.locator('#table-rename-error').waitFor();
    await page.getByLabel('Table name').fill('memos');
    await page.getByRole('button', { name: 'Rename table' }).click();
    await page.getByRole('heading', { name: 'Table memos' }).waitFor();
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'memos' }).waitFor();
    const other = (await run.api('POST', `/projects/${pid}/tables`, { token: owner, body: { name: 'scratch', columns: [] } })).body.id;
    await page.goto(`${base()}/tables/${other}/columns`);
    await page.getByRole('button', { name: 'Delete table…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete table scratch?' });
    await dialog.getByLabel('Type scratch to confirm').fill('scratch');
    await dialog.getByRole('button', { name: 'Delete table' }).click();
    await page.getByRole('heading', { name: 'Tables' }).waitFor();
    assert.deepEqual((await run.api('GET', `/projects/${pid}/tables`, { token: owner })).body.map((t: { name: string }) => t.name), ['memos']);
  });

  test('API keys: bad input on its field, the plaintext once with a copy button, then list, use and revoke', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('web');
    await page.getByRole('checkbox', { name: 'select' }).uncheck();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-perms-error').filter({ hasText: 'permission' }).waitFor();
    await page.getByRole('checkbox', { name: 'select' }).check();
    await page.getByRole('checkbox', { name: 'insert' }).check();
    await page.getByLabel('Expires').selectOption('custom');
    await page.getByLabel('Expiry (UTC)').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-expires-at-error').filter({ hasText: 'in the future' }).waitFor();
    await page.getByLabel('Expires').selectOption('30');
    await page.getByRole('button', { name: 'Create key' }).click();
    const plaintext = await page.getByLabel('The new API key').inputValue();
    assert.match(plaintext, /^[0-9a-f]{64}$/);
    await run.shot(page, 'api-key-created');
    await page.getByRole('region', { name: /Key “web” created/ }).getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), plaintext);
    assert.equal((await run.api('GET', `/${pid}/rest/memos`, { key: plaintext })).status, 200);
    await page.getByRole('button', { name: 'Done, I have copied it' }).click();
    assert.equal(await page.content().then((html) => html.includes(plaintext)), false, 'the plaintext is gone from the page');
    const row = page.getByRole('row', { name: /web/ });
    await row.getByRole('cell', { name: `${plaintext.slice(0, 8)}…` }).or(row.getByRole('cell', { name: /…$/ })).first().waitFor();
    assert.match((await row.textContent())!, /select, insert/);
    await page.reload();
    assert.doesNotMatch((await page.getByRole('row', { name: /web/ }).textContent())!, /never.*never/, 'last used is shown after the call');
    await page.getByRole('button', { name: 'Revoke web' }).click();
    await page.getByRole('dialog', { name: 'Revoke key web?' }).getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('row', { name: /web/ }).waitFor({ state: 'detached' });
    assert.equal((await run.api('GET', `/${pid}/rest/memos`, { key: plaintext })).status, 401);
  });

  test('keyboard only: skip link, a visible focus ring, a dialog opened with Enter and closed with Escape, focus back', async () => {
    await run.api('POST', `/projects/${pid}/keys`, { token: owner, body: { name: 'kbd', permissions: ['select'] } });
    await page.goto(`${base()}/keys`);
    await page.getByRole('row', { name: /kbd/ }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    let name = '';
    for (let i = 0; i < 60 && name !== 'Revoke kbd'; i++) {
      await page.keyboard.press('Tab');
      name = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    }
    assert.equal(name, 'Revoke kbd', 'the button is reachable with Tab');
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement!).boxShadow), 'none', 'focus is visible');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Revoke key kbd?' });
    await dialog.waitFor();
    assert.equal(await page.evaluate(() => !!document.activeElement?.closest('dialog')), true, 'focus moved into the dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Revoke kbd', 'focus is back on the button');
    assert.equal((await run.api('GET', `/projects/${pid}/keys`, { token: owner })).body.some((k: { name: string }) => k.name === 'kbd'), true, 'nothing revoked');
  });

  test('end users: search by email, set and clear a role, browse as one, delete', async () => {
    for (const who of ['alice', 'albert', 'carol']) await run.api('POST', `/${pid}/auth/register`, { body: { email: `${who}@example.com`, password: 'end user password' } });
    await page.getByRole('link', { name: 'End users' }).click();
    await page.getByRole('cell', { name: 'carol@example.com', exact: true }).waitFor();
    await page.getByLabel('Search by email').fill('al');
    await page.getByRole('cell', { name: 'carol@example.com', exact: true }).waitFor({ state: 'detached' });
    assert.equal(await page.locator('tbody tr').count(), 2);
    await page.getByLabel('Role of alice@example.com').fill('admin');
    await page.getByRole('button', { name: 'Set role of alice@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'Role of alice@example.com set to admin.' }).waitFor();
    const users = async () => (await run.api('GET', `/projects/${pid}/end-users`, { token: owner })).body as { id: number; email: string; role: string | null }[];
    assert.equal((await users()).find((u) => u.email === 'alice@example.com')!.role, 'admin');
    await page.getByRole('button', { name: 'Clear role of alice@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'Role of alice@example.com cleared.' }).waitFor();
    assert.equal((await users()).find((u) => u.email === 'alice@example.com')!.role, null);
    await run.shot(page, 'end-users');
    await page.getByRole('button', { name: 'Delete albert@example.com' }).click();
    await page.getByRole('dialog', { name: 'Delete albert@example.com?' }).getByRole('button', { name: 'Delete end user' }).click();
    await page.getByRole('cell', { name: 'albert@example.com', exact: true }).waitFor({ state: 'detached' });
    assert.deepEqual((await users()).map((u) => u.email).sort(), ['alice@example.com', 'carol@example.com']);
    const alice = (await users()).find((u) => u.email === 'alice@example.com')!;
    await page.getByRole('link', { name: 'Browse data as alice@example.com' }).click();
    await page.getByText('What alice@example.com reads').waitFor();
    assert.match(page.url(), new RegExp(`as=end_user(:|%3A)${alice.id}`));
    assert.deepEqual(run.problems, []);
  });
});
