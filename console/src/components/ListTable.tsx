import type { ComponentChildren } from 'preact';

interface Props {
  /** read by screen readers; shown only when `showCaption` */
  caption: string;
  showCaption?: boolean;
  columns: string[];
  /** a last, unlabelled column of buttons */
  actions?: boolean;
  class?: string;
  children: ComponentChildren;
}

/** A list as a table: scrolls sideways inside its own box on narrow screens. */
export function ListTable({ caption, showCaption, columns, actions, class: cls, children }: Props) {
  return (
    <div class="table-wrap">
      <table class={`list ${cls ?? ''}`}>
        <caption class={showCaption ? undefined : 'visually-hidden'}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
