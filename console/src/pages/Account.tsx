// Account settings: name, email, password, and deleting the account.
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { Account } from '../api/types.ts';
import { endSession, session, updateAccount } from '../api/session.ts';
import { Field, inputProps } from '../components/Field.tsx';
import { ErrorBox } from '../components/ErrorBox.tsx';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { notify } from '../components/Notice.tsx';
import { submitWith, useAction } from '../lib/use-load.ts';
import { fieldError, formError } from '../lib/form-errors.ts';
import { useTitle } from '../lib/title.ts';
import { when } from '../lib/format.ts';

function useAccountForm(fields: readonly string[], build: () => Record<string, string>, done: string, reset?: () => void) {
  const action = useAction(async () => {
    const account = await api.patch<Account>('/auth/me', build());
    updateAccount(account);
    reset?.();
    notify(done);
  });
  return {
    action,
    err: (f: string) => fieldError(action.error, f),
    rest: formError(action.error, fields),
    submit: submitWith(action.run),
  };
}

function CurrentPassword({ id, value, onValue, error }: { id: string; value: string; onValue: (v: string) => void; error: string | null }) {
  return (
    <Field id={id} label="Current password" error={error}>
      <input {...inputProps(id, error)} type="password" required value={value} onInput={(e) => onValue(e.currentTarget.value)} autocomplete="current-password" />
    </Field>
  );
}

function NameForm({ account }: { account: Account }) {
  const [name, setName] = useState(account.name);
  const f = useAccountForm(['name'], () => ({ name }), 'Name saved.');
  return (
    <form class="card" aria-labelledby="acct-name-title" onSubmit={f.submit}>
      <h2 id="acct-name-title">Name</h2>
      <Field id="acct-name" label="Name" error={f.err('name')}>
        <input {...inputProps('acct-name', f.err('name'))} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} autocomplete="name" />
      </Field>
      <ErrorBox error={f.rest} />
      <button type="submit" class="primary" disabled={f.action.busy || name === account.name}>
        Save name
      </button>
    </form>
  );
}

function EmailForm({ account }: { account: Account }) {
  const [email, setEmail] = useState(account.email);
  const [current, setCurrent] = useState('');
  const f = useAccountForm(['email', 'current_password'], () => ({ email, current_password: current }), 'Email changed.', () => setCurrent(''));
  return (
    <form class="card" aria-labelledby="acct-email-title" onSubmit={f.submit}>
      <h2 id="acct-email-title">Email</h2>
      <Field id="acct-email" label="Email" error={f.err('email')}>
        <input {...inputProps('acct-email', f.err('email'))} type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} autocomplete="username" />
      </Field>
      <CurrentPassword id="acct-email-current" value={current} onValue={setCurrent} error={f.err('current_password')} />
      <ErrorBox error={f.rest} />
      <button type="submit" class="primary" disabled={f.action.busy || email === account.email}>
        Change email
      </button>
    </form>
  );
}

function PasswordForm() {
  const [password, setPassword] = useState('');
  const [current, setCurrent] = useState('');
  const f = useAccountForm(['password', 'current_password'], () => ({ password, current_password: current }), 'Password changed. Your other sessions have ended.', () => {
    setPassword('');
    setCurrent('');
  });
  return (
    <form class="card" aria-labelledby="acct-password-title" onSubmit={f.submit}>
      <h2 id="acct-password-title">Password</h2>
      <CurrentPassword id="acct-password-current" value={current} onValue={setCurrent} error={f.err('current_password')} />
      <Field id="acct-password" label="New password" error={f.err('password')} hint="8 to 1024 characters. Signs out your other sessions.">
        <input
          {...inputProps('acct-password', f.err('password'), true)}
          type="password"
          required
          minLength={8}
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          autocomplete="new-password"
        />
      </Field>
      <ErrorBox error={f.rest} />
      <button type="submit" class="primary" disabled={f.action.busy}>
        Change password
      </button>
    </form>
  );
}

export function AccountPage() {
  useTitle('Account');
  const account = session()!.account;
  const [deleting, setDeleting] = useState(false);
  return (
    <section class="page narrow">
      <h1 tabIndex={-1}>Account</h1>
      <p class="muted">
        {account.email} · since {when(account.created_at)}
      </p>
      <NameForm account={account} />
      <EmailForm key={account.email} account={account} />
      <PasswordForm />
      <div class="card danger-zone">
        <h2>Delete account</h2>
        <p>Deletes your account, every project you own and all their data. This cannot be undone.</p>
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete account…
        </button>
      </div>
      {deleting && (
        <ConfirmDialog
          title="Delete your account?"
          confirmLabel="Delete account and all projects"
          typed={account.email}
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api.del('/auth/me');
            endSession('Your account has been deleted.');
          }}
        >
          <p>Every project, table, row, end user, key and function you own is deleted with it.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
