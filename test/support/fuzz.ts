// One seed for every property-based test, so that CI is repeatable: FUZZ_SEED=<n> replays a run,
// FUZZ_SEED=random explores new inputs (the seed is printed so a failure can be replayed).
import fc from 'fast-check';

const DEFAULT_SEED = 20261121;

export function configureFuzz(): number {
  const env = process.env.FUZZ_SEED;
  const seed = env === 'random' ? (Math.random() * 2 ** 31) | 0 : env ? Number(env) : DEFAULT_SEED;
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer or "random", got ${env}`);
  if (env === 'random') console.log(`# FUZZ_SEED=${seed}`);
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });
  return seed;
}
