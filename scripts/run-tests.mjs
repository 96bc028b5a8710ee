// Runs every test/**/*.test.ts file with Node's own test runner (TypeScript through tsx).
// Usage: npm test [-- path-filter ...]   e.g. npm test -- policy
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk('test').filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))).sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// supabase-js (test/api/supabase-js.test.ts) needs a global WebSocket when a client is created;
// Node.js 22 has one, Node.js 20 behind this flag
const websocket = Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-websocket'] : [];
const res = spawnSync(
  process.execPath,
  ['--no-node-snapshot', ...websocket, '--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
process.exit(res.status ?? 1);
