import type { ComponentChildren } from 'preact';

/** The attributes that tie an input to its label's hint and error. */
export function inputProps(id: string, error?: string | null, hint?: boolean) {
  const described = [error ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return { id, 'aria-invalid': error ? true : undefined, 'aria-describedby': described || undefined };
}

interface Props {
  id: string;
  label: ComponentChildren;
  error?: string | null;
  hint?: ComponentChildren;
  children: ComponentChildren;
  class?: string;
}

/** A label, its input (which must use inputProps(id, error, !!hint)), a hint and the error. */
export function Field({ id, label, error, hint, children, class: cls }: Props) {
  return (
    <div class={`field ${error ? 'has-error' : ''} ${cls ?? ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && (
        <div class="field-hint" id={`${id}-hint`}>
          {hint}
        </div>
      )}
      {error && (
        <div class="field-error" id={`${id}-error`}>
          {error}
        </div>
      )}
    </div>
  );
}
