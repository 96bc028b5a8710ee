// A table's policies: list, enable or disable, create and edit (with live validation), delete.
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import { OPERATIONS, type Policy, type PolicyOperation, type Table } from '../../api/types.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { FormActions } from '../../components/FormActions.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { Link } from '../../components/Link.tsx';
import { notify } from '../../components/Notice.tsx';
import { Empty, Pending } from '../../components/States.tsx';
import { useAction, type Loaded, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useProject } from '../project/context.ts';
import { ExpressionInput } from './ExpressionInput.tsx';
import { ListTable } from '../../components/ListTable.tsx';

const OPERATION_HELP: Record<PolicyOperation, string> = {
  SELECT: 'which rows a caller reads (and gets back after a write)',
  INSERT: 'which new rows a caller may write (checked after the insert)',
  UPDATE: 'which rows a caller may change, and what they may become',
  DELETE: 'which rows a caller may delete',
  ALL: 'all four operations',
};

function PolicyForm({ table, policy, onDone, onClose }: { table: Table; policy: Policy | null; onDone: () => void; onClose: () => void }) {
  const { project } = useProject();
  const [name, setName] = useState(policy?.name ?? '');
  const [operation, setOperation] = useState<PolicyOperation>(policy?.operation ?? 'ALL');
  const [expression, setExpression] = useState(policy?.expression ?? '');
  const [enabled, setEnabled] = useState(policy?.enabled ?? true);
  const path = `/projects/${seg(project.id)}/tables/${seg(table.id)}/rls-policies`;
  const save = useAction(async () => {
    if (policy) await api.patch(`${path}/${seg(policy.policy_id)}`, { name, expression, enabled });
    else await api.post(path, { name, operation, expression, enabled });
    notify(policy ? 'Policy saved.' : 'Policy created.');
    onDone();
    onClose();
  });
  const err = (f: string) => fieldError(save.error, f);
  return (
    <Dialog title={policy ? `Edit policy ${policy.name}` : 'New policy'} onClose={onClose} wide>
      <form onSubmit={submitWith(save.run)}>
        <Field id="policy-name" label="Name" error={err('name')}>
          <input {...inputProps('policy-name', err('name'))} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="Own rows" />
        </Field>
        <Field id="policy-operation" label="Operation" error={err('operation')} hint={policy ? 'The operation of a policy cannot change; create another policy instead.' : OPERATION_HELP[operation]}>
          <select {...inputProps('policy-operation', err('operation'), true)} value={operation} disabled={!!policy} onChange={(e) => setOperation(e.currentTarget.value as PolicyOperation)}>
            {OPERATIONS.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </Field>
        <ExpressionInput id="policy-expression" table={table} projectId={project.id} value={expression} onValue={setExpression} saveError={save.error} />
        <label class="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
        </label>
        <ErrorBox error={save.error?.code === 'invalid_expression' ? null : formError(save.error, ['name', 'operation'])} />
        <FormActions onCancel={onClose} busy={save.busy} label={policy ? 'Save policy' : 'Create policy'} />
      </form>
    </Dialog>
  );
}

function PolicyRow({ table, policy, reload }: { table: Table; policy: Policy; reload: () => void }) {
  const { project } = useProject();
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const path = `/projects/${seg(project.id)}/tables/${seg(table.id)}/rls-policies/${seg(policy.policy_id)}`;
  // shown at once; put back if the server refuses
  const [enabled, setEnabled] = useState(policy.enabled);
  const toggle = useAction(async (on: boolean) => {
    setEnabled(on);
    try {
      await api.patch(path, { enabled: on });
    } catch (err) {
      setEnabled(!on);
      throw err;
    }
    notify(`Policy ${policy.name} ${on ? 'enabled' : 'disabled'}.`);
    reload();
  });
  return (
    <tr class={enabled ? '' : 'disabled'}>
      <td>{policy.name}</td>
      <td>
        <span class="badge">{policy.operation}</span>
      </td>
      <td class="mono expr-cell">{policy.expression}</td>
      <td>
        <label class="switch">
          <input type="checkbox" checked={enabled} disabled={toggle.busy} onChange={(e) => void toggle.run(e.currentTarget.checked)} />
          <span>{enabled ? 'Enabled' : 'Disabled'}</span>
          <span class="visually-hidden"> ({policy.name})</span>
        </label>
        <ErrorBox error={toggle.error} />
      </td>
      <td class="row-actions">
        <button type="button" class="ghost small-button" onClick={() => setEditing(true)}>
          Edit<span class="visually-hidden"> {policy.name}</span>
        </button>
        <button type="button" class="ghost danger-text small-button" onClick={() => setDeleting(true)}>
          Delete<span class="visually-hidden"> {policy.name}</span>
        </button>
        {editing && <PolicyForm table={table} policy={policy} onDone={reload} onClose={() => setEditing(false)} />}
        {deleting && (
          <ConfirmDialog
            title={`Delete policy ${policy.name}?`}
            confirmLabel="Delete policy"
            onClose={() => setDeleting(false)}
            onConfirm={async () => {
              await api.del(path);
              notify('Policy deleted.');
              reload();
            }}
          >
            <p>Callers lose whatever access this policy granted; with no policy left for an operation, that operation is open to everyone.</p>
          </ConfirmDialog>
        )}
      </td>
    </tr>
  );
}

export function Policies({ table, policies }: { table: Table; policies: Loaded<Policy[]> }) {
  const { base } = useProject();
  const [creating, setCreating] = useState(false);
  const list = policies.data;
  const reload = () => void policies.reload();
  return (
    <>
      <div class="page-head">
        <p class="muted">
          A row is allowed when any enabled policy of the operation (or ALL) is true for it. With no enabled policy an operation is open. The owner is never
          subject to policies.
        </p>
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          New policy
        </button>
      </div>
      {!list ? (
        <Pending error={policies.error} retry={reload} />
      ) : list.length === 0 ? (
        <Empty title="No policies">
          <p>
            Every end user can read and write every row. A policy such as <code>owner_id = $auth.id</code> limits each user to their own rows.
          </p>
          <button type="button" class="primary" onClick={() => setCreating(true)}>
            Create a policy
          </button>
        </Empty>
      ) : (
        <ListTable caption={`Policies of ${table.name}`} columns={['Name', 'Operation', 'Expression', 'State']} actions>
          {list.map((p) => (
            <PolicyRow key={`${p.policy_id}-${p.enabled}`} table={table} policy={p} reload={reload} />
          ))}
        </ListTable>
      )}
      {list && list.length > 0 && (
        <p class="small">
          Check them: <Link href={`${base}/tables/${table.id}/simulator`}>simulate a caller</Link> or browse the data as an end user.
        </p>
      )}
      {creating && <PolicyForm table={table} policy={null} onDone={reload} onClose={() => setCreating(false)} />}
    </>
  );
}
