// Short confirmations of a completed action ("Key revoked"), announced politely to screen readers.
import { useEffect, useState } from 'preact/hooks';

let show: ((text: string) => void) | null = null;

export function notify(text: string): void {
  show?.(text);
}

export function NoticeRegion() {
  const [text, setText] = useState('');
  useEffect(() => {
    let timer = 0;
    show = (t) => {
      setText(t);
      clearTimeout(timer);
      timer = window.setTimeout(() => setText(''), 4000);
    };
    return () => {
      show = null;
      clearTimeout(timer);
    };
  }, []);
  return (
    <div class={`notice ${text ? 'shown' : ''}`} role="status" aria-live="polite">
      {text}
    </div>
  );
}
