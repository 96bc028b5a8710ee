// The policy simulator: pick a caller and an operation, see which rows pass, and for one row which
// policies matched at each stage and why it is hidden or refused. Nothing is written.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import type { Caller, SimOperation, Simulation, Table } from '../../api/types.ts';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { setQuery, useLocation } from '../../lib/router.ts';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useProject } from '../project/context.ts';
import { CallerPicker } from './CallerPicker.tsx';
import { SimResults } from './SimResults.tsx';

const OPS: SimOperation[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];
type Which = 'all' | 'visible' | 'hidden' | 'ids';

function valuesTemplate(table: Table): string {
  const o: Record<string, unknown> = {};
  for (const c of table.columns) if (!c.primary_key && c.default === null) o[c.name] = c.type === 'boolean' ? false : c.type === 'integer' || c.type === 'number' ? 0 : c.type === 'json' ? {} : '';
  return JSON.stringify(o, null, 2);
}

function parseIds(text: string): number[] | null {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p))) return null;
  return parts.map(Number);
}

export function Simulator({ table }: { table: Table }) {
  const { project } = useProject();
  const loc = useLocation();
  const fromUrl = loc.query.get('as');
  const caller: Caller = fromUrl && fromUrl !== 'owner' ? (fromUrl as Caller) : 'anonymous';
  const [operation, setOperation] = useState<SimOperation>('SELECT');
  const [which, setWhich] = useState<Which>('all');
  const [ids, setIds] = useState('');
  const [limit, setLimit] = useState('20');
  const [values, setValues] = useState(() => valuesTemplate(table));
  const [patch, setPatch] = useState('');
  const [localError, setLocalError] = useState<string | null>(null);
  const [result, setResult] = useState<Simulation | null>(null);

  const run = useAction(async () => {
    setLocalError(null);
    const body: Record<string, unknown> = { as: caller, operation };
    if (operation !== 'INSERT') {
      if (which === 'ids') {
        const list = parseIds(ids);
        if (!list) return setLocalError('Row ids: whole numbers separated by commas.');
        body.row_ids = list;
      } else {
        body.filter = which;
        body.limit = Number(limit);
      }
    }
    const json = operation === 'INSERT' ? values : operation === 'UPDATE' ? patch : '';
    if (json.trim()) {
      try {
        body.values = JSON.parse(json);
      } catch (e) {
        return setLocalError(`Values: not valid JSON (${(e as Error).message}).`);
      }
    }
    setResult(await api.post<Simulation>(`/projects/${seg(project.id)}/tables/${seg(table.id)}/simulate`, body));
  });

  return (
    <div class="simulator">
      <form
        class="card sim-form"
        aria-label="Simulation"
        onSubmit={submitWith(run.run)}
      >
        <CallerPicker projectId={project.id} value={caller} onChange={(c) => setQuery({ as: c })} allowOwner={false} label="Caller" />
        <Field id="sim-operation" label="Operation">
          <select {...inputProps('sim-operation')} value={operation} onChange={(e) => setOperation(e.currentTarget.value as SimOperation)}>
            {OPS.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </Field>
        {operation !== 'INSERT' && (
          <fieldset class="sim-rows">
            <legend>Rows</legend>
            <div class="radios">
              {(['all', 'visible', 'hidden', 'ids'] as Which[]).map((w) => (
                <label key={w}>
                  <input type="radio" name="sim-which" value={w} checked={which === w} onChange={() => setWhich(w)} />{' '}
                  {w === 'all' ? 'First rows' : w === 'visible' ? 'Allowed rows' : w === 'hidden' ? 'Hidden or refused rows' : 'These row ids'}
                </label>
              ))}
            </div>
            {which === 'ids' ? (
              <Field key="ids" id="sim-ids" label="Row ids" error={fieldError(run.error, 'row_ids')}>
                <input {...inputProps('sim-ids', fieldError(run.error, 'row_ids'))} class="mono" value={ids} onInput={(e) => setIds(e.currentTarget.value)} placeholder="1, 2, 7" />
              </Field>
            ) : (
              <Field key="limit" id="sim-limit" label="How many (by id)" error={fieldError(run.error, 'limit')}>
                <input {...inputProps('sim-limit', fieldError(run.error, 'limit'))} type="number" min={1} max={100} value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
              </Field>
            )}
          </fieldset>
        )}
        {operation === 'INSERT' && (
          <Field id="sim-values" label="The row to insert (JSON)" error={fieldError(run.error, 'values')}>
            <textarea {...inputProps('sim-values', fieldError(run.error, 'values'))} class="code" rows={5} spellcheck={false} value={values} onInput={(e) => setValues(e.currentTarget.value)} />
          </Field>
        )}
        {operation === 'UPDATE' && (
          <Field id="sim-patch" label="The change (JSON, optional)" hint="Checked against the UPDATE policies as the row would be after the change." error={fieldError(run.error, 'values')}>
            <textarea {...inputProps('sim-patch', fieldError(run.error, 'values'), true)} class="code" rows={3} spellcheck={false} value={patch} placeholder='{"done": true}' onInput={(e) => setPatch(e.currentTarget.value)} />
          </Field>
        )}
        {localError && (
          <p class="field-error" role="alert">
            {localError}
          </p>
        )}
        <ErrorBox error={formError(run.error, ['row_ids', 'limit', 'values'])} />
        <button type="submit" class="primary" disabled={run.busy}>
          {run.busy ? 'Simulating…' : 'Simulate'}
        </button>
      </form>
      {result && <SimResults sim={result} table={table} />}
    </div>
  );
}
