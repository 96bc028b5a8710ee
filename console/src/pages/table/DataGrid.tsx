// The rows as a grid: a sortable header (not json: engines order it differently), one row per row.
import type { Row, Table } from '../../api/types.ts';
import { cellText } from '../../lib/format.ts';

export interface Sort {
  column: string;
  dir: 'asc' | 'desc';
}

interface Props {
  table: Table;
  rows: Row[];
  sort: Sort | null;
  onSort: (s: Sort | null) => void;
  onEdit: (r: Row) => void;
  onDelete: (r: Row) => void;
  busy: boolean;
}

function nextSort(sort: Sort | null, column: string): Sort | null {
  if (sort?.column !== column) return { column, dir: 'asc' };
  return sort.dir === 'asc' ? { column, dir: 'desc' } : null;
}

function Cell({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="null">NULL</span>;
  const text = cellText(value);
  const full = typeof value === 'string' ? value : JSON.stringify(value);
  return <span title={text !== full ? full : undefined}>{text}</span>;
}

export function DataGrid({ table, rows, sort, onSort, onEdit, onDelete, busy }: Props) {
  return (
    <div class="table-wrap grid-wrap" aria-busy={busy}>
      <table class="grid">
        <caption class="visually-hidden">Rows of {table.name}</caption>
        <thead>
          <tr>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
            {table.columns.map((c) => {
              const dir = sort?.column === c.name ? sort.dir : null;
              return (
                <th key={c.name} scope="col" aria-sort={dir ? (dir === 'asc' ? 'ascending' : 'descending') : undefined}>
                  {c.type === 'json' ? (
                    <span class="mono">{c.name}</span>
                  ) : (
                    // the name is the column's; aria-sort on the header says how it is sorted
                    <button type="button" class="sort mono" title={`Sort by ${c.name}`} onClick={() => onSort(nextSort(sort, c.name))}>
                      {c.name}
                      <span aria-hidden="true">{dir === 'asc' ? ' ▲' : dir === 'desc' ? ' ▼' : ''}</span>
                    </button>
                  )}
                  <span class="col-type">{c.type}</span>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id}>
              <td class="row-actions first">
                <button type="button" class="ghost small-button" onClick={() => onEdit(r)}>
                  Edit<span class="visually-hidden"> row {r.id}</span>
                </button>
                <button type="button" class="ghost danger-text small-button" onClick={() => onDelete(r)}>
                  Delete<span class="visually-hidden"> row {r.id}</span>
                </button>
              </td>
              {table.columns.map((c) => (
                <td key={c.name} class={c.type === 'text' || c.type === 'json' ? 'text' : 'mono'}>
                  <Cell value={r[c.name]} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
