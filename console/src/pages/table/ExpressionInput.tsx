// A policy expression with live validation: the server checks it on a short debounce (the same
// validator as create and update; the console has no parser of its own) and the part it names is
// highlighted where it stands in the text.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, seg } from '../../api/client.ts';
import type { Table } from '../../api/types.ts';

export type Check = { state: 'idle' | 'checking' | 'valid' } | { state: 'invalid'; error: ApiError };

const PLACEHOLDERS = ['$auth.id', '$auth.email', '$auth.role', '$auth.email_verified'];

/** Where the server's `details.offending` sits in the expression. */
export function offendingSpan(error: ApiError, text: string): { start: number; end: number } | null {
  const d = error.details as { offending?: unknown; position?: unknown } | null;
  if (!d || typeof d.position !== 'number') return null;
  const start = Math.max(0, Math.min(d.position, text.length));
  const len = typeof d.offending === 'string' ? d.offending.length : 0;
  return { start, end: Math.min(text.length, start + len) };
}

function lineCol(text: string, pos: number): string {
  const before = text.slice(0, pos).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

export function Highlight({ text, error }: { text: string; error: ApiError }) {
  const span = offendingSpan(error, text);
  if (!span) return null;
  const { start, end } = span;
  return (
    <div class="expr-highlight">
      <pre aria-hidden="true">
        {text.slice(0, start)}
        <mark>{end > start ? text.slice(start, end) : ' '}</mark>
        {text.slice(end)}
      </pre>
      <p class="small">
        At {lineCol(text, start)}: <code>{text.slice(start, end) || '(end of the expression)'}</code>
      </p>
    </div>
  );
}

interface Props {
  id: string;
  table: Table;
  projectId: string;
  value: string;
  onValue: (v: string) => void;
  /** an error from saving, shown like a live one */
  saveError: ApiError | null;
}

export function ExpressionInput({ id, table, projectId, value, onValue, saveError }: Props) {
  const [check, setCheck] = useState<Check>({ state: 'idle' });
  const ref = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (value.trim() === '') return setCheck({ state: 'idle' });
    setCheck({ state: 'checking' });
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      api
        .post(`/projects/${seg(projectId)}/tables/${seg(table.id)}/rls-policies/validate`, { expression: value }, { signal: ctl.signal })
        .then(() => setCheck({ state: 'valid' }))
        .catch((err) => {
          if (err instanceof ApiError && err.code === 'invalid_expression') setCheck({ state: 'invalid', error: err });
          else if (err instanceof ApiError) setCheck({ state: 'idle' }); // the save will say it
        });
    }, 350);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [value, table.id, projectId]);

  const insert = (text: string) => {
    const ta = ref.current!;
    const { selectionStart: s, selectionEnd: e } = ta;
    const next = value.slice(0, s) + text + value.slice(e);
    onValue(next);
    requestAnimationFrame(() => {
      ta.focus();
      ta.setSelectionRange(s + text.length, s + text.length);
    });
  };

  const shown = saveError?.code === 'invalid_expression' && check.state !== 'valid' ? saveError : check.state === 'invalid' ? check.error : null;
  return (
    <div class={`field ${shown ? 'has-error' : ''}`}>
      <label for={id}>Expression</label>
      <textarea
        ref={ref}
        id={id}
        class="code expr"
        rows={3}
        spellcheck={false}
        required
        value={value}
        aria-invalid={shown ? true : undefined}
        aria-describedby={`${id}-status ${id}-hint`}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
      <div id={`${id}-status`} class="expr-status" aria-live="polite">
        {check.state === 'checking' && <span class="muted small">Checking…</span>}
        {check.state === 'valid' && !shown && <span class="ok small">✓ Valid for this table</span>}
        {shown && (
          <>
            <p class="field-error">{shown.message}</p>
            <Highlight text={value} error={shown} />
          </>
        )}
      </div>
      <div class="field-hint" id={`${id}-hint`}>
        Insert:{' '}
        {[...table.columns.map((c) => c.name), ...PLACEHOLDERS].map((t) => (
          <button key={t} type="button" class="chip mono" onClick={() => insert(t)}>
            {t}
          </button>
        ))}
      </div>
    </div>
  );
}
