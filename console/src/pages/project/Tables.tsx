// The project's tables, and creating one.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { Table } from '../../api/types.ts';
import { Field, inputProps } from '../../components/Field.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Link } from '../../components/Link.tsx';
import { Empty } from '../../components/States.tsx';
import { notify } from '../../components/Notice.tsx';
import { navigate } from '../../lib/router.ts';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fieldError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { plural, when } from '../../lib/format.ts';
import { checkDrafts, ColumnEditor, draftIndexOf, newDraft, type ColumnDraft } from '../table/ColumnEditor.tsx';
import { useProject } from './context.ts';
import { ListTable } from '../../components/ListTable.tsx';

export function Tables() {
  const { project, base } = useProject();
  useTitle(`Tables · ${project.name}`);
  return (
    <section class="page">
      <div class="page-head">
        <h1 tabIndex={-1}>Tables</h1>
        <Link href={`${base}/tables/new`} class="button primary">
          New table
        </Link>
      </div>
      {project.tables.length === 0 ? (
        <Empty title="No tables yet">
          <p>A table has typed columns and an integer id. Its policies decide what each end user may read and write.</p>
          <Link href={`${base}/tables/new`} class="button primary">
            Create a table
          </Link>
        </Empty>
      ) : (
        <ListTable caption="Tables" columns={['Name', 'Columns', 'Created']}>
          {project.tables.map((t) => (
            <tr key={t.id}>
              <td>
                <Link href={`${base}/tables/${t.id}`} class="mono">
                  {t.name}
                </Link>
              </td>
              <td class="small">
                {plural(t.columns.length, 'column')}: <span class="mono">{t.columns.map((c) => c.name).join(', ')}</span>
              </td>
              <td class="small">{when(t.created_at)}</td>
            </tr>
          ))}
        </ListTable>
      )}
    </section>
  );
}

const EXAMPLE = (): ColumnDraft[] => [
  newDraft({ name: 'title', type: 'text', nullable: false }),
  newDraft({ name: 'done', type: 'boolean', nullable: false, defaultMode: 'value', defaultText: 'false' }),
  newDraft({ name: 'owner_id', type: 'integer', defaultMode: '$auth.id', indexed: true }),
  newDraft({ name: 'created_at', type: 'timestamp', defaultMode: 'now()' }),
];

export function NewTable() {
  const { project, base, reload } = useProject();
  useTitle(`New table · ${project.name}`);
  const [name, setName] = useState('');
  const [drafts, setDrafts] = useState<ColumnDraft[]>([newDraft()]);
  const [local, setLocal] = useState<Record<number, string>>({});
  const action = useAction(async () => {
    const { defs, problems } = checkDrafts(drafts);
    setLocal(problems);
    if (Object.keys(problems).length) return;
    const table = await api.post<Table>(`/projects/${seg(project.id)}/tables`, { name: name.trim(), columns: defs });
    await reload();
    notify(`Table ${table.name} created.`);
    navigate(`${base}/tables/${table.id}`);
  });
  const serverRow = draftIndexOf(action.error, 'columns', drafts);
  const errors = { ...local, ...(serverRow >= 0 ? { [serverRow]: action.error!.message } : {}) };
  const nameErr = fieldError(action.error, 'name');
  return (
    <section class="page">
      <h1 tabIndex={-1}>New table</h1>
      <form
        class="card"
        onSubmit={submitWith(action.run)}
      >
        <div class="page-head">
          <Field id="table-name" label="Table name" error={nameErr} hint="Lower-case letters, digits and _, e.g. todos.">
            <input {...inputProps('table-name', nameErr, true)} class="mono" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setName(name || 'todos');
              setDrafts(EXAMPLE());
            }}
          >
            Fill in the todos example
          </button>
        </div>
        <h2>Columns</h2>
        <p class="muted small">
          Every table also has <code>id</code> (integer, primary key). Defaults may be a value or a marker: <code>now()</code> for timestamps and dates,{' '}
          <code>$auth.id</code> and <code>$auth.email</code> fill in the end user who inserts the row.
        </p>
        <ColumnEditor drafts={drafts} onChange={setDrafts} errors={errors} idPrefix="newcol" />
        <button type="button" class="secondary" onClick={() => setDrafts([...drafts, newDraft()])}>
          Add column
        </button>
        <ErrorBox error={serverRow < 0 && !nameErr ? action.error : null} />
        <div class="actions">
          <Link href={`${base}/tables`} class="button secondary">
            Cancel
          </Link>
          <button type="submit" class="primary" disabled={action.busy}>
            {action.busy ? 'Creating…' : 'Create table'}
          </button>
        </div>
      </form>
    </section>
  );
}
