import type { JSX } from 'preact';
import { useRef } from 'preact/hooks';

type Props = Omit<JSX.TextareaHTMLAttributes<HTMLTextAreaElement>, 'onInput' | 'value'> & { value: string; onValue: (v: string) => void };

const INDENT = '  ';

/**
 * A monospace textarea where Tab indents and Shift+Tab outdents the selected lines. Escape releases
 * the next Tab, so keyboard users can still leave the editor. The indent is written into the
 * textarea at once (setRangeText) and the state follows: a key typed before the next render then
 * lands after it, instead of being overwritten by the render.
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
    const lineStart = ta.value.lastIndexOf('\n', start - 1) + 1;
    if (!e.shiftKey && start === end) {
      ta.setRangeText(INDENT, start, end, 'end');
      onValue(ta.value);
      return;
    }
    const lines = ta.value.slice(lineStart, end).split('\n');
    const changed = e.shiftKey ? lines.map((l) => (l.startsWith(INDENT) ? l.slice(INDENT.length) : l.replace(/^ /, ''))) : lines.map((l) => INDENT + l);
    ta.setRangeText(changed.join('\n'), lineStart, end, 'select');
    onValue(ta.value);
  };
  return <textarea {...rest} class={`code ${rest.class ?? ''}`} spellcheck={false} value={value} onInput={(e) => onValue(e.currentTarget.value)} onKeyDown={onKeyDown} />;
}
