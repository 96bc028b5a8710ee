// Validation errors name the limit or the allowed values (issue [H]), in the sentence and in
// machine-readable details, on every engine; `code`, `details.field` and `details.reason` stay
// what clients already read. Schema rules (src/http/schema-errors.ts) and service rules alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, uniqueEmail, type Reply } from '../support/app.ts';

interface Case {
  what: string;
  send: (ctx: { token: string; pid: string }) => [method: string, url: string, body?: unknown];
  code?: string;
  field: string;
  reason: string;
  /** the details beyond field and reason */
  extra: Record<string, unknown>;
  /** what the sentence must say */
  says: RegExp;
}

const TYPES = ['text', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'];

const CASES: Case[] = [
  {
    what: 'a password under the minimum (schema)',
    send: () => ['POST', '/auth/register', { name: 'A', email: uniqueEmail(), password: 'short' }],
    field: 'password',
    reason: 'too_short',
    extra: { min: 8 },
    says: /^The field 'password' must have at least 8 characters\.$/,
  },
  {
    what: 'a project name over the maximum (schema)',
    send: () => ['POST', '/projects', { name: 'x'.repeat(101) }],
    field: 'name',
    reason: 'too_long',
    extra: { max: 100 },
    says: /at most 100 characters/,
  },
  {
    what: 'a column type not allowed (schema)',
    send: ({ pid }) => ['POST', `/projects/${pid}/tables`, { name: 't1', columns: [{ name: 'a', type: 'varchar' }] }],
    field: 'columns[0].type',
    reason: 'not_allowed',
    extra: { allowed: TYPES },
    says: /must be one of: text, integer, number, boolean, timestamp, date, json\.$/,
  },
  {
    what: 'an encryption not allowed, null allowed (schema)',
    send: ({ pid }) => ['PUT', `/projects/${pid}/auth/email-config`, { smtp_encryption: 'starttls' }],
    field: 'smtp_encryption',
    reason: 'not_allowed',
    extra: { allowed: ['none', 'ssl', 'tls', null] },
    says: /must be one of: none, ssl, tls, null\./,
  },
  {
    what: 'a provider not allowed (schema)',
    send: ({ pid }) => ['PUT', `/projects/${pid}/auth/email-config`, { provider: 'sendgrid' }],
    field: 'provider',
    reason: 'not_allowed',
    extra: { allowed: ['smtp', 'emailapi'] },
    says: /must be one of: smtp, emailapi\./,
  },
  {
    what: 'an SMTP port not allowed (service)',
    send: ({ pid }) => ['PUT', `/projects/${pid}/auth/email-config`, { provider: 'smtp', from_address: 'a@example.com', smtp_host: 'smtp.example.com', smtp_port: 26 }],
    field: 'smtp_port',
    reason: 'not_allowed',
    extra: { allowed: [25, 465, 587, 2525] },
    says: /smtp_port must be one of 25, 465, 587, 2525\./,
  },
  {
    what: 'no permission at all (schema)',
    send: ({ pid }) => ['POST', `/projects/${pid}/keys`, { name: 'k', permissions: [] }],
    field: 'permissions',
    reason: 'too_few',
    extra: { min: 1 },
    says: /at least 1 entries/,
  },
  {
    what: 'a permission not allowed (service)',
    send: ({ pid }) => ['POST', `/projects/${pid}/keys`, { name: 'k', permissions: ['select', 'admin'] }],
    field: 'permissions[1]',
    reason: 'not_allowed',
    extra: { allowed: ['select', 'insert', 'update', 'delete', 'function'] },
    says: /allowed: select, insert, update, delete, function\./,
  },
  {
    what: 'more redirect URLs than allowed (schema)',
    send: ({ pid }) => ['PUT', `/projects/${pid}/auth/settings`, { redirect_urls: Array.from({ length: 21 }, (_, i) => `https://a${i}.example.com/`) }],
    field: 'redirect_urls',
    reason: 'too_many',
    extra: { max: 20 },
    says: /at most 20 entries/,
  },
  {
    what: 'a role of the wrong type (schema)',
    send: ({ pid }) => ['PATCH', `/projects/${pid}/end-users/1`, { role: 5 }],
    field: 'role',
    reason: 'wrong_type',
    extra: { expected: ['string', 'null'] },
    says: /must be of type string or null\./,
  },
  {
    what: 'a policy operation not allowed (service)',
    send: ({ pid }) => ['POST', `/projects/${pid}/tables/TABLE/rls-policies`, { name: 'p', operation: 'UPSERT', expression: 'true' }],
    field: 'operation',
    reason: 'not_allowed',
    extra: { allowed: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'ALL'] },
    says: /operation must be one of SELECT, INSERT, UPDATE, DELETE, ALL\./,
  },
  {
    what: 'a template key not allowed (service)',
    send: ({ pid }) => ['POST', `/projects/${pid}/auth/templates/preview`, { subject: 's', body: 'b', key: 'welcome' }],
    field: 'key',
    reason: 'not_allowed',
    extra: { allowed: ['magic_link', 'password_reset', 'email_verification', 'email_change'] },
    says: /key must be one of magic_link, password_reset, email_verification, email_change\./,
  },
  {
    what: 'a policy name over the maximum (service)',
    send: ({ pid }) => ['POST', `/projects/${pid}/tables/TABLE/rls-policies`, { name: ' '.repeat(3), operation: 'SELECT', expression: 'true' }],
    field: 'name',
    reason: 'empty',
    extra: { min: 1, max: 100 },
    says: /1 to 100 characters/,
  },
];

await describeEngines('validation messages name the limit or the allowed values', (ctx) => {
  test('each rule names its limit or allowed values; code, field and reason are unchanged; nothing is written', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const pid = (await createProject(t, token)).id;
    const table = await t.req('POST', `/projects/${pid}/tables`, { token, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
    assert.equal(table.status, 201);
    for (const c of CASES) {
      const [method, url, body] = c.send({ token, pid });
      const res: Reply = await t.req(method, url.replace('TABLE', table.body.id), { token, body });
      const err = expectError(res, 422, c.code ?? 'validation_failed');
      assert.deepEqual(err.details, { field: c.field, reason: c.reason, ...c.extra }, `${c.what}: details`);
      assert.match(err.message, c.says, `${c.what}: message`);
    }
    const after = await t.req('GET', `/projects/${pid}`, { token });
    assert.deepEqual(after.body.tables.map((x: { name: string }) => x.name), ['notes'], 'no table was created');
    assert.deepEqual((await t.req('GET', `/projects/${pid}/keys`, { token })).body, [], 'no key was created');
  });
});
