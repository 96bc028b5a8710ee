interface Props {
  onCancel: () => void;
  busy: boolean;
  label: string;
  busyLabel?: string;
  /** not ready to submit (besides busy) */
  disabled?: boolean;
  danger?: boolean;
}

/** A dialog form's Cancel and submit buttons. */
export function FormActions({ onCancel, busy, label, busyLabel = 'Saving…', disabled, danger }: Props) {
  return (
    <div class="actions">
      <button type="button" class="secondary" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy || disabled}>
        {busy ? busyLabel : label}
      </button>
    </div>
  );
}
