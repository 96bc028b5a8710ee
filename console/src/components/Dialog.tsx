import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

interface Props {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}

/**
 * A modal <dialog>, open while mounted: the browser traps focus inside it, closes it on Escape and
 * gives focus back to what had it before.
 */
export function Dialog({ title, onClose, children, wide }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    return () => d.open && d.close();
  }, []);
  return (
    <dialog ref={ref} class={wide ? 'wide' : ''} aria-labelledby={titleId} onClose={onClose} onCancel={(e) => (e.preventDefault(), onClose())}>
      <div class="dialog-head">
        <h2 id={titleId}>{title}</h2>
        <button type="button" class="ghost icon" aria-label="Close" onClick={onClose}>
          ✕
        </button>
      </div>
      {children}
    </dialog>
  );
}
