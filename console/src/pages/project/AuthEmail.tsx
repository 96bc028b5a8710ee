// Auth settings (site URL, redirect URLs), the email configuration (secrets are write-only: the
// API says only whether one is set) and a test email.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { AuthSettings, EmailConfig } from '../../api/types.ts';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { Pending } from '../../components/States.tsx';
import { useAction, useLoad, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { useProject } from './context.ts';
import { EmailConfigForm } from './EmailConfigForm.tsx';

function SettingsForm({ initial }: { initial: AuthSettings }) {
  const { project } = useProject();
  const [site, setSite] = useState(initial.site_url ?? '');
  const [redirects, setRedirects] = useState(initial.redirect_urls.join('\n'));
  const save = useAction(async () => {
    const redirect_urls = redirects.split('\n').map((s) => s.trim()).filter(Boolean);
    await api.put(`/projects/${seg(project.id)}/auth/settings`, { site_url: site.trim() || null, redirect_urls });
    notify('Auth settings saved.');
  });
  const err = (f: string) => fieldError(save.error, f);
  return (
    <form
      class="card"
      aria-labelledby="auth-settings-title"
      onSubmit={submitWith(save.run)}
    >
      <h2 id="auth-settings-title">Auth settings</h2>
      <Field id="site-url" label="Site URL" error={err('site_url')} hint="Where email links point (magic link, reset, verification). Empty: this service's own URL.">
        <input {...inputProps('site-url', err('site_url'), true)} type="url" value={site} placeholder="https://app.example.com" onInput={(e) => setSite(e.currentTarget.value)} />
      </Field>
      <Field id="redirect-urls" label="Allowed redirect URLs" error={err('redirect_urls')} hint="One per line, at most 20. A redirect_url in an auth request must match one of them or the site URL.">
        <textarea {...inputProps('redirect-urls', err('redirect_urls'), true)} rows={4} class="mono" value={redirects} onInput={(e) => setRedirects(e.currentTarget.value)} />
      </Field>
      <ErrorBox error={formError(save.error, ['site_url', 'redirect_urls'])} />
      <button type="submit" class="primary" disabled={save.busy}>
        Save auth settings
      </button>
    </form>
  );
}

function TestEmail() {
  const { project } = useProject();
  const [to, setTo] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  const send = useAction(async () => {
    setSent(null);
    await api.post(`/projects/${seg(project.id)}/auth/email-config/test`, { to });
    setSent(to);
  });
  return (
    <form
      class="card inline-form"
      aria-labelledby="test-email-title"
      onSubmit={submitWith(send.run)}
    >
      <h2 id="test-email-title">Send a test email</h2>
      <Field id="test-to" label="To" error={fieldError(send.error, 'to')}>
        <input {...inputProps('test-to', fieldError(send.error, 'to'))} type="email" required value={to} onInput={(e) => setTo(e.currentTarget.value)} />
      </Field>
      <button type="submit" class="secondary" disabled={send.busy}>
        {send.busy ? 'Sending…' : 'Send test email'}
      </button>
      <div aria-live="polite" class="grow-line">
        {sent && <p class="ok">Sent to {sent}: the provider accepted it.</p>}
        <ErrorBox error={formError(send.error, ['to'])} title="Not sent:" />
      </div>
    </form>
  );
}

export function AuthEmail() {
  const { project } = useProject();
  useTitle(`Auth & email · ${project.name}`);
  const p = `/projects/${seg(project.id)}/auth`;
  const settings = useLoad(() => api.get<AuthSettings>(`${p}/settings`), [p]);
  const email = useLoad(() => api.get<EmailConfig>(`${p}/email-config`), [p]);
  return (
    <section class="page narrow">
      <h1 tabIndex={-1}>Auth & email</h1>
      {settings.data ? <SettingsForm initial={settings.data} /> : <Pending error={settings.error} retry={settings.reload} />}
      {email.data ? <EmailConfigForm initial={email.data} onSaved={email.set} /> : <Pending error={email.error} retry={email.reload} />}
      <TestEmail />
    </section>
  );
}
