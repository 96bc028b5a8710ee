// A project's name and description, and deleting it (typed confirmation).
import { useState } from 'preact/hooks';
import { api, seg } from '../../api/client.ts';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { ErrorBox } from '../../components/ErrorBox.tsx';
import { Field, inputProps } from '../../components/Field.tsx';
import { notify } from '../../components/Notice.tsx';
import { navigate } from '../../lib/router.ts';
import { useAction, submitWith } from '../../lib/use-load.ts';
import { fieldError, formError } from '../../lib/form-errors.ts';
import { useTitle } from '../../lib/title.ts';
import { useProject } from './context.ts';

export function ProjectSettings() {
  const { project, reload } = useProject();
  useTitle(`Settings · ${project.name}`);
  const [name, setName] = useState(project.name);
  const [description, setDescription] = useState(project.description ?? '');
  const [deleting, setDeleting] = useState(false);
  const save = useAction(async () => {
    await api.patch(`/projects/${seg(project.id)}`, { name, description: description.trim() === '' ? null : description });
    await reload();
    notify('Project saved.');
  });
  const err = (f: string) => fieldError(save.error, f);
  return (
    <section class="page narrow">
      <h1 tabIndex={-1}>Project settings</h1>
      <form
        class="card"
        onSubmit={submitWith(save.run)}
      >
        <Field id="ps-name" label="Name" error={err('name')}>
          <input {...inputProps('ps-name', err('name'))} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field id="ps-description" label="Description" error={err('description')}>
          <textarea {...inputProps('ps-description', err('description'))} rows={3} maxLength={1000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <ErrorBox error={formError(save.error, ['name', 'description'])} />
        <button type="submit" class="primary" disabled={save.busy}>
          Save
        </button>
      </form>
      <div class="card danger-zone">
        <h2>Delete project</h2>
        <p>Deletes its tables and rows, policies, end users, keys, functions and email settings. This cannot be undone.</p>
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete project…
        </button>
      </div>
      {deleting && (
        <ConfirmDialog
          title={`Delete project ${project.name}?`}
          confirmLabel="Delete project"
          typed={project.name}
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api.del(`/projects/${seg(project.id)}`);
            notify(`Project ${project.name} deleted.`);
            navigate('/console/projects');
          }}
        >
          <p>Apps using its keys get 401 from now on.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
