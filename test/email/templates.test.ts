// Email templates: placeholder substitution, escaping, defaults, preview values and the text alternative.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BODY_MAX, SUBJECT_MAX, TEMPLATE_KEYS, defaultTemplate, escapeHtml, htmlToText, isTemplateKey,
  placeholdersFor, render, sampleValues, templateLengthError, type TemplateKey, type TemplateValues,
} from '../../src/email/templates.ts';

const VALUES: TemplateValues = {
  link: 'https://x.test/cb?t=1',
  email: 'ann@example.com',
  new_email: 'ann.new@example.com',
  project_name: 'Acme',
};
const ALL_NAMES = ['link', 'email', 'new_email', 'project_name'] as const;
const AVAILABLE: Record<TemplateKey, readonly string[]> = {
  magic_link: ['link', 'email', 'project_name'],
  password_reset: ['link', 'email', 'project_name'],
  email_verification: ['link', 'email', 'project_name'],
  email_change: ['link', 'new_email', 'project_name'],
};
const body = (key: TemplateKey, b: string, v: TemplateValues = VALUES) => render(key, { subject: 's', body: b }, v).html;
const subj = (key: TemplateKey, s: string, v: TemplateValues = VALUES) => render(key, { subject: s, body: '' }, v).subject;

test('keys and placeholdersFor', () => {
  assert.deepEqual([...TEMPLATE_KEYS], ['magic_link', 'password_reset', 'email_verification', 'email_change']);
  for (const k of TEMPLATE_KEYS) {
    assert.ok(isTemplateKey(k));
    assert.deepEqual([...placeholdersFor(k)].sort(), [...AVAILABLE[k]].sort(), k);
  }
  for (const bad of ['', 'MAGIC_LINK', 'magic-link', 'toString', '__proto__', 'magic_link ']) assert.equal(isTemplateKey(bad), false, bad);
});

// Each placeholder, in body and subject, for each key: substituted when available, kept verbatim when not.
for (const key of TEMPLATE_KEYS) {
  for (const name of ALL_NAMES) {
    const available = AVAILABLE[key].includes(name);
    test(`${key}: {{${name}}} ${available ? 'substituted' : 'left as written'}`, () => {
      const expected = available ? VALUES[name]! : `{{${name}}}`;
      assert.equal(body(key, `<p>[{{${name}}}]</p>`), `<p>[${expected}]</p>`);
      assert.equal(subj(key, `S {{${name}}} S`), `S ${expected} S`);
    });
  }
}

test('a missing value for an available placeholder keeps the placeholder visible', () => {
  const v: TemplateValues = { link: 'L', project_name: 'P' };
  assert.equal(body('magic_link', '{{email}}|{{link}}', v), '{{email}}|L');
  assert.equal(body('email_change', '{{new_email}}', v), '{{new_email}}');
});

const ESCAPE_CASES: [string, string, string][] = [
  ['ampersand and angle brackets', 'A & B <x>', 'A &amp; B &lt;x&gt;'],
  ['script tag', '<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
  ['double quote', 'say "hi"', 'say &quot;hi&quot;'],
  ['single quote', 'O\'Brien', 'O&#39;Brien'],
  ['already-escaped text is escaped again', '&amp;', '&amp;amp;'],
  ['attribute breakout', '" onmouseover="x', '&quot; onmouseover=&quot;x'],
  ['plain', 'Acme', 'Acme'],
  ['unicode', 'Café ☕', 'Café ☕'],
];
for (const [label, input, expected] of ESCAPE_CASES) {
  test(`escaping: ${label}`, () => {
    assert.equal(escapeHtml(input), expected);
    const v = { ...VALUES, project_name: input };
    assert.equal(body('magic_link', '<b>{{project_name}}</b>', v), `<b>${expected}</b>`);
    // The spec escapes the subject too, so an `&` shows as `&amp;` there.
    assert.equal(subj('magic_link', '{{project_name}}', v), expected);
  });
}

test('escaping: link value inside href cannot break out of the attribute', () => {
  const v = { ...VALUES, link: 'https://x.test/?a=1&b="><script>' };
  assert.equal(body('magic_link', '<a href="{{link}}">go</a>'), '<a href="https://x.test/cb?t=1">go</a>');
  assert.equal(body('magic_link', '<a href="{{link}}">go</a>', v), '<a href="https://x.test/?a=1&amp;b=&quot;&gt;&lt;script&gt;">go</a>');
});

const SINGLE_PASS: [string, TemplateKey, Partial<TemplateValues>, string, string][] = [
  ['link value holding {{link}}', 'magic_link', { link: 'x{{link}}y' }, '{{link}}', 'x{{link}}y'],
  ['project name holding {{email}}', 'magic_link', { project_name: '{{email}}' }, '{{project_name}} {{email}}', '{{email}} ann@example.com'],
  ['email holding {{project_name}}', 'password_reset', { email: '{{project_name}}@x' }, '{{email}}', '{{project_name}}@x'],
  ['new_email holding {{link}}', 'email_change', { new_email: '{{link}}' }, '{{new_email}}|{{link}}', '{{link}}|https://x.test/cb?t=1'],
  ['adjacent placeholders', 'magic_link', {}, '{{link}}{{link}}', 'https://x.test/cb?t=1https://x.test/cb?t=1'],
  ['value split across placeholders', 'magic_link', { project_name: '{{', email: 'link}}' }, '{{project_name}}{{email}}', '{{link}}'],
];
for (const [label, key, over, tpl, expected] of SINGLE_PASS) {
  test(`single pass: ${label}`, () => assert.equal(body(key, tpl, { ...VALUES, ...over }), expected));
}

// Only the exact `{{name}}` form is a placeholder; everything else is text.
const LITERAL_CASES: [string, string, string][] = [
  ['unknown name', '{{foo}}', '{{foo}}'],
  ['inner spaces', '{{ link }}', '{{ link }}'],
  ['upper case', '{{LINK}}', '{{LINK}}'],
  ['mixed case', '{{Link}}', '{{Link}}'],
  ['missing closing brace', '{{link}', '{{link}'],
  ['missing opening brace', '{link}}', '{link}}'],
  ['single braces', '{link}', '{link}'],
  ['triple braces wrap the value in single braces', '{{{link}}}', '{https://x.test/cb?t=1}'],
  ['quadruple braces', '{{{{link}}}}', '{{https://x.test/cb?t=1}}'],
  ['empty', '{{}}', '{{}}'],
  ['dollar patterns are not special', '$& $1 {{link}} $$', '$& $1 https://x.test/cb?t=1 $$'],
  ['name with digit', '{{link2}}', '{{link2}}'],
  ['prototype names', '{{constructor}} {{__proto__}} {{to_string}}', '{{constructor}} {{__proto__}} {{to_string}}'],
  ['unterminated run', '{{link {{link}}', '{{link https://x.test/cb?t=1'],
];
for (const [label, tpl, expected] of LITERAL_CASES) {
  test(`literal braces: ${label}`, () => assert.equal(body('magic_link', tpl), expected));
}

const SUBJECT_LINES: [string, string, Partial<TemplateValues>, string][] = [
  ['CRLF in template', 'Hello\r\nBcc: x@evil.test', {}, 'Hello Bcc: x@evil.test'],
  ['LF in template', 'a\nb', {}, 'a b'],
  ['lone CR in template', 'a\rb', {}, 'a b'],
  ['CRLF in a value', 'Welcome to {{project_name}}', { project_name: 'Acme\r\nBcc: x@evil.test' }, 'Welcome to Acme Bcc: x@evil.test'],
  ['Unicode line separators', 'a\u2028b\u2029c\u0085d', {}, 'a b c d'],
  ['tabs kept', 'a\tb', {}, 'a\tb'],
];
for (const [label, tpl, over, expected] of SUBJECT_LINES) {
  test(`subject is one line: ${label}`, () => {
    const s = subj('magic_link', tpl, { ...VALUES, ...over });
    assert.equal(s, expected);
    assert.doesNotMatch(s, /[\r\n]/);
  });
}

test('body keeps its line breaks', () => assert.equal(body('magic_link', 'a\r\nb'), 'a\r\nb'));

const EXPIRY: Record<TemplateKey, string> = {
  magic_link: '15 minutes', password_reset: '30 minutes', email_verification: '1 day', email_change: '30 minutes',
};
for (const key of TEMPLATE_KEYS) {
  test(`default ${key}: shape, placeholders and rendering`, () => {
    const t = defaultTemplate(key);
    assert.ok(t.subject.includes('{{project_name}}'));
    assert.ok(t.body.includes('<a href="{{link}}"'));
    assert.ok(t.body.includes('{{project_name}}'));
    assert.ok(t.body.includes(EXPIRY[key]), 'expiry');
    assert.match(t.body, /ignore this email/);
    assert.ok(t.subject.length <= SUBJECT_MAX && t.body.length <= BODY_MAX);
    assert.equal(templateLengthError(t), null);
    // Every placeholder used by a default is available for its key.
    for (const m of `${t.subject} ${t.body}`.matchAll(/\{\{(\w+)\}\}/g)) assert.ok(placeholdersFor(key).includes(m[1]!), m[1]);

    const v = sampleValues(key, 'Acme & Co');
    const r = render(key, t, v);
    for (const name of ALL_NAMES) {
      assert.ok(!r.subject.includes(`{{${name}}}`) && !r.html.includes(`{{${name}}}`), `leftover {{${name}}}`);
    }
    assert.ok(r.subject.includes('Acme &amp; Co'));
    assert.ok(r.html.includes(`<a href="${v.link}"`));
    const who = key === 'email_change' ? v.new_email! : v.email!;
    assert.ok(r.html.includes(who));

    assert.ok(r.text.includes(v.link), 'text has the link');
    assert.ok(r.text.includes('Acme & Co'), 'text decodes entities');
    assert.ok(r.text.includes(who));
    assert.ok(r.text.includes(EXPIRY[key]));
    assert.doesNotMatch(r.text, /[<>]|&amp;|\n{3}/);
    assert.equal(r.text, r.text.trim());
  });
}

test('defaultTemplate returns a fresh copy', () => {
  const a = defaultTemplate('magic_link');
  a.subject = 'changed';
  assert.notEqual(defaultTemplate('magic_link').subject, 'changed');
});

test('default magic_link text reads well', () => {
  const v = sampleValues('magic_link', 'Acme');
  const text = render('magic_link', defaultTemplate('magic_link'), v).text;
  assert.equal(text, [
    'Sign in to Acme',
    '',
    'Use the button below to sign in to Acme as user@example.com.',
    '',
    `Sign in (${v.link})`,
    '',
    'Or copy and paste this link into your browser:',
    v.link,
    '',
    'This link expires in 15 minutes.',
    '',
    'If you didn\'t ask to sign in, you can safely ignore this email.',
  ].join('\n'));
});

for (const key of TEMPLATE_KEYS) {
  test(`sampleValues ${key}`, () => {
    const v = sampleValues(key, 'My "App"');
    assert.equal(v.link, `https://example.com/auth/callback?token=${'0'.repeat(64)}`);
    assert.equal(v.project_name, 'My "App"');
    if (key === 'email_change') assert.equal(v.new_email, 'new.address@example.com');
    else assert.equal(v.email, 'user@example.com');
    for (const name of ALL_NAMES) assert.equal(v[name] !== undefined, AVAILABLE[key].includes(name), name);
  });
}

test('preview of a custom template', () => {
  const r = render('email_change', { subject: '{{project_name}}: confirm {{new_email}}', body: '<p>Go: <a href="{{link}}">here</a> {{email}}</p>' },
    sampleValues('email_change', 'Shop'));
  assert.equal(r.subject, 'Shop: confirm new.address@example.com');
  assert.equal(r.text, `Go: here (https://example.com/auth/callback?token=${'0'.repeat(64)}) {{email}}`);
});

const TEXT_CASES: [string, string, string][] = [
  ['plain text', 'hello', 'hello'],
  ['br', 'a<br>b<br/>c<BR />d', 'a\nb\nc\nd'],
  ['paragraphs', '<p>a</p><p>b</p>', 'a\n\nb'],
  ['divs and list items', '<div>a</div><div>b</div><ul><li>x</li><li>y</li></ul>', 'a\nb\nx\ny'],
  ['headings', '<h1>T</h1><h6>U</h6>v', 'T\n\nU\n\nv'],
  ['link with different label', '<a href="https://x.test">Click</a>', 'Click (https://x.test)'],
  ['link whose label is the url', '<a href="https://x.test">https://x.test</a>', 'https://x.test'],
  ['link with escaped href', '<a href="https://x.test/?a=1&amp;b=2">go</a>', 'go (https://x.test/?a=1&b=2)'],
  ['single-quoted and unquoted href', '<a class=x href=\'/a\'>A</a> <a href=/b>B</a>', 'A (/a) B (/b)'],
  ['link without label', '<a href="https://x.test"><img src="i.png"></a>', 'https://x.test'],
  ['link without href', '<a name="x">anchor</a>', 'anchor'],
  ['mailto link', '<a href="mailto:a@b.test">a@b.test</a>', 'a@b.test'],
  ['nested markup in label', '<a href="/x"><b>Bold</b> text</a>', 'Bold text (/x)'],
  ['entities', '&amp; &lt; &gt; &quot; &#39; &#x27; a&nbsp;b', '& < > " \' \' a b'],
  ['entities decode once', '&amp;lt;', '&lt;'],
  ['unknown and invalid entities kept', '&copy; &#0; &#x110000; &#xD800; &foo', '&copy; &#0; &#x110000; &#xD800; &foo'],
  ['numeric entities', '&#233;&#x263A;', 'é☺'],
  ['source whitespace collapses', '<p>\n   hello\n   world  </p>\n\n\n<p>x</p>', 'hello world\n\nx'],
  ['3+ newlines collapse to 2', 'a<br><br><br><br>b', 'a\n\nb'],
  ['script and style hidden', '<style>p{color:red}</style><script>if (a<b) x()</script>ok', 'ok'],
  ['head and title hidden', '<html><head><title>T</title></head><body>hi</body></html>', 'hi'],
  ['comments hidden', 'a<!-- <p>x</p> -->b', 'ab'],
  ['doctype ignored', '<!DOCTYPE html>x', 'x'],
  ['lone less-than is text', '1 < 2 and 3 > 2', '1 < 2 and 3 > 2'],
  ['unterminated tag is text', 'a <b', 'a <b'],
  ['unclosed script shows its text', '<script>x', 'x'],
  ['unterminated comment drops the rest', 'a<!-- b', 'a'],
  ['empty', '', ''],
  ['only whitespace', ' \n\t ', ''],
  ['stray closing anchor', 'a</a>b', 'ab'],
];
for (const [label, html, expected] of TEXT_CASES) {
  test(`htmlToText: ${label}`, () => assert.equal(htmlToText(html), expected));
}

// Hostile bodies must finish (linear scans) and never throw; no timing assertions on purpose.
const ADVERSARIAL: [string, string][] = [
  ['many <', '<'.repeat(20000)],
  ['many unclosed anchors', '<a href="'.repeat(5000)],
  ['many unclosed anchors then >', `${'<a href="'.repeat(5000)}>`],
  ['many anchors without close', '<a href="x">'.repeat(2000)],
  ['many closing anchors', '</a>'.repeat(5000)],
  ['many unclosed scripts', '<script>'.repeat(2500)],
  ['many closed scripts', '<script></script>'.repeat(1000)],
  ['many comment openers', '<!--'.repeat(5000)],
  ['many ampersands', '&#'.repeat(10000)],
  ['many spaces between tags', ' <b>'.repeat(5000)],
  ['many spaces', ' '.repeat(20000)],
  ['many newlines', '<br>'.repeat(5000)],
  ['many braces', '{{'.repeat(10000)],
  ['long placeholder-like name', `{{${'a'.repeat(19990)}}}`],
  ['many tag openers', '<a'.repeat(10000)],
  ['href spaces', `<a ${'href '.repeat(4000)}>`],
];
for (const [label, input] of ADVERSARIAL) {
  test(`adversarial input completes: ${label}`, () => {
    assert.equal(typeof htmlToText(input), 'string');
    const r = render('magic_link', { subject: input.slice(0, SUBJECT_MAX), body: input }, VALUES);
    assert.equal(typeof r.text, 'string');
    assert.equal(typeof render('magic_link', { subject: 's', body: input.replaceAll('{{', '{{link}}') }, VALUES).text, 'string');
  });
}

test('templateLengthError counts code points', () => {
  assert.equal(SUBJECT_MAX, 200);
  assert.equal(BODY_MAX, 20000);
  assert.equal(templateLengthError({ subject: 'x'.repeat(200), body: 'y'.repeat(20000) }), null);
  assert.deepEqual(templateLengthError({ subject: 'x'.repeat(201), body: '' }), { field: 'subject', max: 200 });
  assert.deepEqual(templateLengthError({ subject: '', body: 'y'.repeat(20001) }), { field: 'body', max: 20000 });
  // 200 emoji are 400 UTF-16 units but 200 characters.
  assert.equal(templateLengthError({ subject: '😀'.repeat(200), body: '' }), null);
});
