// API keys: create (permissions, expiry) with the plaintext shown once, list, revoke.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import { PERMISSIONS, type ApiKey, type NewApiKey, type Permission } from '../../api/types.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { CopyButton } from '../../components/CopyButton.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { Empty, Pending } from '../../components/States.tsx';
import { useAction, useLoad, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { when } from '../../lib/format.ts';
import { forgetTestKey } from '../../lib/test-keys.ts';
import { useProject } from './context.ts';
import { ListTable } from '../../components/ListTable.tsx';

const EXPIRY = [
  ['never', 'Never'],
  ['1', '1 day'],
  ['30', '30 days'],
  ['365', '1 year'],
  ['custom', 'On a date…'],
] as const;

function expiresAt(choice: string, custom: string): string | null {
  if (choice === 'never') return null;
  if (choice === 'custom') return custom ? `${custom}Z` : '';
  return new Date(Date.now() + Number(choice) * 86_400_000).toISOString();
}

/** The new key's plaintext: shown here once, forgotten when the owner closes it. */
function NewKeyBox({ created, onDone }: { created: NewApiKey; onDone: () => void }) {
  return (
    <div class="card new-key" role="region" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Key “{created.name}” created</h2>
      <p>
        <strong>Copy it now: it is shown only this once.</strong> Baseplate keeps only its hash.
      </p>
      <div class="copy-line">
        <label for="new-key-value" class="visually-hidden">
          The new API key
        </label>
        <input id="new-key-value" class="mono" readOnly value={created.key} onFocus={(e) => e.currentTarget.select()} />
        <CopyButton text={created.key} selectId="new-key-value" />
      </div>
      <button type="button" class="secondary" onClick={onDone}>
        Done, I have copied it
      </button>
    </div>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: NewApiKey) => void }) {
  const { project } = useProject();
  const [name, setName] = useState('');
  const [perms, setPerms] = useState<Set<Permission>>(new Set(['select']));
  const [expiry, setExpiry] = useState('never');
  const [custom, setCustom] = useState('');
  const action = useAction(async () => {
    const key = await api.post<NewApiKey>(`/projects/${seg(project.id)}/keys`, { name, permissions: PERMISSIONS.filter((p) => perms.has(p)), expires_at: expiresAt(expiry, custom) });
    setName('');
    onCreated(key);
  });
  const toggle = (p: Permission, on: boolean) => {
    const next = new Set(perms);
    if (on) next.add(p);
    else next.delete(p);
    setPerms(next);
  };
  const err = (f: string) => fieldError(action.error, f);
  return (
    <form
      class="card"
      aria-labelledby="create-key-title"
      onSubmit={submitWith(action.run)}
    >
      <h2 id="create-key-title">Create a key</h2>
      <Field id="key-name" label="Name" error={err('name')}>
        <input {...inputProps('key-name', err('name'))} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="web app" />
      </Field>
      <fieldset class={err('permissions') ? 'has-error' : ''} aria-describedby={err('permissions') ? 'key-perms-error' : undefined}>
        <legend>Permissions</legend>
        <div class="checks">
          {PERMISSIONS.map((p) => (
            <label key={p}>
              <input type="checkbox" checked={perms.has(p)} onChange={(e) => toggle(p, e.currentTarget.checked)} /> {p}
            </label>
          ))}
        </div>
        {err('permissions') && (
          <p class="field-error" id="key-perms-error">
            {err('permissions')}
          </p>
        )}
      </fieldset>
      <div class="row-fields">
        <Field id="key-expiry" label="Expires">
          <select {...inputProps('key-expiry')} value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
            {EXPIRY.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </Field>
        {expiry === 'custom' && (
          <Field id="key-expires-at" label="Expiry (UTC)" error={err('expires_at')}>
            <input {...inputProps('key-expires-at', err('expires_at'))} type="datetime-local" required value={custom} onInput={(e) => setCustom(e.currentTarget.value)} />
          </Field>
        )}
      </div>
      {expiry !== 'custom' && err('expires_at') && <p class="field-error">{err('expires_at')}</p>}
      <ErrorBox error={formError(action.error, ['name', 'permissions', 'expires_at'])} />
      <button type="submit" class="primary" disabled={action.busy}>
        Create key
      </button>
    </form>
  );
}

export function Keys() {
  const { project } = useProject();
  useTitle(`API keys · ${project.name}`);
  const keys = useLoad(() => api.get<ApiKey[]>(`/projects/${seg(project.id)}/keys`), [project.id]);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const list = keys.data;
  return (
    <section class="page">
      <h1 tabIndex={-1}>API keys</h1>
      <p class="muted">
        Apps send a key as <code>Authorization: Bearer …</code> (supabase-js: <code>apikey</code>). Its permissions decide which methods it may use; the policies decide
        which rows.
      </p>
      {created ? (
        <NewKeyBox created={created} onDone={() => setCreated(null)} />
      ) : (
        <CreateKey
          onCreated={(k) => {
            setCreated(k);
            void keys.reload();
          }}
        />
      )}
      {!list ? (
        <Pending error={keys.error} retry={keys.reload} />
      ) : list.length === 0 ? (
        <Empty title="No keys yet" />
      ) : (
        <ListTable caption="API keys" columns={['Name', 'Prefix', 'Permissions', 'Created', 'Last used', 'Expires']} actions>
          {list.map((k) => {
            const expired = k.expires_at !== null && Date.parse(k.expires_at) <= Date.now();
            return (
              <tr key={k.key_id} class={expired ? 'disabled' : ''}>
                <td>{k.name}</td>
                <td class="mono">{k.key_prefix}…</td>
                <td class="small">{k.permissions.join(', ')}</td>
                <td class="small">{when(k.created_at)}</td>
                <td class="small">{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
                <td class="small">{k.expires_at ? `${expired ? 'expired ' : ''}${when(k.expires_at)}` : 'never'}</td>
                <td class="row-actions">
                  <button type="button" class="ghost danger-text small-button" onClick={() => setRevoking(k)}>
                    Revoke<span class="visually-hidden"> {k.name}</span>
                  </button>
                </td>
              </tr>
            );
          })}
        </ListTable>
      )}
      {revoking && (
        <ConfirmDialog
          title={`Revoke key ${revoking.name}?`}
          confirmLabel="Revoke key"
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            await api.del(`/projects/${seg(project.id)}/keys/${seg(revoking.key_id)}`);
            forgetTestKey(project.id, revoking.key_id);
            notify(`Key ${revoking.name} revoked.`);
            await keys.reload();
          }}
        >
          <p>Apps using it get 401 from the next request on.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
