// Insert or edit one row: an input per column type, and for each column whether it gets a value,
// NULL or (on insert) its default. The server's error is shown on the column it names.
import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client.ts';
import type { Column, Row, Table } from '../../api/types.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { FormActions } from '../../components/FormActions.tsx';
import { Field } from '../../components/Field.tsx';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fromInput, toInput, describeDefault } from '../../lib/values.ts';

type Mode = 'value' | 'null' | 'default';
interface Entry {
  mode: Mode;
  text: string;
}

function initial(c: Column, row: Row | null): Entry {
  if (row) return row[c.name] === null ? { mode: 'null', text: '' } : { mode: 'value', text: toInput(c.type, row[c.name]) };
  // omitted on insert: the default, or NULL; typing a value switches to it
  return { mode: c.default !== null || c.nullable ? 'default' : 'value', text: c.type === 'boolean' ? 'false' : '' };
}

function ValueInput({ c, id, entry, onText, error }: { c: Column; id: string; entry: Entry; onText: (t: string) => void; error: boolean }) {
  const placeholder = entry.mode === 'null' ? 'NULL' : entry.mode === 'default' ? 'default' : undefined;
  const common = { id, 'aria-describedby': error ? `${id}-error` : undefined, 'aria-invalid': error || undefined, value: entry.mode === 'value' ? entry.text : '', placeholder, class: entry.mode === 'value' ? '' : 'unset' };
  switch (c.type) {
    case 'boolean':
      return (
        <select {...common} value={entry.mode === 'value' ? entry.text : ''} onChange={(e) => onText(e.currentTarget.value)}>
          {entry.mode !== 'value' && <option value="">{placeholder}</option>}
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      );
    case 'json':
      return <textarea {...common} class={`code ${common.class}`} rows={3} spellcheck={false} onInput={(e) => onText(e.currentTarget.value)} />;
    case 'integer':
    case 'number':
      return <input {...common} class={`mono ${common.class}`} inputMode={c.type === 'integer' ? 'numeric' : 'decimal'} onInput={(e) => onText(e.currentTarget.value)} />;
    case 'date':
      return <input {...common} type="date" onInput={(e) => onText(e.currentTarget.value)} />;
    case 'timestamp':
      return <input {...common} type="datetime-local" step={0.001} onInput={(e) => onText(e.currentTarget.value)} />;
    default:
      return <textarea {...common} rows={entry.text.length > 60 ? 3 : 1} class={`text-value ${common.class}`} onInput={(e) => onText(e.currentTarget.value)} />;
  }
}

interface Props {
  table: Table;
  row: Row | null;
  callerLabel: string;
  onSubmit: (values: Record<string, unknown>) => Promise<void>;
  onClose: () => void;
}

export function RowForm({ table, row, callerLabel, onSubmit, onClose }: Props) {
  const columns = table.columns.filter((c) => !c.primary_key);
  const [entries, setEntries] = useState<Record<string, Entry>>(() => Object.fromEntries(columns.map((c) => [c.name, initial(c, row)])));
  const [local, setLocal] = useState<Record<string, string>>({});
  const action = useAction(async () => {
    const values: Record<string, unknown> = {};
    const problems: Record<string, string> = {};
    for (const c of columns) {
      const e = entries[c.name]!;
      if (e.mode === 'default') continue;
      if (e.mode === 'null') values[c.name] = null;
      else {
        const v = fromInput(c.type, e.text);
        if (v.ok) values[c.name] = v.value;
        else problems[c.name] = v.message;
      }
    }
    setLocal(problems);
    if (Object.keys(problems).length > 0) return;
    // an edit sends only what changed, so a concurrent change to another column is not undone
    if (row) for (const k of Object.keys(values)) if (JSON.stringify(values[k]) === JSON.stringify(row[k])) delete values[k];
    if (row && Object.keys(values).length === 0) return onClose();
    await onSubmit(values);
  });
  const server: ApiError | null = action.error;
  const serverField = server?.field && columns.some((c) => c.name === server.field) ? server.field : null;
  const set = (name: string, patch: Partial<Entry>) => setEntries({ ...entries, [name]: { ...entries[name]!, ...patch } });
  return (
    <Dialog title={row ? `Edit row ${row.id}` : 'Insert a row'} onClose={onClose} wide>
      <p class="small muted">As {callerLabel}. Timestamps are in UTC.</p>
      <form
        class="row-form"
        onSubmit={submitWith(action.run)}
      >
        {columns.map((c) => {
          const id = `row-${c.name}`;
          const e = entries[c.name]!;
          const error = local[c.name] ?? (serverField === c.name ? server!.message : null);
          const modes: Mode[] = ['value', ...(c.nullable ? (['null'] as Mode[]) : []), ...(!row && (c.default !== null || c.nullable) ? (['default'] as Mode[]) : [])];
          return (
            <Field
              key={c.name}
              id={id}
              class="row-field"
              error={error}
              label={
                <>
                  <span class="mono">{c.name}</span> <span class="muted small">{c.type}{!c.nullable ? ', required' : ''}</span>
                </>
              }
            >
              <div class="inline">
                {modes.length > 1 && (
                  <select aria-label={`${c.name}: value, NULL or default`} value={e.mode} onChange={(ev) => set(c.name, { mode: ev.currentTarget.value as Mode })}>
                    {modes.map((m) => (
                      <option key={m} value={m}>
                        {m === 'value' ? 'value' : m === 'null' ? 'NULL' : c.default !== null ? `default: ${describeDefault(c.default)}` : 'default (NULL)'}
                      </option>
                    ))}
                  </select>
                )}
                <ValueInput c={c} id={id} entry={e} onText={(t) => set(c.name, { text: t, mode: 'value' })} error={!!error} />
              </div>
            </Field>
          );
        })}
        <ErrorBox error={serverField ? null : server} />
        <FormActions onCancel={onClose} busy={action.busy} label={row ? 'Save row' : 'Insert row'} />
      </form>
    </Dialog>
  );
}
