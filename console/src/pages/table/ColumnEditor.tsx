// Column definitions being written: name, type, nullable, default (a value or a marker), unique,
// indexed. Used to create a table and to add columns to one.
import type { ApiError } from '../../api/client.ts';
import { COLUMN_TYPES, type ColumnDef, type ColumnType } from '../../api/types.ts';
import { fromInput, markersFor } from '../../lib/values.ts';

export interface ColumnDraft {
  key: number;
  name: string;
  type: ColumnType;
  nullable: boolean;
  /** '' no default, 'value' a literal in defaultText, or a marker such as now() */
  defaultMode: string;
  defaultText: string;
  unique: boolean;
  indexed: boolean;
}

let nextKey = 1;
export function newDraft(over: Partial<ColumnDraft> = {}): ColumnDraft {
  return { key: nextKey++, name: '', type: 'text', nullable: true, defaultMode: '', defaultText: '', unique: false, indexed: false, ...over };
}

/** The definition to send, or the problem with the literal default (checked again by the server). */
export function toDef(d: ColumnDraft): { def: ColumnDef } | { error: string } {
  const def: ColumnDef = { name: d.name.trim(), type: d.type, nullable: d.nullable, unique: d.unique, indexed: d.indexed };
  if (d.defaultMode === 'value') {
    const v = fromInput(d.type, d.defaultText);
    if (!v.ok) return { error: `Default: ${v.message}` };
    def.default = v.value;
  } else if (d.defaultMode) def.default = d.defaultMode;
  return { def };
}

/** Every draft's definition, or the drafts' local problems by row (checked again by the server). */
export function checkDrafts(drafts: ColumnDraft[]): { defs: ColumnDef[]; problems: Record<number, string> } {
  const defs: ColumnDef[] = [];
  const problems: Record<number, string> = {};
  drafts.forEach((d, i) => {
    const r = toDef(d);
    if ('error' in r) problems[i] = r.error;
    else defs.push(r.def);
  });
  return { defs, problems };
}

/** The row a server error is about: `columns[2].default`, `add_columns.pinned`, or details.column. */
export function draftIndexOf(error: ApiError | null, prefix: string, drafts: ColumnDraft[]): number {
  if (!error) return -1;
  const field = error.field ?? '';
  const m = new RegExp(`^${prefix}\\[(\\d+)\\]`).exec(field);
  if (m) return Number(m[1]);
  const col = field.startsWith(`${prefix}.`) ? field.slice(prefix.length + 1) : (error.details as { column?: string } | null)?.column;
  return col ? drafts.findIndex((d) => d.name.trim() === col) : -1;
}

interface Props {
  drafts: ColumnDraft[];
  onChange: (drafts: ColumnDraft[]) => void;
  /** per-row messages: a local check or the server's error */
  errors: Record<number, string>;
  idPrefix: string;
}

function defaultInput(d: ColumnDraft, id: string, set: (p: Partial<ColumnDraft>) => void) {
  if (d.defaultMode !== 'value') return null;
  const common = { id: `${id}-default-value`, 'aria-label': `Default value of ${d.name || 'the column'}`, value: d.defaultText };
  if (d.type === 'boolean')
    return (
      <select {...common} onChange={(e) => set({ defaultText: e.currentTarget.value })}>
        <option value="">choose…</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  const type = d.type === 'date' ? 'date' : d.type === 'timestamp' ? 'datetime-local' : 'text';
  return <input {...common} type={type} step={d.type === 'timestamp' ? 1 : undefined} class="mono" onInput={(e) => set({ defaultText: e.currentTarget.value })} />;
}

export function ColumnEditor({ drafts, onChange, errors, idPrefix }: Props) {
  const update = (i: number, patch: Partial<ColumnDraft>) => onChange(drafts.map((d, j) => (j === i ? { ...d, ...patch } : d)));
  return (
    <div class="column-editor">
      {drafts.map((d, i) => {
        const id = `${idPrefix}-${d.key}`;
        const set = (p: Partial<ColumnDraft>) => update(i, p);
        const markers = markersFor(d.type);
        return (
          <fieldset key={d.key} class={`column-draft ${errors[i] ? 'has-error' : ''}`} aria-describedby={errors[i] ? `${id}-error` : undefined}>
            <legend class="visually-hidden">Column {i + 1}</legend>
            <div class="field">
              <label for={`${id}-name`}>Column name</label>
              <input id={`${id}-name`} class="mono" required pattern="[a-z_][a-z0-9_]{0,62}" title="Lower-case letters, digits and _; not starting with a digit" value={d.name} onInput={(e) => set({ name: e.currentTarget.value })} />
            </div>
            <div class="field">
              <label for={`${id}-type`}>Type</label>
              <select id={`${id}-type`} value={d.type} onChange={(e) => set({ type: e.currentTarget.value as ColumnType, defaultMode: '', defaultText: '' })}>
                {COLUMN_TYPES.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for={`${id}-default`}>Default</label>
              <div class="inline">
                <select id={`${id}-default`} value={d.defaultMode} onChange={(e) => set({ defaultMode: e.currentTarget.value })}>
                  <option value="">none</option>
                  <option value="value">a value…</option>
                  {markers.map((m) => (
                    <option key={m} value={m}>
                      {m}
                    </option>
                  ))}
                </select>
                {defaultInput(d, id, set)}
              </div>
            </div>
            <div class="checks">
              <label>
                <input type="checkbox" checked={d.nullable} onChange={(e) => set({ nullable: e.currentTarget.checked })} /> nullable
              </label>
              <label>
                <input type="checkbox" checked={d.unique} onChange={(e) => set({ unique: e.currentTarget.checked })} /> unique
              </label>
              <label>
                <input type="checkbox" checked={d.indexed} onChange={(e) => set({ indexed: e.currentTarget.checked })} /> indexed
              </label>
            </div>
            <button type="button" class="ghost icon" aria-label={`Remove column ${d.name || i + 1}`} onClick={() => onChange(drafts.filter((_, j) => j !== i))}>
              ✕
            </button>
            {errors[i] && (
              <p class="field-error" id={`${id}-error`}>
                {errors[i]}
              </p>
            )}
          </fieldset>
        );
      })}
    </div>
  );
}
