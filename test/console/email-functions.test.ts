// The console in Chromium: auth settings, the email provider (secrets write-only: only has_* comes
// back), a test email through a real HTTP email API (a local capture) with the sanitized failure,
// templates with a live preview in a sandboxed frame, and functions: editor, deploy (with the
// server's refusal), test invocations as anonymous and as an end user, delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeConsole, type ConsoleRun } from '../support/browser.ts';
import { startApiCapture } from '../support/mail-capture.ts';

const capture = await startApiCapture();
after(() => capture.close());

await describeConsole(
  'console: auth, email, templates and functions',
  ['sqlite'],
  (ctx) => {
    let run: ConsoleRun;
    let page: Page;
    let owner: string;
    let pid: string;
    const base = () => `${run.base}/console/projects/${pid}`;

    before(async () => {
      run = ctx();
      owner = (await run.api('POST', '/auth/register', { body: { name: 'Kim', email: 'kim@example.com', password: 'correct horse battery' } })).body.token;
      pid = (await run.api('POST', '/projects', { token: owner, body: { name: 'Mail' } })).body.id;
      await run.api('POST', `/${pid}/auth/register`, { body: { email: 'ada@example.com', password: 'end user password' } });
      page = await run.page();
      await run.signIn(page, 'kim@example.com', 'correct horse battery');
    });

    test('auth settings: an invalid URL is refused on its field; the saved values come back', async () => {
      await page.goto(`${base()}/auth`);
      await page.getByLabel('Site URL').fill('https://app.example.com');
      await page.getByLabel('Allowed redirect URLs').fill('https://app.example.com/welcome\nftp://nope.example.com');
      await page.getByRole('button', { name: 'Save auth settings' }).click();
      await page.locator('#redirect-urls-error').waitFor();
      await page.getByLabel('Allowed redirect URLs').fill('https://app.example.com/welcome\nhttps://app.example.com/reset');
      await page.getByRole('button', { name: 'Save auth settings' }).click();
      await page.getByRole('status').filter({ hasText: 'Auth settings saved.' }).waitFor();
      const s = (await run.api('GET', `/projects/${pid}/auth/settings`, { token: owner })).body;
      assert.deepEqual(s, { site_url: 'https://app.example.com/', redirect_urls: ['https://app.example.com/welcome', 'https://app.example.com/reset'] });
    });

    test('email provider: SMTP password is write-only (stored, never shown, removable)', async () => {
      await page.getByRole('radio', { name: 'SMTP' }).check();
      await page.getByLabel('From address').fill('no-reply@example.com');
      await page.getByLabel('From name').fill('Mail app');
      await page.getByLabel('SMTP host').fill('smtp.example.com');
      await page.getByLabel('Username').fill('mailer');
      await page.getByLabel('Password', { exact: true }).fill('smtp secret 123');
      await page.getByRole('button', { name: 'Save email provider' }).click();
      await page.getByRole('status').filter({ hasText: 'Email configuration saved.' }).waitFor();
      await page.getByText('One is stored. Leave empty to keep it.').waitFor();
      assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '');
      let cfg = (await run.api('GET', `/projects/${pid}/auth/email-config`, { token: owner })).body;
      assert.equal(cfg.has_smtp_password, true);
      assert.equal(JSON.stringify(cfg).includes('smtp secret 123'), false);
      await page.reload();
      await page.getByText('One is stored. Leave empty to keep it.').waitFor();
      assert.equal((await page.content()).includes('smtp secret 123'), false, 'the secret never reaches the page');
      await page.getByRole('checkbox', { name: 'Remove' }).check();
      await page.getByRole('button', { name: 'Save email provider' }).click();
      await page.getByText('None stored.').waitFor();
      cfg = (await run.api('GET', `/projects/${pid}/auth/email-config`, { token: owner })).body;
      assert.equal(cfg.has_smtp_password, false);
      assert.equal(cfg.smtp_host, 'smtp.example.com');
    });

    test('a test email through the email API; a refused one shows the sanitized reason', async () => {
      await page.getByRole('radio', { name: 'Email API' }).check();
      await page.getByLabel('Email API key').fill('re_test_key_42');
      await page.getByRole('button', { name: 'Save email provider' }).click();
      await page.getByRole('status').filter({ hasText: 'Email configuration saved.' }).waitFor();
      await page.getByLabel('To').fill('owner@example.com');
      await page.getByRole('button', { name: 'Send test email' }).click();
      await page.getByText('Sent to owner@example.com').waitFor();
      const sent = capture.requests.at(-1)!;
      assert.equal(sent.path, '/emails');
      assert.equal(sent.authorization, 'Bearer re_test_key_42');
      assert.deepEqual(sent.body.to, ['owner@example.com']);
      capture.status = 500;
      await page.getByRole('button', { name: 'Send test email' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'Not sent:' });
      await alert.waitFor();
      assert.match((await alert.textContent())!, /email_delivery_failed/);
      capture.status = 200;
      await run.shot(page, 'auth-email');
    });

    test('templates: the preview follows the editor, a save makes it custom, reset brings the default back', async () => {
      await page.getByRole('link', { name: 'Email templates' }).click();
      await page.getByRole('tab', { name: 'Password reset' }).click();
      await page.getByLabel('Subject').fill('Reset for {{project_name}}, {{email}}');
      await page.getByTestId('preview-subject').filter({ hasText: /^Reset for Mail, .+@/ }).waitFor();
      const frame = page.frameLocator('iframe[title="Email preview"]');
      await frame.getByRole('link', { name: 'Choose a new password' }).waitFor();
      // the sandboxed frame renders the template's inline styles (allowed: style attributes only)
      const color = await frame.getByRole('link', { name: 'Choose a new password' }).evaluate((a) => getComputedStyle(a).backgroundColor);
      assert.equal(color, 'rgb(37, 99, 235)');
      await page.getByLabel('HTML body').fill('<p>Hello {{email}}, <a href="{{link}}">reset</a>.</p><script>parent.document.title = "owned"</script>');
      await frame.getByText('Hello').waitFor();
      await run.shot(page, 'templates');
      assert.notEqual(await page.title(), 'owned', 'scripts in the preview do not run');
      await page.getByRole('button', { name: 'Save template' }).click();
      await page.getByRole('tab', { name: 'Password reset (custom)' }).waitFor();
      const t = (await run.api('GET', `/projects/${pid}/auth/templates/password_reset`, { token: owner })).body;
      assert.equal(t.is_custom, true);
      assert.equal(t.subject, 'Reset for {{project_name}}, {{email}}');
      await page.getByRole('button', { name: 'Reset to default…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Reset' }).click();
      await page.getByRole('tab', { name: 'Password reset', exact: true }).waitFor();
      assert.equal((await run.api('GET', `/projects/${pid}/auth/templates/password_reset`, { token: owner })).body.is_custom, false);
    });

    test('functions: write one (Tab indents), a refused deploy shows why, deploy, invoke as anonymous and as an end user', async () => {
      await page.getByRole('link', { name: 'Functions' }).click();
      await page.getByText('No functions yet').waitFor();
      await page.getByLabel('New function name').fill('hello');
      await page.getByRole('button', { name: 'Write function' }).click();
      const editor = page.getByLabel('Code');
      await editor.waitFor();
      assert.match(await editor.inputValue(), /export default async/);
      await editor.fill('export default 42');
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'Not deployed:' }).waitFor();
      await editor.fill('');
      await editor.pressSequentially('export default async (request, context) => {\nreturn {');
      await editor.press('Enter');
      await editor.press('Tab');
      await editor.pressSequentially("who: context.auth ? context.auth.email : 'anonymous', got: request.body,\n};\n};");
      assert.match(await editor.inputValue(), /\n  who: /, 'Tab inserted two spaces');
      await editor.press('Escape');
      await editor.press('Tab');
      assert.notEqual(await page.evaluate(() => document.activeElement?.id), 'fn-code', 'Escape, then Tab, leaves the editor');
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'Function hello deployed.' }).waitFor();
      await page.getByRole('heading', { name: 'Test request' }).waitFor();
      await page.getByLabel('JSON body').fill('{"n": 1}');
      await page.getByRole('button', { name: 'Send request' }).click();
      const outcome = page.locator('.outcome');
      await outcome.getByText('200 OK', { exact: true }).waitFor();
      assert.match((await outcome.locator('.response-body').textContent())!, /"who": "anonymous"[\s\S]*"n": 1/);
      await outcome.getByText(/in \d+ ms/).waitFor();
      await outcome.locator('summary').click();
      await outcome.locator('dt', { hasText: /^content-type$/ }).waitFor();
      await page.getByRole('radio', { name: 'An end user' }).check();
      await page.getByLabel('End user email').fill('ada@example.com');
      await page.getByLabel('Their password').fill('end user password');
      await page.getByRole('button', { name: 'Sign in as them' }).click();
      await page.getByText('Signed in as').waitFor();
      await page.getByRole('button', { name: 'Send request' }).click();
      await outcome.locator('.response-body').filter({ hasText: '"who": "ada@example.com"' }).waitFor();
      await run.shot(page, 'function-invoke');
      // the console's own short-lived key is listed, limited to `function`
      const keys = (await run.api('GET', `/projects/${pid}/keys`, { token: owner })).body;
      const testKey = keys.find((k: { name: string }) => k.name === 'Console test key');
      assert.deepEqual(testKey.permissions, ['function']);
      assert.ok(Date.parse(testKey.expires_at) - Date.now() <= 15 * 60_000);
      assert.equal(await page.evaluate(() => JSON.stringify({ ...sessionStorage }).includes('Console') || Object.keys({ ...localStorage }).length > 0), false);
    });

    test('deleting a function, and signing out revokes the console test key', async () => {
      await page.getByRole('button', { name: 'Delete function…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete function' }).click();
      await page.getByText('No functions yet').waitFor();
      assert.equal((await run.api('GET', `/projects/${pid}/functions`, { token: owner })).body.length, 0);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const keys = (await run.api('GET', `/projects/${pid}/keys`, { token: owner })).body;
      assert.equal(keys.some((k: { name: string }) => k.name === 'Console test key'), false);
      assert.deepEqual(run.problems, []);
    });
  },
  { EMAILAPI_BASE_URL: capture.baseUrl },
);
