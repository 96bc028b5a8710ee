// SecretBox sealing, MASTER_KEY parsing and the embedded-default key file.
import { test, describe, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SecretBox, SecretBoxError, parseMasterKey, loadMasterKey } from '../../src/lib/secret-box.ts';

const KEY = randomBytes(32);
const KEY_HEX = KEY.toString('hex');
const CTX = 'proj_a:smtp_password';
const SECRET = 'hunter2-very-secret-smtp-password';
const box = new SecretBox(KEY);
const isWindows = process.platform === 'win32';

function parts(sealed: string): Buffer[] {
  return sealed.split('.').slice(1).map((p) => Buffer.from(p, 'base64url'));
}
function assemble(iv: Buffer, body: Buffer, tag: Buffer, version = 'v1'): string {
  return [version, iv.toString('base64url'), body.toString('base64url'), tag.toString('base64url')].join('.');
}
function flip(buf: Buffer, index: number): Buffer {
  const copy = Buffer.from(buf);
  copy[index] = copy[index]! ^ 0x01;
  return copy;
}
/** Asserts a SecretBoxError whose message leaks none of the secrets. */
function assertSealedRejected(fn: () => unknown, leaks: string[] = []): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SecretBoxError, `expected SecretBoxError, got ${String(err)}`);
    assert.equal(err.name, 'SecretBoxError');
    for (const s of [SECRET, KEY_HEX, KEY.toString('base64'), ...leaks]) assert.ok(!err.message.includes(s), 'message leaks a secret');
    return true;
  });
}

describe('SecretBox', () => {
  test('round trips ordinary, empty, unicode and 10 KB plaintexts', () => {
    for (const pt of [SECRET, '', 'pässwörd 🔑 日本語 \u0000 tail', 'x'.repeat(10 * 1024)]) {
      assert.equal(box.open(box.seal(pt, CTX), CTX), pt);
    }
  });

  test('output is versioned compact ASCII: v1.<16>.<body>.<22>', () => {
    const sealed = box.seal(SECRET, CTX);
    assert.match(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    const [iv, body, tag] = parts(sealed);
    assert.equal(iv!.length, 12);
    assert.equal(tag!.length, 16);
    assert.equal(body!.length, Buffer.byteLength(SECRET));
    assert.ok(!sealed.includes(SECRET));
  });

  test('two seals of the same text differ (fresh IV)', () => {
    const a = box.seal(SECRET, CTX);
    const b = box.seal(SECRET, CTX);
    assert.notEqual(a, b);
    assert.notEqual(a.split('.')[1], b.split('.')[1]);
  });

  test('a box built from a copy of the key opens the same ciphertexts', () => {
    assert.equal(new SecretBox(Buffer.from(KEY)).open(box.seal(SECRET, CTX), CTX), SECRET);
  });

  test('mutating the caller key buffer after construction has no effect', () => {
    const k = Buffer.from(KEY);
    const b = new SecretBox(k);
    k.fill(0);
    assert.equal(b.open(box.seal(SECRET, CTX), CTX), SECRET);
  });

  test('the key is not visible through inspection or JSON', async () => {
    const { inspect } = await import('node:util');
    for (const text of [inspect(box, { showHidden: true, depth: 5 }), JSON.stringify(box)]) {
      assert.ok(!text.includes(KEY_HEX));
    }
  });

  test('wrong key -> SecretBoxError', () => {
    assertSealedRejected(() => new SecretBox(randomBytes(32)).open(box.seal(SECRET, CTX), CTX));
  });

  test('wrong context (other project, other field) -> SecretBoxError', () => {
    const sealed = box.seal(SECRET, CTX);
    assertSealedRejected(() => box.open(sealed, 'proj_b:smtp_password'), [sealed]);
    assertSealedRejected(() => box.open(sealed, 'proj_a:email_api_key'), [sealed]);
  });

  test('flipped bit in the IV -> SecretBoxError', () => {
    const [iv, body, tag] = parts(box.seal(SECRET, CTX));
    assertSealedRejected(() => box.open(assemble(flip(iv!, 0), body!, tag!), CTX));
  });

  test('flipped bit in the ciphertext -> SecretBoxError', () => {
    const [iv, body, tag] = parts(box.seal(SECRET, CTX));
    assertSealedRejected(() => box.open(assemble(iv!, flip(body!, 5), tag!), CTX));
  });

  test('flipped bit in the tag -> SecretBoxError', () => {
    const [iv, body, tag] = parts(box.seal(SECRET, CTX));
    assertSealedRejected(() => box.open(assemble(iv!, body!, flip(tag!, 15)), CTX));
  });

  test('truncated tag (12 and 4 bytes) and over-long tag -> SecretBoxError', () => {
    const [iv, body, tag] = parts(box.seal(SECRET, CTX));
    for (const t of [tag!.subarray(0, 12), tag!.subarray(0, 4), Buffer.alloc(0), Buffer.concat([tag!, Buffer.from([0])])]) {
      assertSealedRejected(() => box.open(assemble(iv!, body!, t), CTX));
    }
  });

  test('truncated ciphertext -> SecretBoxError', () => {
    const [iv, body, tag] = parts(box.seal(SECRET, CTX));
    assertSealedRejected(() => box.open(assemble(iv!, body!.subarray(1), tag!), CTX));
  });

  test('wrong or missing version -> SecretBoxError mentioning version', () => {
    const rest = box.seal(SECRET, CTX).slice(2);
    for (const v of ['v2', 'V1', 'v0', '']) {
      assert.throws(() => box.open(v + rest, CTX), (err: unknown) => err instanceof SecretBoxError && /version/.test(err.message));
    }
  });

  test('garbage, empty string and non-string inputs -> SecretBoxError', () => {
    for (const g of ['', 'garbage', 'v1', 'v1.', 'v1...', 'v1.a.b.c', 'v1.!!!.???.***', SECRET, 'v1.x.y.z.w']) {
      assertSealedRejected(() => box.open(g, CTX));
    }
    assertSealedRejected(() => box.open(undefined as unknown as string, CTX));
    assertSealedRejected(() => box.open(42 as unknown as string, CTX));
  });

  test('extra part or standard-base64 characters -> SecretBoxError', () => {
    const sealed = box.seal(SECRET, CTX);
    assertSealedRejected(() => box.open(`${sealed}.AAAA`, CTX));
    const segs = sealed.split('.');
    segs[2] = `+${segs[2]!.slice(1)}`;
    assertSealedRejected(() => box.open(segs.join('.'), CTX));
  });

  test('non-canonical base64url spelling of the tag is rejected', () => {
    const sealed = box.seal(SECRET, CTX);
    const segs = sealed.split('.');
    const tag = segs[3]!;
    // The last of 22 chars carries 4 unused bits; setting one yields the same bytes, a different string.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(tag.at(-1)!);
    segs[3] = tag.slice(0, -1) + alphabet[last | 1];
    assert.deepEqual(Buffer.from(segs[3], 'base64url'), Buffer.from(tag, 'base64url'));
    assertSealedRejected(() => box.open(segs.join('.'), CTX));
  });

  test('sealed strings over 64 KiB are rejected before decoding', () => {
    assertSealedRejected(() => box.open(`v1.${'A'.repeat(64 * 1024)}`, CTX));
    assert.throws(() => box.open('v1.' + 'A'.repeat(64 * 1024), CTX), /too long/);
  });

  test('seal refuses plaintexts whose sealed form would exceed the open limit', () => {
    assert.throws(() => box.seal('x'.repeat(60 * 1024), CTX), SecretBoxError);
    const big = 'y'.repeat(40 * 1024);
    assert.equal(box.open(box.seal(big, CTX), CTX), big);
  });

  test('seal rejects lone surrogates rather than silently altering them', () => {
    assert.throws(() => box.seal('a\uD800b', CTX), TypeError);
    assert.equal(box.open(box.seal('\uD83D\uDD11', CTX), CTX), '\uD83D\uDD11');
  });

  test('empty context is a programming error on seal and open', () => {
    assert.throws(() => box.seal(SECRET, ''), TypeError);
    assert.throws(() => box.open(box.seal(SECRET, CTX), ''), TypeError);
  });

  test('constructor rejects keys that are not exactly 32 bytes', () => {
    for (const k of [randomBytes(31), randomBytes(33), Buffer.alloc(0), KEY_HEX as unknown as Buffer]) {
      assert.throws(() => new SecretBox(k), (err: unknown) => err instanceof TypeError && !err.message.includes(KEY_HEX));
    }
  });
});

describe('parseMasterKey', () => {
  function assertRejected(value: string): void {
    assert.throws(() => parseMasterKey(value), (err: unknown) => {
      assert.ok(err instanceof Error);
      assert.match(err.message, /64 hex characters/);
      if (value.trim().length >= 4) assert.ok(!err.message.includes(value.trim()), 'message echoes the value');
      return true;
    });
  }

  test('accepts 64 hex characters in either case', () => {
    assert.deepEqual(parseMasterKey(KEY_HEX), KEY);
    assert.deepEqual(parseMasterKey(KEY_HEX.toUpperCase()), KEY);
  });

  test('accepts base64 with and without padding', () => {
    const b64 = KEY.toString('base64');
    assert.equal(b64.length, 44);
    assert.deepEqual(parseMasterKey(b64), KEY);
    assert.deepEqual(parseMasterKey(b64.replace(/=$/, '')), KEY);
  });

  test('accepts base64url with and without padding', () => {
    const k = Buffer.alloc(32, 0xfb); // forces '-' / '_' characters
    const url = k.toString('base64url');
    assert.match(url, /[-_]/);
    assert.deepEqual(parseMasterKey(url), k);
    assert.deepEqual(parseMasterKey(`${url}=`), k);
    assert.deepEqual(parseMasterKey(k.toString('base64')), k);
  });

  test('trims surrounding whitespace (e.g. a trailing newline from a secrets file)', () => {
    assert.deepEqual(parseMasterKey(`  ${KEY_HEX}\n`), KEY);
    assert.deepEqual(parseMasterKey(`\t${KEY.toString('base64')}\r\n`), KEY);
  });

  test('rejects 31 and 33 bytes in hex and base64', () => {
    for (const n of [31, 33]) {
      const k = randomBytes(n);
      assertRejected(k.toString('hex'));
      assertRejected(k.toString('base64'));
      assertRejected(k.toString('base64url'));
    }
  });

  test('rejects 64 non-hex characters even though they are valid base64 text', () => {
    assertRejected('g'.repeat(64));
    assertRejected(`${KEY_HEX.slice(0, 63)}z`);
  });

  test('rejects inner whitespace, mixed alphabets, bad padding and empty input', () => {
    assertRejected(`${KEY_HEX.slice(0, 32)} ${KEY_HEX.slice(32)}`);
    const b64 = Buffer.alloc(32, 0xfb).toString('base64');
    assertRejected(b64.replace('/', '_'));
    assertRejected(`${b64}=`);
    assertRejected('');
    assertRejected('   ');
  });

  test('error message explains the format and never echoes the value', () => {
    const value = `${KEY_HEX}ff`;
    assert.throws(() => parseMasterKey(value), (err: unknown) => {
      assert.ok(err instanceof Error);
      assert.match(err.message, /MASTER_KEY/);
      assert.match(err.message, /base64/);
      assert.ok(!err.message.includes(KEY_HEX.slice(0, 16)));
      return true;
    });
  });
});

describe('loadMasterKey', () => {
  const dirs: string[] = [];
  function tempDir(): string {
    const d = mkdtempSync(join(tmpdir(), 'secret-box-'));
    dirs.push(d);
    return d;
  }
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  function load(dataDir: string, env?: string, engine: 'sqlite' | 'postgres' = 'sqlite') {
    const warnings: string[] = [];
    const res = loadMasterKey({ env, engine, dataDir, warn: (m) => warnings.push(m) });
    return { ...res, warnings };
  }

  test('generates a key file with mode 0600 and warns exactly once', () => {
    const dir = tempDir();
    const r = load(dir);
    assert.equal(r.origin, 'generated');
    assert.equal(r.key.length, 32);
    const file = join(dir, 'master.key');
    assert.equal(readFileSync(file, 'utf8').trim(), r.key.toString('hex'));
    if (!isWindows) assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(r.warnings.length, 1);
    assert.ok(r.warnings[0]!.includes(file), 'warning says where');
    assert.match(r.warnings[0]!, /back.*up/i);
    assert.match(r.warnings[0]!, /unreadable/);
    assert.ok(!r.warnings[0]!.includes(r.key.toString('hex')), 'warning must not contain the key');
    assert.deepEqual(readdirSync(dir), ['master.key'], 'no temp files left behind');
  });

  test('a second call reads the same key without warning', () => {
    const dir = tempDir();
    const first = load(dir);
    const second = load(dir);
    assert.equal(second.origin, 'file');
    assert.deepEqual(second.key, first.key);
    assert.equal(second.warnings.length, 0);
  });

  test('env wins over an existing file and does not touch it', () => {
    const dir = tempDir();
    const generated = load(dir);
    const r = load(dir, KEY_HEX);
    assert.equal(r.origin, 'env');
    assert.deepEqual(r.key, KEY);
    assert.equal(r.warnings.length, 0);
    assert.equal(readFileSync(join(dir, 'master.key'), 'utf8').trim(), generated.key.toString('hex'));
  });

  test('env set with sqlite creates no file', () => {
    const dir = tempDir();
    assert.equal(load(dir, KEY.toString('base64')).origin, 'env');
    assert.equal(existsSync(join(dir, 'master.key')), false);
  });

  test('empty or blank env counts as unset', () => {
    assert.equal(load(tempDir(), '').origin, 'generated');
    assert.equal(load(tempDir(), '  ').origin, 'generated');
  });

  test('invalid env throws without echoing the value', () => {
    const bad = 'not-a-real-key-but-a-secret-anyway';
    assert.throws(() => load(tempDir(), bad), (err: unknown) => err instanceof Error && !err.message.includes(bad));
  });

  test('postgres without MASTER_KEY throws a clear error and writes nothing', () => {
    const dir = tempDir();
    for (const env of [undefined, '']) {
      assert.throws(() => load(dir, env, 'postgres'), /MASTER_KEY is required with PostgreSQL/);
    }
    assert.deepEqual(readdirSync(dir), []);
  });

  test('postgres with MASTER_KEY uses it', () => {
    const r = load(tempDir(), KEY_HEX, 'postgres');
    assert.equal(r.origin, 'env');
    assert.deepEqual(r.key, KEY);
  });

  test('corrupted key file throws a clear error without its contents', () => {
    const dir = tempDir();
    const file = join(dir, 'master.key');
    for (const content of ['oops', `${KEY_HEX.slice(0, 62)}\n`, `${KEY_HEX}00`, '', 'z'.repeat(5000)]) {
      writeFileSync(file, content, { mode: 0o600 });
      assert.throws(() => load(dir), (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, /corrupt/);
        assert.ok(err.message.includes(file));
        if (content.length > 8) assert.ok(!err.message.includes(content.trim().slice(0, 16)));
        return true;
      });
    }
  });

  test('a hand-written key file with surrounding whitespace and upper case is accepted', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'master.key'), `\n${KEY_HEX.toUpperCase()}  \n`, { mode: 0o600 });
    const r = load(dir);
    assert.equal(r.origin, 'file');
    assert.deepEqual(r.key, KEY);
  });

  test('a directory at the key path is rejected as not a regular file', { skip: isWindows }, () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'master.key'));
    assert.throws(() => load(dir), /not a regular file/);
  });

  test('a group/other-readable key file is tightened to 0600 with a warning', { skip: isWindows }, () => {
    const dir = tempDir();
    const file = join(dir, 'master.key');
    writeFileSync(file, KEY_HEX);
    chmodSync(file, 0o644);
    const r = load(dir);
    assert.deepEqual(r.key, KEY);
    assert.equal(r.origin, 'file');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(r.warnings.length, 1);
    assert.match(r.warnings[0]!, /0600/);
  });

  test('a data dir that does not exist yet is created', () => {
    const dir = join(tempDir(), 'nested', 'data');
    const r = load(dir);
    assert.equal(r.origin, 'generated');
    assert.ok(statSync(dir).isDirectory());
    assert.ok(existsSync(join(dir, 'master.key')));
  });

  test('concurrent processes agree on one key and only one generates it', async () => {
    const dir = tempDir();
    const mod = fileURLToPath(new URL('../../src/lib/secret-box.ts', import.meta.url));
    const script =
      `const { loadMasterKey } = await import(${JSON.stringify(mod)});` +
      `const r = loadMasterKey({ env: undefined, engine: 'sqlite', dataDir: ${JSON.stringify(dir)}, warn: () => {} });` +
      `process.stdout.write(r.origin + ' ' + r.key.toString('hex'));`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}`))));
      });
    const results = (await Promise.all([run(), run(), run(), run()])).map((s) => s.split(' '));
    assert.equal(new Set(results.map(([, hex]) => hex)).size, 1);
    assert.equal(results.filter(([origin]) => origin === 'generated').length, 1);
    assert.deepEqual(readdirSync(dir), ['master.key']);
  });
});
