// The two tiers of a thread's open project files (sqlite-open-files.ts): the most recently used keep
// their memory, the ones behind them give it back and stay open, the least recently used beyond
// the limit are closed; a file inside a transaction is neither closed nor released.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenFiles } from '../../src/storage/sqlite/sqlite-open-files.ts';

interface Conn {
  id: string;
  pinned?: boolean;
}

function files(limit: number, warm: number) {
  const log: string[] = [];
  const later: (() => void)[] = [];
  const open = new OpenFiles<Conn>({
    limit,
    warm,
    release: (c) => log.push(`release ${c.id}`),
    close: (c) => log.push(`close ${c.id}`),
    pinned: (c) => c.pinned === true,
    later: (fn) => later.push(fn),
  });
  const conns = new Map<string, Conn>();
  const add = (id: string, pinned = false) => {
    const c = { id, pinned };
    conns.set(id, c);
    open.add(id, c);
  };
  /** what happened, the releases due by now included */
  const taken = () => {
    for (const fn of later.splice(0)) fn();
    return log.splice(0);
  };
  return { open, log, later, conns, add, taken };
}

test('[sqlite] the most recently used files stay warm; one that falls behind gives its memory back once and stays open; using it warms it again', () => {
  const { open, add, taken } = files(10, 2);
  add('a');
  add('b');
  assert.deepEqual(taken(), []);
  add('c');
  assert.deepEqual(taken(), ['release a']);
  assert.equal(open.use('b')?.id, 'b');
  assert.deepEqual(taken(), [], 'a warm file used again: nothing released');
  assert.equal(open.use('a')?.id, 'a', 'a released file is still open');
  assert.deepEqual(taken(), ['release c'], 'the least recently used warm file falls behind in its place');
  assert.deepEqual([open.size, open.warmCount], [3, 2]);
  assert.equal(open.use('zzz'), undefined);
});

test('[sqlite] a release waits for the request that displaced the file, and is skipped if the file is used again, closed or inside a transaction by then', () => {
  const { open, add, conns, later, taken } = files(3, 1);
  add('a');
  add('b');
  assert.deepEqual([later.length, open.use('a')?.id], [1, 'a'], 'a is warm again before its release ran');
  assert.deepEqual(taken(), ['release b'], "b fell behind in a's place");
  add('c'); // a falls behind
  conns.get('a')!.pinned = true;
  assert.deepEqual(taken(), []);
  open.use('b'); // c falls behind
  add('d'); // b falls behind; c, the least recently used outside a transaction, is closed
  assert.deepEqual(taken(), ['close c', 'release b']);
});

test('[sqlite] beyond the limit the least recently used file is closed, never one in a transaction nor the one just opened', () => {
  const { open, add, conns, taken } = files(3, 2);
  for (const id of ['a', 'b', 'c']) add(id);
  open.use('a'); // order now b, c, a
  taken();
  add('d');
  assert.deepEqual(taken(), ['close b', 'release c']);
  conns.get('c')!.pinned = true;
  add('e');
  assert.deepEqual(taken(), ['close a'], 'c is inside a transaction: the next least recently used goes');
  add('f');
  assert.deepEqual(taken(), ['close d']);
  assert.deepEqual([open.size, open.peek('c')?.id], [3, 'c']);
  for (const id of ['e', 'f']) conns.get(id)!.pinned = true;
  add('g');
  assert.equal(open.size, 4, 'while every other file is in a transaction, the limit waits');
  assert.deepEqual(taken(), [], 'and no file inside a transaction is released');
  conns.get('c')!.pinned = false;
  add('h');
  assert.deepEqual(taken(), ['close c', 'close g'], 'the least recently used files outside a transaction go, back to the limit');
  assert.equal(open.size, 3);
});

test('[sqlite] peek leaves the order as it is; take and takeAll hand the files to the caller without closing them', () => {
  const { open, add, taken } = files(3, 1);
  for (const id of ['a', 'b', 'c']) add(id);
  taken();
  assert.equal(open.peek('a')?.id, 'a');
  add('d');
  assert.deepEqual(taken(), ['close a', 'release c'], 'a peeked file is still the least recently used');
  assert.equal(open.take('b')?.id, 'b');
  assert.equal(open.take('b'), undefined);
  assert.deepEqual(open.takeAll().map((c) => c.id).sort(), ['c', 'd']);
  assert.deepEqual([open.size, taken()], [0, []]);
  assert.throws(() => new OpenFiles<Conn>({ limit: 1, warm: 0, release() {}, close() {}, pinned: () => false, later: (fn) => fn() }), /at least one warm file/);
});
