// How far V8 lets the old generation grow between full collections. After each one, V8 sets the
// next at the live size times a factor it picks from how fast the program allocates against how
// fast it collects, up to 4x: under load, garbage of the old generation (objects a request kept
// past two young collections) piled up to three times the live heap before it was collected.
// Held at 1.5x (V8's own --heap-growing-percent, set from inside as the young generation's bound
// is, lib/young-generation.ts): 1,000 projects read at random on the embedded engine peaked at
// 194 MiB instead of 248, with the same p50 (0.68 ms) in the same run; 32 clients on one project
// read 3,352-3,560 req/s against 3,522-3,680 without it, within this machine's noise (2026-11-27).
import { setFlagsFromString } from 'node:v8';

export const OLD_GENERATION_GROWTH_PERCENT = 50;

export const growthFlag = (percent: number): string => `--heap-growing-percent=${percent}`;

/** Whether node was started with its own setting (on its command line): then it stands. */
export function growthFlagGiven(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
}

/** Applies to every isolate of the process (the SQLite workers' included), from its next full collection. */
export function boundOldGenerationGrowth(percent = OLD_GENERATION_GROWTH_PERCENT): void {
  setFlagsFromString(growthFlag(percent));
}
