// A bound on V8's young generation, set from inside the process. Under load V8 doubles the two
// semi-spaces of the young generation, 1 MiB each at first, up to 16 MiB each: 32 MiB resident
// while requests keep coming, for objects that mostly die within the request. Measured on this
// service (2026-11-27, 32 clients, two servers side by side): semi-spaces held at 4 MiB served the
// same reads per second (0.997x) with a peak RSS 57 MiB lower; at 2 MiB, 9% fewer.
// `--max-semi-space-size` would say it, but V8 reads it only when the process starts, and the
// service must behave the same however it is started (`npm start`, `node dist/main.js`, a
// container). The growth factor, though, is read at each growth: so growth is turned off once the
// bound is reached, and on again when a full collection has shrunk the young generation (an idle
// service's, lib/idle-collection.ts).
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';

/** V8's default growth: each growth doubles the semi-spaces */
const GROWTH_FACTOR = 2;

/** The young generation's memory: its two semi-spaces, or one while V8 has the other uncommitted. */
export const youngGenerationBytes = (): number => newSpace()?.space_size ?? 0;

const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');

/** The capacity of one semi-space: 1 MiB less a page header at first, then doubled at each growth. */
function semiSpaceBytes(): number {
  const s = newSpace();
  return s ? s.space_used_size + s.space_available_size : 0;
}

export interface YoungGenerationBound {
  stop(): void;
}

/**
 * Holds each semi-space at `semiSpaceMiB` (a power of two from 1 MiB: V8 grows them by doubling),
 * checked after every collection. One growth may slip past between a collection and its check, when
 * several collections run within one task; the next check stops the rest.
 */
export function boundYoungGeneration(semiSpaceMiB: number): YoungGenerationBound {
  // grown to the bound, a semi-space is the bound less its pages' headers: the middle between two
  // steps tells one grown to it from one a step below
  const below = 0.75 * semiSpaceMiB * 1024 * 1024;
  let growing = true;
  const check = () => {
    const grow = semiSpaceBytes() < below;
    if (grow === growing) return;
    growing = grow;
    setFlagsFromString(`--semi-space-growth-factor=${grow ? GROWTH_FACTOR : 1}`);
  };
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  return {
    stop: () => {
      observer.disconnect();
      if (!growing) setFlagsFromString(`--semi-space-growth-factor=${GROWTH_FACTOR}`);
    },
  };
}
