// The policy simulator: pick a caller and an operation, see which rows pass, and for one row which
// policies matched at each stage and why it is hidden or refused. Nothing is written.
import { useState } from 'preact/hooks';
import { api, type ApiError, seg } from '../../api/client.ts';
import type { Caller, SimOperation, Simulation, Table } from '../../api/types.ts';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { setQuery, useLocation } from '../../lib/router.ts';
import { submitWith, useAction } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useProject } from '../project/context.ts';
import { CallerPicker } from './CallerPicker.tsx';
import { SimResults } from './SimResults.tsx';

const OPS: SimOperation[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];
const WHICH = [
  ['all', 'First rows'],
  ['visible', 'Allowed rows'],
  ['hidden', 'Hidden or refused rows'],
  ['ids', 'These row ids'],
] as const;
type Which = (typeof WHICH)[number][0];

interface SimForm {
  operation: SimOperation;
  which: Which;
  ids: string;
  limit: string;
  /** INSERT: the candidate row; UPDATE: the change (JSON text) */
  values: string;
  patch: string;
}

function valuesTemplate(table: Table): string {
  const o: Record<string, unknown> = {};
  for (const c of table.columns) if (!c.primary_key && c.default === null) o[c.name] = c.type === 'boolean' ? false : c.type === 'integer' || c.type === 'number' ? 0 : c.type === 'json' ? {} : '';
  return JSON.stringify(o, null, 2);
}

/** The request body, or what is wrong with the form before the server is asked. */
function simulationBody(caller: Caller, f: SimForm): { body: Record<string, unknown> } | { error: string } {
  const body: Record<string, unknown> = { as: caller, operation: f.operation };
  if (f.operation !== 'INSERT' && f.which === 'ids') {
    const parts = f.ids.split(/[\s,]+/).filter(Boolean);
    if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p))) return { error: 'Row ids: whole numbers separated by commas.' };
    body.row_ids = parts.map(Number);
  } else if (f.operation !== 'INSERT') {
    body.filter = f.which;
    body.limit = Number(f.limit);
  }
  const json = f.operation === 'INSERT' ? f.values : f.operation === 'UPDATE' ? f.patch : '';
  if (json.trim()) {
    try {
      body.values = JSON.parse(json);
    } catch (e) {
      return { error: `Values: not valid JSON (${(e as Error).message}).` };
    }
  }
  return { body };
}

function RowsChoice({ f, set, error }: { f: SimForm; set: (p: Partial<SimForm>) => void; error: ApiError | null }) {
  return (
    <fieldset class="sim-rows">
      <legend>Rows</legend>
      <div class="radios">
        {WHICH.map(([w, label]) => (
          <label key={w}>
            <input type="radio" name="sim-which" value={w} checked={f.which === w} onChange={() => set({ which: w })} /> {label}
          </label>
        ))}
      </div>
      {f.which === 'ids' ? (
        <Field key="ids" id="sim-ids" label="Row ids" error={fieldError(error, 'row_ids')}>
          <input {...inputProps('sim-ids', fieldError(error, 'row_ids'))} class="mono" value={f.ids} onInput={(e) => set({ ids: e.currentTarget.value })} placeholder="1, 2, 7" />
        </Field>
      ) : (
        <Field key="limit" id="sim-limit" label="How many (by id)" error={fieldError(error, 'limit')}>
          <input {...inputProps('sim-limit', fieldError(error, 'limit'))} type="number" min={1} max={100} value={f.limit} onInput={(e) => set({ limit: e.currentTarget.value })} />
        </Field>
      )}
    </fieldset>
  );
}

export function Simulator({ table }: { table: Table }) {
  const { project } = useProject();
  const fromUrl = useLocation().query.get('as');
  const caller: Caller = fromUrl && fromUrl !== 'owner' ? (fromUrl as Caller) : 'anonymous';
  const [f, setF] = useState<SimForm>(() => ({ operation: 'SELECT', which: 'all', ids: '', limit: '20', values: valuesTemplate(table), patch: '' }));
  const set = (p: Partial<SimForm>) => setF({ ...f, ...p });
  const [localError, setLocalError] = useState<string | null>(null);
  const [result, setResult] = useState<Simulation | null>(null);
  const run = useAction(async () => {
    const built = simulationBody(caller, f);
    setLocalError('error' in built ? built.error : null);
    if ('body' in built) setResult(await api.post<Simulation>(`/projects/${seg(project.id)}/tables/${seg(table.id)}/simulate`, built.body));
  });
  const valuesError = fieldError(run.error, 'values');
  return (
    <div class="simulator">
      <form class="card sim-form" aria-label="Simulation" onSubmit={submitWith(run.run)}>
        <CallerPicker projectId={project.id} value={caller} onChange={(c) => setQuery({ as: c })} allowOwner={false} label="Caller" />
        <Field id="sim-operation" label="Operation">
          <select {...inputProps('sim-operation')} value={f.operation} onChange={(e) => set({ operation: e.currentTarget.value as SimOperation })}>
            {OPS.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </Field>
        {f.operation !== 'INSERT' && <RowsChoice f={f} set={set} error={run.error} />}
        {f.operation === 'INSERT' && (
          <Field id="sim-values" label="The row to insert (JSON)" error={valuesError}>
            <textarea {...inputProps('sim-values', valuesError)} class="code" rows={5} spellcheck={false} value={f.values} onInput={(e) => set({ values: e.currentTarget.value })} />
          </Field>
        )}
        {f.operation === 'UPDATE' && (
          <Field id="sim-patch" label="The change (JSON, optional)" hint="Checked against the UPDATE policies as the row would be after the change." error={valuesError}>
            <textarea {...inputProps('sim-patch', valuesError, true)} class="code" rows={3} spellcheck={false} value={f.patch} placeholder='{"done": true}' onInput={(e) => set({ patch: e.currentTarget.value })} />
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
