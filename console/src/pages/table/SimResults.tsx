// A simulation's answer: the caller, the policies taking part, the rows with their decision, and for
// one chosen row each stage's policies with their results.
import { useState } from 'preact/hooks';
import type { SimPolicy, SimRow, Simulation, Stage, Table } from '../../api/types.ts';
import { cellText } from '../../lib/format.ts';
import { Empty } from '../../components/States.tsx';
import { ListTable } from '../../components/ListTable.tsx';

const STAGE_TEXT: Record<Stage, string> = {
  select: 'SELECT policies: may the caller see the row?',
  update: 'UPDATE policies: may the caller change it?',
  delete: 'DELETE policies: may the caller delete it?',
  check: 'Check after the write: does the new row pass?',
};

function Result({ value }: { value: boolean | null | undefined }) {
  if (value === true) return <span class="pass">true ✓</span>;
  if (value === false) return <span class="fail">false ✗</span>;
  return <span class="null" title="The expression was NULL (for example $auth.id of an anonymous caller): not a match">NULL ✗</span>;
}

function Decision({ row }: { row: SimRow }) {
  return row.allowed ? <span class="pass">Allowed</span> : <span class="fail">{row.exists ? 'Not allowed' : 'No such row'}</span>;
}

function Explain({ sim, row, table }: { sim: Simulation; row: SimRow; table: Table }) {
  const byId = new Map(sim.policies.map((p) => [p.policy_id, p]));
  const shown = row.after ?? row.row;
  return (
    <section class="card explain" aria-labelledby="explain-title" tabIndex={-1} id="sim-explain">
      <h3 id="explain-title">
        Row {row.id ?? '(new)'}: <Decision row={row} />
      </h3>
      <p class="reason">{row.reason}</p>
      {sim.stages.map((stage) => {
        const s = row.stages[stage];
        if (!s) return null;
        const ids = Object.keys(s.results);
        return (
          <div key={stage} class="stage">
            <h4>
              {STAGE_TEXT[stage]} <span class={s.passed ? 'pass' : 'fail'}>{s.passed ? 'passed' : 'failed'}</span>
            </h4>
            {s.open ? (
              <p class="small">No enabled policy for this stage: open to every caller.</p>
            ) : (
              <ul class="stage-policies">
                {ids.map((id) => {
                  const p = byId.get(id);
                  return (
                    <li key={id}>
                      <Result value={s.results[id]} /> <strong>{p?.name ?? id}</strong> <span class="badge">{p?.operation}</span> <code>{p?.expression}</code>
                    </li>
                  );
                })}
              </ul>
            )}
          </div>
        );
      })}
      {shown && (
        <details>
          <summary>{row.after ? 'The row after the change' : 'The row'}</summary>
          <dl class="row-values">
            {table.columns.map((c) =>
              c.name in shown ? (
                <div key={c.name}>
                  <dt class="mono">{c.name}</dt>
                  <dd class="mono">{shown[c.name] === null ? 'NULL' : cellText(shown[c.name], 200)}</dd>
                </div>
              ) : null,
            )}
          </dl>
        </details>
      )}
    </section>
  );
}

function PolicyTable({ policies }: { policies: SimPolicy[] }) {
  if (policies.length === 0) return <p class="small">This table has no policies: every operation is open.</p>;
  return (
    <ListTable caption="Policies" showCaption columns={['Name', 'Operation', 'Expression', 'Takes part in']}>
      {policies.map((p) => (
        <tr key={p.policy_id} class={p.stages.length ? '' : 'disabled'}>
          <td>{p.name}</td>
          <td>
            <span class="badge">{p.operation}</span>
          </td>
          <td class="mono expr-cell">
            {p.expression}
            {!p.valid && p.error && <p class="field-error">Broken: {p.error.message} It matches no row.</p>}
          </td>
          <td class="small">{!p.enabled ? 'disabled' : p.stages.length ? p.stages.join(', ') : 'not this operation'}</td>
        </tr>
      ))}
    </ListTable>
  );
}

export function SimResults({ sim, table }: { sim: Simulation; table: Table }) {
  const [chosen, setChosen] = useState<number>(0);
  const row = sim.rows[chosen];
  const allowed = sim.rows.filter((r) => r.allowed).length;
  return (
    <section class="sim-results" aria-labelledby="sim-results-title">
      <h2 id="sim-results-title">
        {sim.operation} as {sim.auth ? sim.auth.email : 'anonymous'}
      </h2>
      <p class="small" role="status">
        {sim.auth
          ? `$auth.id = ${sim.auth.id}, $auth.email = '${sim.auth.email}', $auth.role = ${sim.auth.role === null ? 'NULL' : `'${sim.auth.role}'`}, $auth.email_verified = ${sim.auth.email_verified}.`
          : 'Anonymous: every $auth value is NULL.'}{' '}
        {sim.rows.length > 0 && `${allowed} of ${sim.rows.length} rows allowed.`}
      </p>
      <PolicyTable policies={sim.policies} />
      {sim.rows.length === 0 ? (
        <Empty title="No rows of this kind" />
      ) : (
        <div class="sim-split">
          <ListTable caption="Rows" showCaption columns={['Row', 'Decision', ...sim.stages]} actions>
                {sim.rows.map((r, i) => (
                  <tr key={`${r.id}-${i}`} class={i === chosen ? 'chosen' : ''}>
                    <td class="mono">{r.id ?? 'new'}</td>
                    <td>
                      <Decision row={r} />
                    </td>
                    {sim.stages.map((s) => (
                      <td key={s} class="small">
                        {r.stages[s] ? (r.stages[s]!.open ? 'open' : r.stages[s]!.passed ? 'pass' : 'fail') : '—'}
                      </td>
                    ))}
                    <td>
                      <button type="button" class="ghost small-button" aria-pressed={i === chosen} onClick={() => setChosen(i)}>
                        Explain<span class="visually-hidden"> row {r.id}</span>
                      </button>
                    </td>
                  </tr>
                ))}
          </ListTable>
          {row && <Explain sim={sim} row={row} table={table} />}
        </div>
      )}
    </section>
  );
}
