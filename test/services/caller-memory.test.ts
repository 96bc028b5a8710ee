// The data plane's memory of resolved credentials: bounded in all, and per project, so that one
// project cycling through credentials evicts its own entries rather than everyone else's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallerMemory } from '../../src/services/caller-memory.ts';

test('a project beyond its share evicts its own oldest entries, never another project\'s', () => {
  const m = new CallerMemory<number>(100, 10);
  for (let i = 0; i < 5; i++) m.set('victim', `c${i}`, i);
  for (let i = 0; i < 1000; i++) m.set('hostile', `c${i}`, i);
  for (let i = 0; i < 5; i++) assert.equal(m.get('victim', `c${i}`), i);
  assert.equal(m.get('hostile', 'c989'), undefined);
  assert.equal(m.get('hostile', 'c990'), 990);
  assert.equal(m.count, 15);
});

test('beyond the capacity, the project resolved least recently loses its oldest entries first', () => {
  const m = new CallerMemory<string>(4, 3);
  m.set('a', 'x', 'a1');
  m.set('a', 'y', 'a2');
  m.set('b', 'x', 'b1');
  m.set('c', 'x', 'c1');
  m.set('c', 'y', 'c2'); // 5 > 4: a (least recent project) loses x
  assert.equal(m.get('a', 'x'), undefined);
  assert.equal(m.get('a', 'y'), 'a2');
  m.set('a', 'z', 'a3'); // a is now the most recent: b goes
  assert.equal(m.get('b', 'x'), undefined);
  assert.deepEqual([m.get('a', 'y'), m.get('a', 'z'), m.get('c', 'x'), m.get('c', 'y')], ['a2', 'a3', 'c1', 'c2']);
  assert.equal(m.count, 4);
});

test('resolving the same credentials again replaces their entry without growing', () => {
  const m = new CallerMemory<number>(10, 10);
  for (let i = 0; i < 50; i++) m.set('p', 'same', i);
  assert.equal(m.get('p', 'same'), 49);
  assert.equal(m.count, 1);
});
