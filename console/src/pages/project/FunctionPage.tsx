// One function: its code in an editor, deploy, delete, and a test invocation.
import { useEffect, useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { FunctionDetail } from '../../api/types.ts';
import { CodeArea } from '../../components/CodeArea.tsx';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Link } from '../../components/Link.tsx';
import { notify } from '../../components/Notice.tsx';
import { Pending } from '../../components/States.tsx';
import { navigate } from '../../lib/router.ts';
import { useAction, useLoad, submitWith } from '../../lib/use-load.ts';
import { useTitle } from '../../lib/title.ts';
import { bytes, when } from '../../lib/format.ts';
import { useProject } from './context.ts';
import { InvokePanel } from './InvokePanel.tsx';

const TEMPLATE = `// request: { method, path, query, headers, body }
// context.auth: the calling end user ({ id, email, role }) or null
// context.db: select/insert/update/delete(table, query?, ...) as that caller, under the policies
export default async (request, context) => {
  return {
    hello: context.auth ? context.auth.email : 'anonymous',
    method: request.method,
    body: request.body,
  };
};
`;

export function FunctionPage({ name }: { name: string }) {
  const { project, base } = useProject();
  useTitle(`${name} · Functions · ${project.name}`);
  const path = `/projects/${seg(project.id)}/functions/${seg(name)}`;
  const fn = useLoad(async () => {
    try {
      return await api.get<FunctionDetail>(path);
    } catch (err) {
      if ((err as { status?: number }).status === 404) return null; // a new function
      throw err;
    }
  }, [path]);
  const [code, setCode] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => {
    if (fn.data !== undefined) setCode(fn.data?.code ?? TEMPLATE);
  }, [fn.data]);
  const deploy = useAction(async () => {
    const saved = await api.put<FunctionDetail>(path, { code });
    notify(`Function ${name} deployed.`);
    fn.set({ ...saved, code: code! });
  });
  if (fn.data === undefined || code === null) return <Pending error={fn.error} retry={fn.reload} />;
  const deployed = fn.data;
  const changed = deployed?.code !== code;
  return (
    <section class="page">
      <div class="page-head">
        <h1 tabIndex={-1}>
          <span class="muted">Function</span> <span class="mono">{name}</span>
        </h1>
        <Link href={`${base}/functions`}>All functions</Link>
      </div>
      <p class="small muted">
        {deployed ? `Deployed ${when(deployed.updated_at)}, ${bytes(deployed.size)}.` : 'Not deployed yet.'} {changed && deployed ? 'The editor has changes that are not deployed.' : ''}
      </p>
      <form
        class="card"
        onSubmit={submitWith(deploy.run)}
      >
        <label for="fn-code">Code</label>
        <CodeArea id="fn-code" rows={16} value={code} onValue={setCode} aria-describedby="fn-code-hint" aria-invalid={deploy.error ? true : undefined} />
        <p id="fn-code-hint" class="field-hint">
          Tab indents; press Escape, then Tab, to leave the editor.
        </p>
        <ErrorBox error={deploy.error} title="Not deployed:" />
        <div class="actions start">
          <button type="submit" class="primary" disabled={deploy.busy || !changed}>
            {deploy.busy ? 'Deploying…' : deployed ? 'Deploy changes' : 'Deploy'}
          </button>
          {deployed && (
            <button type="button" class="danger" onClick={() => setDeleting(true)}>
              Delete function…
            </button>
          )}
        </div>
      </form>
      {deployed && <InvokePanel name={name} />}
      {deleting && (
        <ConfirmDialog
          title={`Delete function ${name}?`}
          confirmLabel="Delete function"
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api.del(path);
            notify(`Function ${name} deleted.`);
            navigate(`${base}/functions`);
          }}
        >
          <p>Calls to it answer 404 from now on.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
