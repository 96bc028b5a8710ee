// A project's end users: find by email, add one (the public register route), set or clear a role,
// delete; and open the data as one of them.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { EndUser } from '../../api/types.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { Link } from '../../components/Link.tsx';
import { notify } from '../../components/Notice.tsx';
import { Empty, Pending } from '../../components/States.tsx';
import { useAction, useLoad, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { when } from '../../lib/format.ts';
import { useProject } from './context.ts';
import { ListTable } from '../../components/ListTable.tsx';

const PAGE = 50;

function AddEndUser({ onAdded }: { onAdded: () => void }) {
  const { project } = useProject();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    // the application's own sign-up route; the session it opens is closed at once
    const res = await api.post<{ token: string | null; user: EndUser; email_verification_required?: boolean }>(`/${seg(project.id)}/auth/register`, { email, password }, { auth: false });
    if (res.token) await api.post(`/${seg(project.id)}/auth/logout`, undefined, { auth: false, headers: { 'x-user-token': res.token } }).catch(() => undefined);
    notify(res.email_verification_required ? `${res.user.email} added; a verification email was sent.` : `${res.user.email} added.`);
    setEmail('');
    setPassword('');
    onAdded();
  });
  const err = (f: string) => fieldError(action.error, f);
  return (
    <form
      class="card"
      aria-labelledby="add-user-title"
      onSubmit={submitWith(action.run)}
    >
      <h2 id="add-user-title">Add an end user</h2>
      <p class="small muted">Registers an account as your app's sign-up would. Handy for trying policies.</p>
      <div class="row-fields">
        <Field id="eu-email" label="Email" error={err('email')}>
          <input {...inputProps('eu-email', err('email'))} type="email" required autocomplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field id="eu-password" label="Password" error={err('password')} hint="8 to 1024 characters.">
          <input {...inputProps('eu-password', err('password'), true)} type="password" required minLength={8} autocomplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
      </div>
      <ErrorBox error={formError(action.error, ['email', 'password'])} />
      <button type="submit" class="primary" disabled={action.busy}>
        Add end user
      </button>
    </form>
  );
}

function RoleCell({ user, onSaved }: { user: EndUser; onSaved: (u: EndUser) => void }) {
  const { project } = useProject();
  const [role, setRole] = useState(user.role ?? '');
  const save = useAction(async (value: string | null) => {
    const u = await api.patch<EndUser>(`/projects/${seg(project.id)}/end-users/${user.id}`, { role: value });
    setRole(u.role ?? '');
    notify(u.role ? `Role of ${u.email} set to ${u.role}.` : `Role of ${u.email} cleared.`);
    onSaved(u);
  });
  const id = `role-${user.id}`;
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        void save.run(role.trim() === '' ? null : role.trim());
      }}
    >
      <input {...inputProps(id, save.error?.message)} aria-label={`Role of ${user.email}`} class="role-input" value={role} placeholder="no role" onInput={(e) => setRole(e.currentTarget.value)} />
      <button type="submit" class="secondary small-button" disabled={save.busy || role === (user.role ?? '')}>
        Set<span class="visually-hidden"> role of {user.email}</span>
      </button>
      {user.role !== null && (
        <button type="button" class="ghost small-button" disabled={save.busy} onClick={() => void save.run(null)}>
          Clear<span class="visually-hidden"> role of {user.email}</span>
        </button>
      )}
      {save.error && (
        <span class="field-error" id={`${id}-error`}>
          {save.error.message}
        </span>
      )}
    </form>
  );
}

export function EndUsers() {
  const { project, base } = useProject();
  useTitle(`End users · ${project.name}`);
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const [deleting, setDeleting] = useState<EndUser | null>(null);
  const users = useLoad(() => api.get<EndUser[]>(`/projects/${seg(project.id)}/end-users`, { query: { limit: PAGE + 1, offset, email: search || undefined } }), [project.id, search, offset]);
  const list = users.data?.slice(0, PAGE);
  const firstTable = project.tables[0];
  return (
    <section class="page">
      <h1 tabIndex={-1}>End users</h1>
      <div class="field search-field">
        <label for="eu-search">Search by email</label>
        <input id="eu-search" type="search" value={search} onInput={(e) => (setSearch(e.currentTarget.value), setOffset(0))} />
      </div>
      {!list ? (
        <Pending error={users.error} retry={users.reload} />
      ) : list.length === 0 ? (
        <Empty title={search ? 'No end user matches' : 'No end users yet'}>{!search && <p>End users sign up through your app, or add one below.</p>}</Empty>
      ) : (
        <ListTable caption="End users" columns={['Id', 'Email', 'Verified', 'Role', 'Created']} actions>
          {list.map((u) => (
            <tr key={u.id}>
              <td class="mono">{u.id}</td>
              <td>{u.email}</td>
              <td>{u.email_verified ? 'yes' : 'no'}</td>
              <td>
                <RoleCell user={u} onSaved={() => void users.reload()} />
              </td>
              <td class="small">{when(u.created_at)}</td>
              <td class="row-actions">
                {firstTable && (
                  <Link href={`${base}/tables/${firstTable.id}/data?as=end_user:${u.id}`} class="small">
                    Browse data as<span class="visually-hidden"> {u.email}</span>
                  </Link>
                )}
                <button type="button" class="ghost danger-text small-button" onClick={() => setDeleting(u)}>
                  Delete<span class="visually-hidden"> {u.email}</span>
                </button>
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      {(offset > 0 || (users.data?.length ?? 0) > PAGE) && (
        <nav class="pager" aria-label="Pages">
          <button type="button" class="secondary small-button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            Previous
          </button>
          <button type="button" class="secondary small-button" disabled={(users.data?.length ?? 0) <= PAGE} onClick={() => setOffset(offset + PAGE)}>
            Next
          </button>
        </nav>
      )}
      <AddEndUser onAdded={() => void users.reload()} />
      {deleting && (
        <ConfirmDialog
          title={`Delete ${deleting.email}?`}
          confirmLabel="Delete end user"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api.del(`/projects/${seg(project.id)}/end-users/${deleting.id}`);
            notify(`${deleting.email} deleted.`);
            await users.reload();
          }}
        >
          <p>Their sessions end at once. Rows they own stay.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
