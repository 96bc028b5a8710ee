import { useState } from 'preact/hooks';

/** Copies `text`; where the clipboard API is refused (plain http), selects `selectId`'s text instead. */
export function CopyButton({ text, label = 'Copy', selectId }: { text: string; label?: string; selectId?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'select'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      const el = selectId ? (document.getElementById(selectId) as HTMLInputElement | null) : null;
      el?.focus();
      el?.select();
      setState('select');
    }
  };
  return (
    <>
      <button type="button" class="secondary" onClick={copy}>
        {state === 'copied' ? 'Copied' : state === 'select' ? 'Selected: press Ctrl+C' : label}
      </button>
      <span class="visually-hidden" aria-live="polite">
        {state === 'copied' ? 'Copied to the clipboard' : ''}
      </span>
    </>
  );
}
