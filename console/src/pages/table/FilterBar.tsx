// The data browser's filters: rows of column, operator, not, value; applied together (AND).
import { useState } from 'preact/hooks';
import type { Table } from '../../api/types.ts';
import { submitWith } from '../../lib/use-load.ts';
import { IS_VALUES, OPERATORS, operatorsFor, type Filter, type Operator } from './filters.ts';

let nextKey = 1;

function FilterRow({ table, f, i, set, remove }: { table: Table; f: Filter; i: number; set: (p: Partial<Filter>) => void; remove: () => void }) {
  const col = table.columns.find((c) => c.name === f.column);
  const ops = operatorsFor(col);
  const id = `filter-${f.key}`;
  return (
      <div class="filter" key={f.key} role="group" aria-label={`Filter ${i + 1}`}>
        <select aria-label="Column" value={f.column} onChange={(e) => set({ column: e.currentTarget.value, op: 'eq', value: '' })}>
          {table.columns.map((c) => (
            <option key={c.name} value={c.name}>
              {c.name}
            </option>
          ))}
        </select>
        <label class="check small">
          <input type="checkbox" checked={f.not} onChange={(e) => set({ not: e.currentTarget.checked })} /> not
        </label>
        <select aria-label="Operator" value={f.op} onChange={(e) => set({ op: e.currentTarget.value as Operator, value: e.currentTarget.value === 'is' ? 'null' : f.value })}>
          {OPERATORS.filter(([o]) => ops.includes(o)).map(([o, l]) => (
            <option key={o} value={o}>
              {l}
            </option>
          ))}
        </select>
        {f.op === 'is' ? (
          <select aria-label="Value" value={f.value} onChange={(e) => set({ value: e.currentTarget.value })}>
            {IS_VALUES.map((v) => (
              <option key={v} value={v}>
                {v.replace('_', ' ')}
              </option>
            ))}
          </select>
        ) : (
          <input
            id={id}
            aria-label="Value"
            class="mono"
            value={f.value}
            placeholder={f.op === 'in' ? 'a, b, c' : f.op.endsWith('like') ? 'use * as wildcard' : col?.type === 'timestamp' ? '2026-01-01T00:00:00Z' : ''}
            onInput={(e) => set({ value: e.currentTarget.value })}
          />
        )}
        <button type="button" class="ghost icon" aria-label={`Remove filter ${i + 1}`} onClick={remove}>
          ✕
        </button>
      </div>
  );
}

export function FilterBar({ table, onApply }: { table: Table; onApply: (f: Filter[]) => void }) {
  const [filters, setFilters] = useState<Filter[]>([]);
  const set = (i: number, patch: Partial<Filter>) => setFilters(filters.map((f, j) => (j === i ? { ...f, ...patch } : f)));
  const add = () => setFilters([...filters, { key: nextKey++, column: table.columns[0]!.name, op: 'eq', not: false, value: '' }]);
  const remove = (i: number) => {
    const next = filters.filter((_, j) => j !== i);
    setFilters(next);
    onApply(next);
  };
  return (
    <form class="filter-bar" aria-label="Filters" onSubmit={submitWith(() => onApply(filters))}>
      <p class="small muted filter-title">{filters.length ? 'Rows matching every filter:' : 'No filters: every row the caller may read.'}</p>
      {filters.map((f, i) => (
        <FilterRow key={f.key} table={table} f={f} i={i} set={(p) => set(i, p)} remove={() => remove(i)} />
      ))}
      <div class="inline">
        <button type="button" class="secondary small-button" onClick={add}>
          Add filter
        </button>
        {filters.length > 0 && (
          <button type="submit" class="primary small-button">
            Apply filters
          </button>
        )}
      </div>
    </form>
  );
}
