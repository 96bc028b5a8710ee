// The console in Chromium: the first screens of a new owner, sign up / out / in, the session's
// storage and its end on a 401, account settings, projects, and deleting the account.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeConsole, type ConsoleRun } from '../support/browser.ts';

await describeConsole('console: account and projects', ['sqlite'], (ctx) => {
  let run: ConsoleRun;
  let page: Page;
  const email = 'ada@example.com';

  before(async () => {
    run = ctx();
    page = await run.page();
  });

  test('/ sends a signed-out visitor to sign in; sign-up lands on projects with the first steps', async () => {
    await page.goto(`${run.base}/`);
    await page.waitForURL('**/console/sign-in');
    await run.shot(page, 'sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    // the browser's own minlength check keeps a 7-character password from being sent
    assert.equal(await page.getByLabel('Password').evaluate((el: HTMLInputElement) => el.validity.valid), false);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.getByText('Create your first project').waitFor();
    const steps = await page.locator('.steps li .step-title').allTextContents();
    assert.deepEqual(steps.slice(0, 4), ['Create a project', 'Create a table', 'Add a policy', 'Add an end user']);
    await run.shot(page, 'first-screen');
  });

  test('the token lives in sessionStorage only; a taken email at sign-up is shown on the field', async () => {
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('baseplate.session'), local: localStorage.length, cookie: document.cookie }));
    assert.match(JSON.parse(stored.session!).token, /^[0-9a-f]{64}$/);
    assert.equal(stored.local, 0);
    assert.equal(stored.cookie, '');
    const other = await run.page();
    await other.goto(`${run.base}/console/sign-up`);
    await other.getByRole('heading', { name: 'Sign in' }).or(other.getByRole('heading', { name: 'Create your account' })).waitFor();
    // a new tab has no session (sessionStorage is per tab)
    await other.getByRole('heading', { name: 'Create your account' }).waitFor();
    await other.getByLabel('Your name').fill('Eve');
    await other.getByLabel('Email').fill(email);
    await other.getByLabel('Password').fill('another password');
    await other.getByRole('button', { name: 'Create account' }).click();
    const error = other.locator('#signup-email-error');
    await error.waitFor();
    assert.match(await error.textContent() ?? '', /already exists/);
    assert.equal(await other.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    await other.close();
  });

  test('projects: create, open, rename and describe', async () => {
    await page.getByLabel('Project name').fill('Todo app');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Todo app' }).waitFor();
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Name').fill('Todos');
    await page.getByLabel('Description').fill('A list per user');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Project saved.' }).waitFor();
    const projects = (await run.api('GET', '/projects', { token: await token(page) })).body;
    assert.equal(projects.length, 1);
    assert.equal(projects[0].name, 'Todos');
    assert.equal(projects[0].description, 'A list per user');
    await page.getByRole('link', { name: 'Projects', exact: true }).click();
    await page.getByRole('link', { name: 'Todos' }).waitFor();
    await page.getByText('A list per user').waitFor();
    await page.getByLabel('Project name').fill('Scratch');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Scratch' }).waitFor();
  });

  test('a project is deleted only after its name is typed', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('button', { name: 'Delete project…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete project Scratch?' });
    const confirm = dialog.getByRole('button', { name: 'Delete project' });
    assert.equal(await confirm.isDisabled(), true);
    await dialog.getByLabel('Type Scratch to confirm').fill('scratch');
    assert.equal(await confirm.isDisabled(), true, 'case matters');
    await dialog.getByLabel('Type Scratch to confirm').fill('Scratch');
    await confirm.click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.getByRole('link', { name: 'Todos' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Scratch' }).count(), 0);
    assert.deepEqual((await run.api('GET', '/projects', { token: await token(page) })).body.map((p: { name: string }) => p.name), ['Todos']);
  });

  test('account: name, then email and password with the current password (a wrong one shown on its field)', async () => {
    await page.getByRole('link', { name: 'Ada' }).click();
    await page.getByRole('heading', { name: 'Account', exact: true }).waitFor();
    await page.locator('#acct-name').fill('Ada Lovelace');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('link', { name: 'Ada Lovelace' }).waitFor();
    await page.locator('#acct-email').fill('ada@lovelace.example');
    await page.locator('#acct-email-current').fill('wrong password');
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.locator('#acct-email-current-error').filter({ hasText: 'current password is wrong' }).waitFor();
    await page.locator('#acct-email-current').fill('correct horse battery');
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.getByRole('status').filter({ hasText: 'Email changed.' }).waitFor();
    await page.locator('#acct-password-current').fill('correct horse battery');
    await page.locator('#acct-password').fill('a new horse battery');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password changed.' }).waitFor();
    const me = (await run.api('GET', '/auth/me', { token: await token(page) })).body;
    assert.deepEqual([me.name, me.email], ['Ada Lovelace', 'ada@lovelace.example']);
  });

  test('sign out forgets the token; a wrong password is refused with the server\'s message; sign in returns', async () => {
    const old = await token(page);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('baseplate.session')), null);
    assert.equal((await run.api('GET', '/auth/me', { token: old })).status, 401, 'the token was revoked');
    await page.getByLabel('Email').fill('ada@lovelace.example');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The email or password is wrong.' }).waitFor();
    await page.getByLabel('Password').fill('a new horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Todos' }).waitFor();
  });

  test('a deep link survives sign-in, and a 401 anywhere ends the session with a reason', async () => {
    const pid = (await run.api('GET', '/projects', { token: await token(page) })).body[0].id;
    await run.api('POST', '/auth/logout', { token: await token(page) }); // the session ends elsewhere
    await page.goto(`${run.base}/console/projects/${pid}/keys`);
    await page.getByText('Your session has ended. Sign in again.').waitFor();
    // the sign-in screen renders with the reason first, then its effect replaces the URL
    await page.waitForURL(/\/console\/sign-in\?next=/);
    await page.getByLabel('Email').fill('ada@lovelace.example');
    await page.getByLabel('Password').fill('a new horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    assert.match(page.url(), new RegExp(`/console/projects/${pid}/keys$`));
  });

  test('at 390 px the projects and the project menu fit the screen', async () => {
    const narrow = await run.page(390);
    await run.signIn(narrow, 'ada@lovelace.example', 'a new horse battery');
    await narrow.getByRole('link', { name: 'Todos' }).click();
    await narrow.getByRole('heading', { name: 'Todos' }).waitFor();
    const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no horizontal scrolling of the page (${overflow}px)`);
    await run.shot(narrow, 'project-390');
    await narrow.close();
  });

  test('deleting the account needs the email typed; afterwards sign-in fails', async () => {
    await page.getByRole('link', { name: 'Ada Lovelace' }).click();
    await page.getByRole('button', { name: 'Delete account…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(/Type .* to confirm/).fill('ada@lovelace.example');
    await dialog.getByRole('button', { name: 'Delete account and all projects' }).click();
    await page.getByText('Your account has been deleted.').waitFor();
    assert.equal((await run.api('POST', '/auth/login', { body: { email: 'ada@lovelace.example', password: 'a new horse battery' } })).status, 401);
    assert.deepEqual(run.problems, []);
  });
});

async function token(page: Page): Promise<string> {
  return page.evaluate(() => JSON.parse(sessionStorage.getItem('baseplate.session')!).token as string);
}
