import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { Dialog } from './Dialog.tsx';
import { ErrorBox } from './ErrorBox.tsx';
import { FormActions } from './FormActions.tsx';
import { useAction } from '../lib/use-load.ts';

interface Props {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  /** the text the owner must type to enable the button (typed confirmation) */
  typed?: string;
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
}

/** A destructive action's confirmation; the dialog stays open with the server's error if it fails. */
export function ConfirmDialog({ title, children, confirmLabel, typed, onConfirm, onClose }: Props) {
  const [text, setText] = useState('');
  const id = useId();
  const action = useAction(async () => {
    await onConfirm();
    onClose();
  });
  const ready = typed === undefined || text === typed;
  return (
    <Dialog title={title} onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (ready) void action.run();
        }}
      >
        <div class="dialog-body">{children}</div>
        {typed !== undefined && (
          <div class="field">
            <label for={id}>
              Type <strong class="mono">{typed}</strong> to confirm
            </label>
            <input id={id} value={text} onInput={(e) => setText(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
          </div>
        )}
        <ErrorBox error={action.error} />
        <FormActions onCancel={onClose} busy={action.busy} busyLabel="Working…" disabled={!ready} label={confirmLabel} danger />
      </form>
    </Dialog>
  );
}
