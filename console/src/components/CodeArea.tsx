import type { JSX } from 'preact';
import { useRef } from 'preact/hooks';

type Props = Omit<JSX.TextareaHTMLAttributes<HTMLTextAreaElement>, 'onInput' | 'value'> & { value: string; onValue: (v: string) => void };

const INDENT = '  ';

/**
 * A monospace textarea where Tab indents and Shift+Tab outdents the selected lines. Escape releases
 * the next Tab, so keyboard users can still leave the editor.
 */
export function CodeArea({ value, onValue, ...rest }: Props) {
  const released = useRef(false);
  const onKeyDown = (e: KeyboardEvent) => {
    const ta = e.currentTarget as HTMLTextAreaElement;
    if (e.key === 'Escape') {
      released.current = true;
      return;
    }
    if (e.key !== 'Tab' || released.current || e.ctrlKey || e.altKey || e.metaKey) {
      released.current = false;
      return;
    }
    e.preventDefault();
    const { selectionStart: start, selectionEnd: end } = ta;
    const lineStart = value.lastIndexOf('\n', start - 1) + 1;
    if (!e.shiftKey && start === end) {
      const next = value.slice(0, start) + INDENT + value.slice(end);
      onValue(next);
      requestAnimationFrame(() => ta.setSelectionRange(start + INDENT.length, start + INDENT.length));
      return;
    }
    const block = value.slice(lineStart, end);
    const lines = block.split('\n');
    const changed = e.shiftKey ? lines.map((l) => (l.startsWith(INDENT) ? l.slice(INDENT.length) : l.replace(/^ /, ''))) : lines.map((l) => INDENT + l);
    const text = changed.join('\n');
    onValue(value.slice(0, lineStart) + text + value.slice(end));
    requestAnimationFrame(() => ta.setSelectionRange(lineStart, lineStart + text.length));
  };
  return <textarea {...rest} class={`code ${rest.class ?? ''}`} spellcheck={false} value={value} onInput={(e) => onValue(e.currentTarget.value)} onKeyDown={onKeyDown} />;
}
