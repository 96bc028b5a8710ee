// A project's functions: the list, and a name for a new one.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { FunctionInfo } from '../../api/types.ts';
import { Field, inputProps } from '../../components/Field.tsx';
import { Link } from '../../components/Link.tsx';
import { Empty, Pending } from '../../components/States.tsx';
import { navigate } from '../../lib/router.ts';
import { useLoad } from '../../lib/use-load.ts';
import { useTitle } from '../../lib/title.ts';
import { bytes, when } from '../../lib/format.ts';
import { useProject } from './context.ts';
import { ListTable } from '../../components/ListTable.tsx';

const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function Functions() {
  const { project, base } = useProject();
  useTitle(`Functions · ${project.name}`);
  const fns = useLoad(() => api.get<FunctionInfo[]>(`/projects/${seg(project.id)}/functions`), [project.id]);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  const list = fns.data;
  return (
    <section class="page">
      <h1 tabIndex={-1}>Functions</h1>
      <p class="muted">
        JavaScript modules run in a sandbox at <code>/{project.id}/functions/&#123;name&#125;</code>, with the calling end user in <code>context.auth</code> and the tables, under
        their policies, in <code>context.db</code>.
      </p>
      {!list ? (
        <Pending error={fns.error} retry={fns.reload} />
      ) : list.length === 0 ? (
        <Empty title="No functions yet" />
      ) : (
        <ListTable caption="Functions" columns={['Name', 'Size', 'Deployed']}>
          {list.map((f) => (
            <tr key={f.name}>
              <td>
                <Link href={`${base}/functions/${f.name}`} class="mono">
                  {f.name}
                </Link>
              </td>
              <td class="small">{bytes(f.size)}</td>
              <td class="small">{when(f.updated_at)}</td>
            </tr>
          ))}
        </ListTable>
      )}
      <form
        class="card inline-form"
        aria-labelledby="new-fn-title"
        onSubmit={(e) => {
          e.preventDefault();
          if (!NAME.test(name)) return setError('Lower-case letters, digits and _, not starting with a digit.');
          navigate(`${base}/functions/${name}`);
        }}
      >
        <h2 id="new-fn-title" class="visually-hidden">
          New function
        </h2>
        <Field id="fn-name" label="New function name" error={error}>
          <input {...inputProps('fn-name', error)} class="mono" required value={name} onInput={(e) => (setName(e.currentTarget.value), setError(null))} placeholder="hello" />
        </Field>
        <button type="submit" class="primary">
          Write function
        </button>
      </form>
    </section>
  );
}
