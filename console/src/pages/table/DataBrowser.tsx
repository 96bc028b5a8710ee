// The rows of a table as the owner, as anonymous or as one end user: exactly what that caller
// would read, and writes checked as that caller would be (the rows routes' `as`).
import { useState } from 'preact/hooks';
import { api, call, seg } from '../../api/client.ts';
import type { Caller, Row, Table } from '../../api/types.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { Link } from '../../components/Link.tsx';
import { Empty, Pending } from '../../components/States.tsx';
import { notify } from '../../components/Notice.tsx';
import { setQuery, useLocation } from '../../lib/router.ts';
import { useLoad } from '../../lib/use-load.ts';
import { useProject } from '../project/context.ts';
import { CallerPicker, userIdOf } from './CallerPicker.tsx';
import { FilterBar } from './FilterBar.tsx';
import { filterParam, type Filter } from './filters.ts';
import { RowForm } from './RowForm.tsx';
import { DataGrid, type Sort } from './DataGrid.tsx';

const PAGE_SIZES = [25, 50, 100];

function callerOf(raw: string | null): Caller {
  if (raw === 'anonymous' || (raw && /^end_user:[1-9]\d*$/.test(raw))) return raw as Caller;
  return 'owner';
}

export function callerLabel(c: Caller, emails: Record<string, string>): string {
  return c === 'owner' ? 'the owner (no policies)' : c === 'anonymous' ? 'an anonymous caller' : (emails[c] ?? `end user #${userIdOf(c)}`);
}

interface Page {
  rows: Row[];
  total: number | null;
  /** the query these rows answer (the screen shows data-query and data-want: equal once settled) */
  query: string;
}

/** The page of rows the browser shows: its query (caller, filters, order, page) and its answer. */
function useRowsPage(path: string, caller: Caller) {
  const [filters, setFilters] = useState<Filter[]>([]);
  const [sort, setSort] = useState<Sort | null>(null);
  const [limit, setLimit] = useState(25);
  const [offset, setOffset] = useState(0);
  const q = new URLSearchParams({ as: caller, limit: String(limit), offset: String(offset) });
  if (sort) q.set('order', `${sort.column}.${sort.dir}`);
  for (const f of filters) q.append(...filterParam(f));
  const query = q.toString();
  const page = useLoad(async (): Promise<Page> => {
    const res = await call<Row[]>('GET', path, { query: new URLSearchParams(query), headers: { prefer: 'count=exact' } });
    const total = res.headers.get('content-range')?.split('/')[1];
    return { rows: res.data, total: total && total !== '*' ? Number(total) : null, query };
  }, [path, query]);
  return {
    page,
    query,
    filters,
    sort,
    setSort,
    limit,
    offset,
    setOffset,
    setFilters: (f: Filter[]) => (setOffset(0), setFilters(f)),
    setLimit: (l: number) => (setOffset(0), setLimit(l)),
  };
}

export function DataBrowser({ table }: { table: Table }) {
  const { project, base } = useProject();
  const caller = callerOf(useLocation().query.get('as'));
  const path = `/projects/${seg(project.id)}/tables/${seg(table.id)}/rows`;
  const rows = useRowsPage(path, caller);
  const { page } = rows;
  const [editing, setEditing] = useState<Row | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Row | null>(null);
  const [emails, setEmails] = useState<Record<string, string>>({});
  const setCaller = (c: Caller) => {
    rows.setOffset(0);
    setQuery({ as: c === 'owner' ? null : c });
  };
  const write = async (values: Record<string, unknown>, row: Row | null) => {
    await call(row ? 'PATCH' : 'POST', row ? `${path}/${row.id}` : path, { query: { as: caller }, body: values, headers: { prefer: 'return=representation' } });
    await page.reload();
    notify(row ? `Row ${row.id} saved.` : 'Row inserted.');
    setEditing(null);
  };
  const data = page.data;
  const label = callerLabel(caller, emails);
  const retry = () => void page.reload();
  return (
    <div class="data-browser" aria-busy={page.loading} data-want={rows.query} data-query={data?.query}>
      <div class="browser-controls">
        <CallerPicker projectId={project.id} value={caller} onChange={setCaller} allowOwner onEmail={(e) => setEmails((m) => ({ ...m, [caller]: e }))} />
        <FilterBar table={table} onApply={rows.setFilters} />
      </div>
      <div class="page-head">
        <p class="small" role="status">
          {caller === 'owner' ? 'Every row; policies do not apply to the owner.' : `What ${label} reads; writes are checked against the policies as ${label}.`}
        </p>
        <button type="button" class="primary" onClick={() => setEditing('new')}>
          Insert row
        </button>
      </div>
      {(!data || page.error) && <Pending error={page.error} retry={retry} />}
      {data && data.rows.length === 0 && (
        <Empty title={rows.filters.length || rows.offset ? 'No rows match' : caller === 'owner' ? 'No rows yet' : `No rows visible to ${label}`}>
          {caller !== 'owner' && (
            <p class="small">
              <Link href={`${base}/tables/${table.id}/simulator?as=${encodeURIComponent(caller)}`}>Ask the simulator</Link> which policy hides each row.
            </p>
          )}
        </Empty>
      )}
      {data && data.rows.length > 0 && <DataGrid table={table} rows={data.rows} sort={rows.sort} onSort={rows.setSort} onEdit={setEditing} onDelete={setDeleting} busy={page.loading} />}
      {data && <Pager total={data.total} count={data.rows.length} offset={rows.offset} limit={rows.limit} onOffset={rows.setOffset} onLimit={rows.setLimit} />}
      {editing && <RowForm table={table} row={editing === 'new' ? null : editing} callerLabel={label} onClose={() => setEditing(null)} onSubmit={(values) => write(values, editing === 'new' ? null : editing)} />}
      {deleting && (
        <ConfirmDialog
          title={`Delete row ${deleting.id}?`}
          confirmLabel="Delete row"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api.del(`${path}/${deleting.id}`, { query: { as: caller } });
            notify(`Row ${deleting.id} deleted.`);
            await page.reload();
          }}
        >
          <p>As {label}.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

function Pager({ total, count, offset, limit, onOffset, onLimit }: { total: number | null; count: number; offset: number; limit: number; onOffset: (o: number) => void; onLimit: (l: number) => void }) {
  const end = offset + count;
  return (
    <nav class="pager" aria-label="Pages">
      <span class="small">
        {count === 0 ? 'No rows' : `Rows ${offset + 1}–${end}`}
        {total !== null ? ` of ${total}` : ''}
      </span>
      <button type="button" class="secondary small-button" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - limit))}>
        Previous
      </button>
      <button type="button" class="secondary small-button" disabled={total !== null ? end >= total : count < limit} onClick={() => onOffset(offset + limit)}>
        Next
      </button>
      <label class="small">
        Rows per page{' '}
        <select value={String(limit)} onChange={(e) => onLimit(Number(e.currentTarget.value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </nav>
  );
}
