// The redirect_url rules of SPEC 4.6: identical scheme, host and port; path equal or below on a
// segment boundary; no wildcards; everything judged after URL normalisation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkWithToken, matchesEntry, parseHttpUrl } from '../../src/lib/redirect-url.ts';

const MATCH: Array<[string, string, boolean]> = [
  // [entry, requested, matches]
  ['https://app.example.com', 'https://app.example.com', true],
  ['https://app.example.com', 'https://app.example.com/', true],
  ['https://app.example.com', 'https://app.example.com/any/path?x=1', true],
  ['https://app.example.com/auth', 'https://app.example.com/auth', true],
  ['https://app.example.com/auth', 'https://app.example.com/auth/', true],
  ['https://app.example.com/auth', 'https://app.example.com/auth/callback', true],
  ['https://app.example.com/auth', 'https://app.example.com/auth/callback?next=%2Fhome#top', true],
  ['https://app.example.com/auth/', 'https://app.example.com/auth/callback', true],
  ['https://app.example.com/auth/', 'https://app.example.com/auth', false],
  ['https://app.example.com/auth', 'https://app.example.com/authx', false],
  ['https://app.example.com/auth', 'https://app.example.com/auth-callback', false],
  ['https://app.example.com/auth', 'https://app.example.com/other', false],
  ['https://app.example.com/auth', 'https://app.example.com/', false],
  ['https://app.example.com/auth', 'https://app.example.com/auth/../admin', false],
  ['https://app.example.com/auth', 'https://app.example.com/auth/%2e%2e/admin', false],
  ['https://app.example.com/auth', 'https://app.example.com/auth/..%2fadmin', true], // an encoded slash stays inside the segment
  ['https://app.example.com/auth', 'https://app.example.com\\auth\\callback', true], // browsers read \ as /
  ['https://app.example.com/auth', 'https://APP.EXAMPLE.COM/auth/x', true],
  ['https://app.example.com/auth', 'https://app.example.com/AUTH/x', false],
  ['https://app.example.com', 'http://app.example.com', false],
  ['http://app.example.com', 'https://app.example.com', false],
  ['https://app.example.com', 'https://app.example.com:443/x', true],
  ['https://app.example.com', 'https://app.example.com:8443/x', false],
  ['https://app.example.com:8443', 'https://app.example.com:8443/x', true],
  ['https://app.example.com:8443', 'https://app.example.com/x', false],
  ['http://localhost:3000', 'http://localhost:3000/cb', true],
  ['http://localhost:3000', 'http://localhost:3001/cb', false],
  ['https://app.example.com', 'https://app.example.com.evil.com/', false],
  ['https://app.example.com', 'https://evil.com/app.example.com', false],
  ['https://app.example.com', 'https://evilapp.example.com/', false],
  ['https://example.com', 'https://app.example.com/', false],
  ['https://app.example.com', 'https://app.example.com./', false],
  ['https://app.example.com', 'https://app.example.com@evil.com/', false],
  ['https://[::1]:8080/x', 'https://[::1]:8080/x/y', true],
  ['https://xn--bcher-kva.example', 'https://bücher.example/x', true],
];

for (const [entry, requested, expected] of MATCH) {
  test(`${requested} ${expected ? 'matches' : 'does not match'} ${entry}`, () => {
    const e = parseHttpUrl(entry, { allowQuery: false });
    assert.ok(e instanceof URL, `entry ${entry}: ${String(e)}`);
    const r = parseHttpUrl(requested, { allowQuery: true });
    if (!(r instanceof URL)) {
      assert.equal(expected, false, `requested ${requested} was refused: ${r}`);
      return;
    }
    assert.equal(matchesEntry(r, e), expected);
  });
}

const PARSE: Array<[string, boolean, string]> = [
  // [text, allowQuery, expected problem or 'ok']
  ['https://a.example.com/x', false, 'ok'],
  ['https://a.example.com/x?y=1', false, 'query_or_fragment'],
  ['https://a.example.com/x#frag', false, 'query_or_fragment'],
  ['https://a.example.com/x?y=1#z', true, 'ok'],
  ['ftp://a.example.com/', false, 'not_http'],
  ['javascript:alert(1)', true, 'not_http'],
  ['data:text/html,<script>', true, 'not_http'],
  ['file:///etc/passwd', true, 'not_http'],
  ['//a.example.com/x', true, 'not_a_url'],
  ['/relative/path', true, 'not_a_url'],
  ['a.example.com', true, 'not_a_url'],
  ['', true, 'not_a_url'],
  ['https://', true, 'not_a_url'],
  ['https://user:pass@a.example.com/', true, 'credentials'],
  ['https://user@a.example.com/', true, 'credentials'],
  [`https://a.example.com/${'x'.repeat(2100)}`, true, 'too_long'],
  ["https://a.example.com/'; DROP TABLE users; --", true, 'ok'],
];
for (const [text, allowQuery, expected] of PARSE) {
  test(`parseHttpUrl(${JSON.stringify(text.slice(0, 50))}, allowQuery=${allowQuery}) -> ${expected}`, () => {
    const r = parseHttpUrl(text, { allowQuery });
    assert.equal(r instanceof URL ? 'ok' : r, expected);
  });
}

test('linkWithToken adds token to the query, keeping other parameters and the fragment', () => {
  const t = 'ab'.repeat(32);
  assert.equal(linkWithToken('https://a.example.com/cb', t), `https://a.example.com/cb?token=${t}`);
  assert.equal(linkWithToken('https://a.example.com/cb?next=%2Fhome', t), `https://a.example.com/cb?next=%2Fhome&token=${t}`);
  assert.equal(linkWithToken('https://a.example.com/cb?token=evil', t), `https://a.example.com/cb?token=${t}`);
  assert.equal(linkWithToken('https://a.example.com/#/cb', t), `https://a.example.com/?token=${t}#/cb`);
});
