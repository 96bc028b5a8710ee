// The idle collection's schedule, with Node's mocked timers: collections only after a quiet spell,
// repeated a tick apart until the young generation shrinks (at most 10), again after new activity.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { idleCollection } from '../../src/lib/idle-collection.ts';

function harness(quietMs: number, tickMs: number, shrinkOn: number) {
  let young = 32;
  let collections = 0;
  let settled = 0;
  const idle = idleCollection(quietMs, {
    tickMs,
    youngBytes: () => young,
    collect: () => {
      collections++;
      if (collections >= shrinkOn) young = 2; // V8 gave the young generation back
    },
    settled: () => void settled++,
  });
  return { idle, count: () => collections, settled: () => settled };
}

test('no collection while requests keep coming; one after the quiet spell when it shrinks the young generation', () => {
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const { idle, count } = harness(5000, 1000, 1);
    for (let i = 0; i < 20; i++) {
      idle.touch();
      mock.timers.tick(1000);
    }
    assert.equal(count(), 0, 'a request every second: never quiet');
    mock.timers.tick(4000);
    assert.equal(count(), 0, 'quiet for 4 s of 5');
    mock.timers.tick(1000);
    assert.equal(count(), 1);
    mock.timers.tick(60_000);
    assert.equal(count(), 1, 'shrunk: nothing more until the next request');
    idle.touch();
    mock.timers.tick(1000);
    mock.timers.tick(5000);
    assert.equal(count(), 2, 'a new quiet spell after a request: one more');
    idle.stop();
  } finally {
    mock.timers.reset();
  }
});

test('a collection that leaves the young generation as it was is tried again a tick later, at most 10 times a spell', () => {
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const shrinks = harness(2000, 1000, 4);
    mock.timers.tick(2000);
    assert.equal(shrinks.count(), 1);
    mock.timers.tick(10_000);
    assert.equal(shrinks.count(), 4, 'the fourth collection shrank it: no fifth');
    shrinks.idle.stop();

    const never = harness(2000, 1000, Infinity);
    mock.timers.tick(60_000);
    assert.equal(never.count(), 10, 'ten attempts, then none until activity');
    never.idle.touch();
    mock.timers.tick(1000);
    mock.timers.tick(2000);
    assert.equal(never.count(), 11);
    never.idle.stop();
  } finally {
    mock.timers.reset();
  }
});

test('each quiet spell settles once, after its collections: when the young generation shrank, or after the last attempt', () => {
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const shrinks = harness(5000, 1000, 2);
    mock.timers.tick(5000);
    assert.deepEqual([shrinks.count(), shrinks.settled()], [1, 0], 'one collection, not shrunk yet');
    mock.timers.tick(1000);
    assert.deepEqual([shrinks.count(), shrinks.settled()], [2, 0], 'the second shrinks it, seen at the next tick');
    mock.timers.tick(1000);
    assert.deepEqual([shrinks.count(), shrinks.settled()], [2, 1], 'shrunk: settled');
    mock.timers.tick(60_000);
    assert.equal(shrinks.settled(), 1, 'once per spell');
    shrinks.idle.stop();
    const never = harness(5000, 1000, Infinity);
    mock.timers.tick(60_000);
    assert.deepEqual([never.count(), never.settled()], [10, 1], 'the attempts ran out: settled once');
    never.idle.touch();
    mock.timers.tick(60_000);
    assert.equal(never.settled(), 2, 'and again after the next quiet spell');
    never.idle.stop();
  } finally {
    mock.timers.reset();
  }
});
