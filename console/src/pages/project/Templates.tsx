// The four auth email templates: edit subject and HTML body with a live preview (rendered by the
// server with sample values), save, or reset to the built-in default.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, seg } from '../../api/client.ts';
import { TEMPLATE_KEYS, type EmailTemplate, type TemplateKey } from '../../api/types.ts';
import { CodeArea } from '../../components/CodeArea.tsx';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { Pending } from '../../components/States.tsx';
import { useAction, useLoad, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { useProject } from './context.ts';

const LABELS: Record<TemplateKey, string> = {
  magic_link: 'Magic link',
  password_reset: 'Password reset',
  email_verification: 'Email verification',
  email_change: 'Email change',
};

function usePreview(path: string, key: TemplateKey, subject: string, body: string) {
  const [preview, setPreview] = useState<{ subject: string; body: string } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      api
        .post<{ subject: string; body: string }>(`${path}/preview`, { key, subject, body }, { signal: ctl.signal })
        .then((p) => (setPreview(p), setError(null)))
        .catch((e) => e instanceof ApiError && setError(e));
    }, 300);
    return () => (clearTimeout(timer), ctl.abort());
  }, [path, key, subject, body]);
  return { preview, error };
}

function Editor({ template, path, onChanged }: { template: EmailTemplate; path: string; onChanged: () => void }) {
  const [subject, setSubject] = useState(template.subject);
  const [body, setBody] = useState(template.body);
  const [resetting, setResetting] = useState(false);
  const { preview, error } = usePreview(path, template.key, subject, body);
  const save = useAction(async () => {
    await api.put(`${path}/${template.key}`, { subject, body });
    notify(`${LABELS[template.key]} template saved.`);
    onChanged();
  });
  const err = (f: string) => fieldError(save.error, f);
  return (
    <div class="template-editor">
      <form
        class="card"
        onSubmit={submitWith(save.run)}
      >
        <p class="small muted">{template.is_custom ? 'A custom template.' : 'The built-in default.'} Placeholders: {'{{link}}'}, {template.key === 'email_change' ? '{{new_email}}' : '{{email}}'}, {'{{project_name}}'}.</p>
        <Field id="tpl-subject" label="Subject" error={err('subject')}>
          <input {...inputProps('tpl-subject', err('subject'))} required maxLength={200} value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
        </Field>
        <Field id="tpl-body" label="HTML body" error={err('body')}>
          <CodeArea {...inputProps('tpl-body', err('body'))} rows={14} value={body} onValue={setBody} />
        </Field>
        <ErrorBox error={formError(save.error, ['subject', 'body'])} />
        <div class="actions start">
          <button type="submit" class="primary" disabled={save.busy}>
            Save template
          </button>
          {template.is_custom && (
            <button type="button" class="secondary" onClick={() => setResetting(true)}>
              Reset to default…
            </button>
          )}
        </div>
      </form>
      <section class="card preview" aria-labelledby="preview-title">
        <h2 id="preview-title">Preview</h2>
        <ErrorBox error={error} />
        {preview && (
          <>
            <p>
              <strong>Subject:</strong> <span data-testid="preview-subject">{preview.subject}</span>
            </p>
            {/* no scripts, no same-origin access: the HTML is shown, nothing in it runs */}
            <iframe title="Email preview" sandbox="" srcdoc={preview.body} class="preview-frame" />
          </>
        )}
      </section>
      {resetting && (
        <ConfirmDialog
          title="Reset to the default template?"
          confirmLabel="Reset"
          onClose={() => setResetting(false)}
          onConfirm={async () => {
            await api.del(`${path}/${template.key}`);
            notify('Template reset to the default.');
            onChanged();
          }}
        >
          <p>Your custom subject and body are deleted.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

export function Templates() {
  const { project } = useProject();
  useTitle(`Email templates · ${project.name}`);
  const path = `/projects/${seg(project.id)}/auth/templates`;
  const list = useLoad(() => api.get<EmailTemplate[]>(path), [path]);
  const [key, setKey] = useState<TemplateKey>('magic_link');
  const template = list.data?.find((t) => t.key === key);
  return (
    <section class="page">
      <h1 tabIndex={-1}>Email templates</h1>
      <div class="tabs" role="tablist" aria-label="Templates">
        {TEMPLATE_KEYS.map((k) => (
          <button key={k} type="button" role="tab" aria-selected={k === key} class={k === key ? 'active' : ''} onClick={() => setKey(k)}>
            {LABELS[k]}
            {list.data?.find((t) => t.key === k)?.is_custom ? ' (custom)' : ''}
          </button>
        ))}
      </div>
      {template ? <Editor key={`${key}-${template.is_custom}-${template.subject}-${template.body.length}`} template={template} path={path} onChanged={() => void list.reload()} /> : <Pending error={list.error} retry={list.reload} />}
    </section>
  );
}
