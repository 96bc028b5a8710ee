// The email provider: SMTP or an email API. Passwords and API keys are write-only: empty keeps the
// stored one, "Remove" clears it, and the form shows only whether one is stored.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { EmailConfig } from '../../api/types.ts';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useProject } from './context.ts';

const FIELDS = ['provider', 'from_address', 'from_name', 'smtp_host', 'smtp_port', 'smtp_username', 'smtp_encryption', 'smtp_password', 'emailapi_api_key', 'require_email_confirmation'];

type Secret = { text: string; clear: boolean };

function SecretField({ id, label, stored, value, onChange, error }: { id: string; label: string; stored: boolean; value: Secret; onChange: (s: Secret) => void; error: string | null }) {
  return (
    <Field id={id} label={label} error={error} hint={stored ? (value.clear ? 'Will be removed when you save.' : 'One is stored. Leave empty to keep it.') : 'None stored.'}>
      <div class="inline">
        <input {...inputProps(id, error, true)} type="password" autocomplete="new-password" value={value.text} disabled={value.clear} onInput={(e) => onChange({ text: e.currentTarget.value, clear: false })} />
        {stored && (
          <label class="check small">
            <input type="checkbox" checked={value.clear} onChange={(e) => onChange({ text: '', clear: e.currentTarget.checked })} /> Remove
          </label>
        )}
      </div>
    </Field>
  );
}

function secretValue(s: Secret): string | undefined {
  if (s.clear) return '';
  return s.text === '' ? undefined : s.text;
}

interface SmtpProps {
  c: EmailConfig;
  set: (patch: Partial<EmailConfig>) => void;
  err: (field: string) => string | null;
  password: Secret;
  setPassword: (s: Secret) => void;
}

function SmtpFields({ c, set, err, password, setPassword }: SmtpProps) {
  return (
    <>
      <div class="row-fields">
        <Field id="smtp-host" label="SMTP host" error={err('smtp_host')} class="grow">
          <input {...inputProps('smtp-host', err('smtp_host'))} required value={c.smtp_host ?? ''} onInput={(e) => set({ smtp_host: e.currentTarget.value })} />
        </Field>
        <Field id="smtp-port" label="Port" error={err('smtp_port')}>
          <select {...inputProps('smtp-port', err('smtp_port'))} value={String(c.smtp_port ?? 587)} onChange={(e) => set({ smtp_port: Number(e.currentTarget.value) })}>
            {[25, 465, 587, 2525].map((p) => (
              <option key={p} value={String(p)}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field id="smtp-encryption" label="Encryption" error={err('smtp_encryption')}>
          <select {...inputProps('smtp-encryption', err('smtp_encryption'))} value={c.smtp_encryption ?? 'tls'} onChange={(e) => set({ smtp_encryption: e.currentTarget.value as EmailConfig['smtp_encryption'] })}>
            <option value="tls">STARTTLS</option>
            <option value="ssl">TLS (implicit)</option>
            <option value="none">none</option>
          </select>
        </Field>
      </div>
      <div class="row-fields">
        <Field id="smtp-username" label="Username" error={err('smtp_username')}>
          <input {...inputProps('smtp-username', err('smtp_username'))} autocomplete="off" value={c.smtp_username ?? ''} onInput={(e) => set({ smtp_username: e.currentTarget.value })} />
        </Field>
        <SecretField id="smtp-password" label="Password" stored={c.has_smtp_password} value={password} onChange={setPassword} error={err('smtp_password')} />
      </div>
    </>
  );
}

export function EmailConfigForm({ initial, onSaved }: { initial: EmailConfig; onSaved: (c: EmailConfig) => void }) {
  const { project } = useProject();
  const [c, setC] = useState(initial);
  const [password, setPassword] = useState<Secret>({ text: '', clear: false });
  const [apiKey, setApiKey] = useState<Secret>({ text: '', clear: false });
  const set = (patch: Partial<EmailConfig>) => setC({ ...c, ...patch });
  const save = useAction(async () => {
    const body: Record<string, unknown> = { require_email_confirmation: c.require_email_confirmation };
    if (c.provider) Object.assign(body, { provider: c.provider, from_address: c.from_address ?? '', from_name: c.from_name ?? '' });
    if (c.provider === 'smtp') Object.assign(body, { smtp_host: c.smtp_host || null, smtp_port: c.smtp_port, smtp_username: c.smtp_username || null, smtp_encryption: c.smtp_encryption, smtp_password: secretValue(password) });
    if (c.provider === 'emailapi') body.emailapi_api_key = secretValue(apiKey);
    const saved = await api.put<EmailConfig>(`/projects/${seg(project.id)}/auth/email-config`, body);
    setPassword({ text: '', clear: false });
    setApiKey({ text: '', clear: false });
    setC(saved);
    onSaved(saved);
    notify('Email configuration saved.');
  });
  const err = (f: string) => fieldError(save.error, f);
  return (
    <form
      class="card"
      aria-labelledby="email-config-title"
      onSubmit={submitWith(save.run)}
    >
      <h2 id="email-config-title">Email provider</h2>
      <fieldset>
        <legend>Provider</legend>
        <div class="radios">
          {initial.provider === null && (
            <label>
              <input type="radio" name="provider" checked={c.provider === null} onChange={() => set({ provider: null })} /> None yet
            </label>
          )}
          <label>
            <input type="radio" name="provider" checked={c.provider === 'smtp'} onChange={() => set({ provider: 'smtp', smtp_port: c.smtp_port ?? 587, smtp_encryption: c.smtp_encryption ?? 'tls' })} /> SMTP
          </label>
          <label>
            <input type="radio" name="provider" checked={c.provider === 'emailapi'} onChange={() => set({ provider: 'emailapi' })} /> Email API
          </label>
        </div>
        {err('provider') && <p class="field-error">{err('provider')}</p>}
      </fieldset>
      {c.provider && (
        <div class="row-fields">
          <Field id="from-address" label="From address" error={err('from_address')}>
            <input {...inputProps('from-address', err('from_address'))} type="email" required value={c.from_address ?? ''} onInput={(e) => set({ from_address: e.currentTarget.value })} />
          </Field>
          <Field id="from-name" label="From name" error={err('from_name')}>
            <input {...inputProps('from-name', err('from_name'))} value={c.from_name ?? ''} onInput={(e) => set({ from_name: e.currentTarget.value })} />
          </Field>
        </div>
      )}
      {c.provider === 'smtp' && <SmtpFields c={c} set={set} err={err} password={password} setPassword={setPassword} />}
      {c.provider === 'emailapi' && <SecretField id="emailapi-key" label="Email API key" stored={c.has_emailapi_api_key} value={apiKey} onChange={setApiKey} error={err('emailapi_api_key')} />}
      <label class="check">
        <input type="checkbox" checked={c.require_email_confirmation} onChange={(e) => set({ require_email_confirmation: e.currentTarget.checked })} /> Require email confirmation before end users can sign in
      </label>
      <ErrorBox error={formError(save.error, FIELDS)} />
      <div class="actions start">
        <button type="submit" class="primary" disabled={save.busy}>
          Save email provider
        </button>
      </div>
    </form>
  );
}
