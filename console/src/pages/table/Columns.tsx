// A table's columns: rename, drop, add; rename or delete the table.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { Column, Table } from '../../api/types.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { navigate } from '../../lib/router.ts';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fieldError } from '../../lib/form-errors.ts';
import { describeDefault } from '../../lib/values.ts';
import { useProject } from '../project/context.ts';
import { checkDrafts, ColumnEditor, draftIndexOf, newDraft, type ColumnDraft } from './ColumnEditor.tsx';
import { ListTable } from '../../components/ListTable.tsx';

function useAlter(table: Table) {
  const { project, reload } = useProject();
  return async (body: Record<string, unknown>, done: string) => {
    await api.patch<Table>(`/projects/${seg(project.id)}/tables/${seg(table.id)}`, body);
    await reload();
    notify(done);
  };
}

function ColumnRow({ table, column }: { table: Table; column: Column }) {
  const alter = useAlter(table);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [dropping, setDropping] = useState(false);
  const rename = useAction(async () => {
    await alter({ rename_columns: { [column.name]: renaming!.trim() } }, `Column renamed to ${renaming}.`);
    setRenaming(null);
  });
  const id = `rename-${column.name}`;
  return (
    <tr>
      <td class="mono">
        {renaming === null ? (
          column.name
        ) : (
          <form
            class="inline"
            onSubmit={submitWith(rename.run)}
          >
            <input {...inputProps(id, rename.error?.message)} aria-label={`New name for ${column.name}`} class="mono" value={renaming} onInput={(e) => setRenaming(e.currentTarget.value)} />
            <button type="submit" class="primary small-button" disabled={rename.busy}>
              Save
            </button>
            <button type="button" class="secondary small-button" onClick={() => (setRenaming(null), rename.setError(null))}>
              Cancel
            </button>
            {rename.error && (
              <span class="field-error" id={`${id}-error`}>
                {rename.error.message}
              </span>
            )}
          </form>
        )}
      </td>
      <td>{column.type}</td>
      <td class="small">{[column.primary_key && 'primary key', !column.nullable && 'not null', column.unique && 'unique', column.indexed && 'indexed'].filter(Boolean).join(', ')}</td>
      <td class="mono small">{describeDefault(column.default)}</td>
      <td class="row-actions">
        {!column.primary_key && renaming === null && (
          <>
            <button type="button" class="ghost small-button" onClick={() => setRenaming(column.name)}>
              Rename<span class="visually-hidden"> {column.name}</span>
            </button>
            <button type="button" class="ghost danger-text small-button" onClick={() => setDropping(true)}>
              Drop<span class="visually-hidden"> {column.name}</span>
            </button>
          </>
        )}
        {dropping && (
          <ConfirmDialog title={`Drop column ${column.name}?`} confirmLabel="Drop column" onClose={() => setDropping(false)} onConfirm={() => alter({ drop_columns: [column.name] }, `Column ${column.name} dropped.`)}>
            <p>Its values in every row are deleted. Policies that name it stop matching any row until they are changed.</p>
          </ConfirmDialog>
        )}
      </td>
    </tr>
  );
}

function AddColumns({ table }: { table: Table }) {
  const alter = useAlter(table);
  const [drafts, setDrafts] = useState<ColumnDraft[]>([]);
  const [local, setLocal] = useState<Record<number, string>>({});
  const action = useAction(async () => {
    const { defs, problems } = checkDrafts(drafts);
    setLocal(problems);
    if (Object.keys(problems).length) return;
    await alter({ add_columns: defs }, drafts.length === 1 ? 'Column added.' : 'Columns added.');
    setDrafts([]);
  });
  const serverRow = draftIndexOf(action.error, 'add_columns', drafts);
  return (
    <form
      class="card"
      aria-labelledby="add-columns-title"
      onSubmit={submitWith(action.run)}
    >
      <h2 id="add-columns-title">Add columns</h2>
      <ColumnEditor drafts={drafts} onChange={setDrafts} errors={{ ...local, ...(serverRow >= 0 ? { [serverRow]: action.error!.message } : {}) }} idPrefix="addcol" />
      <ErrorBox error={serverRow < 0 ? action.error : null} />
      <div class="actions start">
        <button type="button" class="secondary" onClick={() => setDrafts([...drafts, newDraft()])}>
          {drafts.length ? 'Another column' : 'Add a column'}
        </button>
        {drafts.length > 0 && (
          <button type="submit" class="primary" disabled={action.busy}>
            Save new columns
          </button>
        )}
      </div>
    </form>
  );
}

function TableSettings({ table }: { table: Table }) {
  const { project, base, reload } = useProject();
  const alter = useAlter(table);
  const [name, setName] = useState(table.name);
  const [deleting, setDeleting] = useState(false);
  const rename = useAction(() => alter({ name: name.trim() }, 'Table renamed.'));
  const err = fieldError(rename.error, 'name');
  return (
    <div class="card">
      <h2>Table</h2>
      <form
        class="inline-form"
        onSubmit={submitWith(rename.run)}
      >
        <Field id="table-rename" label="Table name" error={err}>
          <input {...inputProps('table-rename', err)} class="mono" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="secondary" disabled={rename.busy || name === table.name}>
          Rename table
        </button>
      </form>
      <ErrorBox error={err ? null : rename.error} />
      <p>
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete table…
        </button>
      </p>
      {deleting && (
        <ConfirmDialog
          title={`Delete table ${table.name}?`}
          confirmLabel="Delete table"
          typed={table.name}
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api.del(`/projects/${seg(project.id)}/tables/${seg(table.id)}`);
            await reload();
            notify(`Table ${table.name} deleted.`);
            navigate(`${base}/tables`);
          }}
        >
          <p>Its rows and policies are deleted with it.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

export function Columns({ table }: { table: Table }) {
  return (
    <>
      <ListTable caption={`Columns of ${table.name}`} columns={['Column', 'Type', 'Constraints', 'Default']} actions>
        {table.columns.map((c) => (
          <ColumnRow key={c.name} table={table} column={c} />
        ))}
      </ListTable>
      <AddColumns table={table} />
      <TableSettings key={table.name} table={table} />
    </>
  );
}
