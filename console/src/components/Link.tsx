import type { ComponentChildren, JSX } from 'preact';
import { navigate } from '../lib/router.ts';

type Props = JSX.HTMLAttributes<HTMLAnchorElement> & { href: string; children: ComponentChildren };

/** An ordinary link that the router follows without a page load (plain clicks only). */
export function Link({ href, children, ...rest }: Props) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
