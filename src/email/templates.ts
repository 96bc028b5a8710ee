// Per-project auth email templates: defaults, placeholder substitution, preview values and the
// plain-text alternative. Pure and synchronous; bodies are owner-controlled, so every scan is linear.

import { charLength } from '../lib/validate.ts';

export const TEMPLATE_KEYS = ['magic_link', 'password_reset', 'email_verification', 'email_change'] as const;
export type TemplateKey = (typeof TEMPLATE_KEYS)[number];

export function isTemplateKey(x: string): x is TemplateKey {
  return (TEMPLATE_KEYS as readonly string[]).includes(x);
}

export interface Template { subject: string; body: string }
export interface TemplateValues { link: string; email?: string; new_email?: string; project_name: string }

export const SUBJECT_MAX = 200;
export const BODY_MAX = 20000;

/** First field over its limit, or null. Lengths are code points, not UTF-16 units. */
export function templateLengthError(t: Template): { field: 'subject' | 'body'; max: number } | null {
  if (charLength(t.subject) > SUBJECT_MAX) return { field: 'subject', max: SUBJECT_MAX };
  if (charLength(t.body) > BODY_MAX) return { field: 'body', max: BODY_MAX };
  return null;
}

const PLACEHOLDERS: Record<TemplateKey, readonly (keyof TemplateValues)[]> = {
  magic_link: Object.freeze(['link', 'email', 'project_name'] as const),
  password_reset: Object.freeze(['link', 'email', 'project_name'] as const),
  email_verification: Object.freeze(['link', 'email', 'project_name'] as const),
  email_change: Object.freeze(['link', 'new_email', 'project_name'] as const),
};

/** placeholders available for a key */
export function placeholdersFor(key: TemplateKey): readonly string[] {
  return PLACEHOLDERS[key];
}

// One shared shape keeps the four defaults consistent; owners who want more can write their own.
function layout(heading: string, intro: string, action: string, expiry: string, ignore: string): string {
  return [
    '<div style="font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; line-height: 1.5; color: #222;">',
    `  <h2>${heading}</h2>`,
    `  <p>${intro}</p>`,
    `  <p><a href="{{link}}" style="display: inline-block; padding: 10px 18px; background: #2563eb; color: #fff; text-decoration: none; border-radius: 6px;">${action}</a></p>`,
    '  <p>Or copy and paste this link into your browser:<br>{{link}}</p>',
    `  <p>This link expires in ${expiry}.</p>`,
    `  <p>${ignore}</p>`,
    '</div>',
  ].join('\n');
}

const DEFAULTS: Record<TemplateKey, Template> = {
  magic_link: {
    subject: 'Your sign-in link for {{project_name}}',
    body: layout('Sign in to {{project_name}}', 'Use the button below to sign in to {{project_name}} as {{email}}.',
      'Sign in', '15 minutes', 'If you didn\'t ask to sign in, you can safely ignore this email.'),
  },
  password_reset: {
    subject: 'Reset your password for {{project_name}}',
    body: layout('Reset your password', 'We received a request to reset the password of the {{project_name}} account for {{email}}.',
      'Choose a new password', '30 minutes', 'If you didn\'t request a password reset, you can safely ignore this email; your password will not change.'),
  },
  email_verification: {
    subject: 'Confirm your email address for {{project_name}}',
    body: layout('Confirm your email address', 'Thanks for signing up to {{project_name}}! Please confirm that {{email}} is your email address.',
      'Confirm my email', '1 day', 'If you didn\'t create an account, you can safely ignore this email.'),
  },
  email_change: {
    subject: 'Confirm your new email address for {{project_name}}',
    body: layout('Confirm your new email address', 'We received a request to change the email address of your {{project_name}} account to {{new_email}}.',
      'Confirm the change', '30 minutes', 'If you didn\'t request this change, you can safely ignore this email; your address will stay the same.'),
  },
};

export function defaultTemplate(key: TemplateKey): Template {
  return { ...DEFAULTS[key] };
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

// Exact `{{name}}` only: other spellings are left alone so an owner's literal braces never change
// meaning. A callback replace is single-pass by construction, so values are never re-expanded.
const PLACEHOLDER_RE = /\{\{([a-z_]{1,32})\}\}/g;

const ALL_PLACEHOLDERS: readonly (keyof TemplateValues)[] = Object.freeze(['link', 'email', 'new_email', 'project_name'] as const);

function substitute(s: string, allowed: readonly string[], values: TemplateValues): string {
  return s.replace(PLACEHOLDER_RE, (whole, name: string) => {
    if (!(allowed as readonly string[]).includes(name)) return whole;
    const v = values[name as keyof TemplateValues];
    // A missing value is a caller bug; keeping the placeholder makes it visible instead of silent.
    return typeof v === 'string' ? escapeHtml(v) : whole;
  });
}

export function render(key: TemplateKey, t: Template, values: TemplateValues): { subject: string; html: string; text: string } {
  return renderWith(PLACEHOLDERS[key], t, values);
}

function renderWith(allowed: readonly string[], t: Template, values: TemplateValues): { subject: string; html: string; text: string } {
  // Header injection defence: a subject must stay one line whatever the template or values hold.
  const subject = substitute(t.subject, allowed, values).replace(/\r\n|[\r\n\u0085\u2028\u2029]/g, ' ');
  const html = substitute(t.body, allowed, values);
  return { subject, html, text: htmlToText(html) };
}

/**
 * Preview of a template not tied to a key: every placeholder is filled with its sample value (a
 * key-specific preview uses render with sampleValues instead).
 */
export function renderPreview(t: Template, projectName: string): { subject: string; html: string; text: string } {
  const values: TemplateValues = { ...sampleValues('magic_link', projectName), new_email: 'new.address@example.com' };
  return renderWith(ALL_PLACEHOLDERS, t, values);
}

export function sampleValues(key: TemplateKey, projectName: string): TemplateValues {
  const v: TemplateValues = { link: `https://example.com/auth/callback?token=${'0'.repeat(64)}`, project_name: projectName };
  if (key === 'email_change') v.new_email = 'new.address@example.com';
  else v.email = 'user@example.com';
  return v;
}

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'', nbsp: ' ' };
const ENTITY_RE = /&(?:(amp|lt|gt|quot|apos|nbsp)|#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6}));/gi;

function decodeEntities(s: string): string {
  return s.replace(ENTITY_RE, (whole, name?: string, dec?: string, hex?: string) => {
    if (name) return NAMED_ENTITIES[name.toLowerCase()]!;
    const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16);
    // fromCodePoint throws outside the Unicode range; surrogates and NUL are not text either.
    if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return whole;
    return cp === 0xa0 ? ' ' : String.fromCodePoint(cp);
  });
}

const BLOCK_END = new Set(['div', 'li', 'tr', 'ul', 'ol', 'table', 'blockquote']);
const PARAGRAPH_END = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
const HIDDEN = new Set(['script', 'style', 'head', 'title']);
const TAG_NAME_RE = /^(\/?)\s*([a-zA-Z][a-zA-Z0-9]*)/;
const HREF_RE = /(?:^|\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/i;

/**
 * Plain-text alternative of rendered HTML. A small scanner, not a parser: each character is visited
 * a bounded number of times, so hostile bodies cannot make it slow, and it never throws.
 */
export function htmlToText(html: string): string {
  const out: string[] = [];
  let anchor: { href: string; start: number } | null = null;
  // Once a closing tag is known to be absent, never search for it again (keeps `<script>`×n linear).
  const noCloser = new Set<string>();
  const text = (raw: string) => {
    if (raw) out.push(decodeEntities(raw.replace(/[ \t\r\n\f]+/g, ' ')));
  };
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) { text(html.slice(i)); break; }
    text(html.slice(i, lt));
    const next = html.charCodeAt(lt + 1);
    const isLetter = (next >= 65 && next <= 90) || (next >= 97 && next <= 122);
    // As in browsers, `<` not starting a tag is just text ("1 < 2").
    if (!isLetter && next !== 47 /* / */ && next !== 33 /* ! */ && next !== 63 /* ? */) { out.push('<'); i = lt + 1; continue; }
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end < 0) break;
      i = end + 3;
      continue;
    }
    const gt = html.indexOf('>', lt + 1);
    // No `>` anywhere later means no later tag can close either: the rest is text.
    if (gt < 0) { text(html.slice(lt)); break; }
    i = gt + 1;
    const m = TAG_NAME_RE.exec(html.slice(lt + 1, gt));
    if (!m) continue;
    const closing = m[1] === '/';
    const name = m[2]!.toLowerCase();
    if (!closing && HIDDEN.has(name) && !noCloser.has(name)) {
      const re = new RegExp(`</${name}[\\s/>]`, 'gi');
      re.lastIndex = i;
      const found = re.exec(html);
      if (!found) { noCloser.add(name); continue; }
      const end = html.indexOf('>', found.index);
      i = end < 0 ? html.length : end + 1;
      continue;
    }
    if (name === 'br') out.push('\n');
    else if (name === 'a' && !closing) {
      const h = HREF_RE.exec(html.slice(lt + 2, gt));
      const href = h ? decodeEntities(h[1] ?? h[2] ?? h[3] ?? '').trim() : '';
      anchor = href ? { href, start: out.length } : null;
    } else if (name === 'a' && anchor) {
      const label = out.slice(anchor.start).join('').trim();
      if (!label) out.push(anchor.href);
      else if (label !== anchor.href && `mailto:${label}` !== anchor.href) out.push(` (${anchor.href})`);
      anchor = null;
    } else if (closing && PARAGRAPH_END.has(name)) out.push('\n\n');
    else if (closing && BLOCK_END.has(name)) out.push('\n');
  }
  // Line-by-line tidy-up instead of whitespace regexes over the whole string, which can go quadratic.
  const lines: string[] = [];
  let blanks = 0;
  for (const line of out.join('').split('\n')) {
    const tidy = line.replace(/ {2,}/g, ' ').trim();
    if (!tidy) { blanks++; continue; }
    if (lines.length) lines.push(...(blanks > 0 ? ['', tidy] : [tidy]));
    else lines.push(tidy);
    blanks = 0;
  }
  return lines.join('\n');
}
