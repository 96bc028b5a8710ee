// The container: Dockerfile, .dockerignore and compose.yaml. Checked as files everywhere (what the
// stages copy exists and is not ignored, a non-root user, a health check on /health, the settings
// named are the service's own); built and run where a Docker engine and the base images are
// available, and skipped loudly, naming the reason, where they are not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from '../../src/bundles.ts';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  image: string;
  name: string | null;
  steps: Instruction[];
}

/** The Dockerfile's instructions by stage (continuation lines joined, comments dropped). */
function stages(text: string): Stage[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const out: Stage[] = [];
  for (const line of lines) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args!)!;
      out.push({ image: image!, name: name ?? null, steps: [] });
    } else out.at(-1)!.steps.push({ op: op!.toUpperCase(), args: args! });
  }
  return out;
}

/** COPY's flags, sources and destination (exec form or not). */
function copyParts(args: string): { from: string | null; sources: string[]; dest: string } {
  const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null;
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** Every setting the service reads (src/config.ts). */
function configNames(): Set<string> {
  const text = read('src/config.ts');
  const names = new Set<string>();
  for (const m of text.matchAll(/env(?:\.([A-Z][A-Z0-9_]*)|, '([A-Z][A-Z0-9_]*)')/g)) names.add(m[1] ?? m[2]!);
  return names;
}

/** Whether .dockerignore keeps `path` out of the build context (its patterns here: names, dirs, *.ext). */
function ignored(path: string): boolean {
  const patterns = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  return patterns.some((p) => (p.startsWith('*.') ? path.endsWith(p.slice(1)) : path === p || path.startsWith(`${p}/`)));
}

const dockerfile = stages(read('Dockerfile'));
const [build, runtime] = [dockerfile[0]!, dockerfile.at(-1)!];

test('Dockerfile: a build stage and a runtime stage; every file copied from the context exists and is not ignored', () => {
  assert.ok(dockerfile.length >= 2, 'multi-stage');
  assert.equal(build.name, 'build');
  const named = new Set<string>();
  for (const stage of dockerfile) {
    for (const step of stage.steps.filter((s) => s.op === 'COPY' || s.op === 'ADD')) {
      const { from, sources } = copyParts(step.args);
      if (from) {
        assert.ok(named.has(from), `COPY --from=${from}: no such earlier stage`);
        continue;
      }
      for (const src of sources) {
        assert.ok(existsSync(join(ROOT, src)), `${src} does not exist`);
        assert.ok(!ignored(src.replace(/^\.\//, '')), `${src} is excluded by .dockerignore`);
      }
    }
    if (stage.name) named.add(stage.name);
  }
  // npm ci's postinstall needs these in the build stage before it runs
  const copied = build.steps.filter((s) => s.op === 'COPY').flatMap((s) => copyParts(s.args).sources);
  const ci = build.steps.findIndex((s) => s.op === 'RUN' && /\bnpm ci\b/.test(s.args));
  assert.ok(ci > 0, 'the build stage runs npm ci');
  // and what npm ci installs from the context: the workspaces (the console, whose vite the build
  // needs: without it the image served no console) and the file: dependencies
  const pkg = JSON.parse(read('package.json')) as { workspaces?: string[]; dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const local = Object.values({ ...pkg.dependencies, ...pkg.devDependencies }).filter((v) => v.startsWith('file:')).map((v) => v.slice(5).split('/')[0]!);
  const roots = (p: string) => p.replace(/^\.\//, '').split('/')[0]!;
  for (const needed of ['package.json', 'package-lock.json', 'scripts', 'src', 'native', ...(pkg.workspaces ?? []).map(roots), ...local])
    assert.ok(copied.map(roots).includes(needed), `the build stage copies ${needed}`);
  assert.match(build.steps[ci]!.args, /npm prune --omit=dev/);
});

test('Dockerfile runtime stage: what the service needs, a non-root user, a health check on /health, node dist/main.js with the young generation bound, DATA_DIR a volume', () => {
  const copies = runtime.steps.filter((s) => s.op === 'COPY').map((s) => copyParts(s.args));
  assert.ok(copies.every((c) => c.from === build.name), 'the runtime stage takes only what the build stage made');
  const fromBuild = copies.flatMap((c) => c.sources.map((s) => s.replace(/^\/app\//, '')));
  // package.json: dist/ is ES modules ("type": "module"); native/ + build/: the deadline extension and
  // the memory-trim module (src/lib/native-build.ts compares a library with its source)
  for (const needed of ['package.json', 'node_modules', 'dist', 'native', 'build/sqlite-deadline.so', 'build/memory-trim.node']) assert.ok(fromBuild.includes(needed), `runtime stage lacks ${needed}`);
  for (const src of fromBuild) assert.ok(['package.json', 'node_modules', 'dist', 'bin', 'native', 'build'].includes(src.split('/')[0]!), `${src}: not something the build stage has`);
  const user = runtime.steps.filter((s) => s.op === 'USER').at(-1);
  assert.ok(user, 'a USER instruction');
  assert.ok(!['root', '0', '0:0'].includes(user.args.trim()), `USER ${user.args} is root`);
  assert.ok(runtime.steps.indexOf(user) < runtime.steps.findIndex((s) => s.op === 'CMD'), 'USER comes before CMD');
  const health = runtime.steps.find((s) => s.op === 'HEALTHCHECK');
  assert.ok(health, 'a HEALTHCHECK');
  assert.match(health.args, /CMD .*\/health/);
  assert.deepEqual(JSON.parse(runtime.steps.find((s) => s.op === 'CMD')!.args), ['node', 'dist/main.js'], 'as npm start runs it, with no V8 flag');
  const env = Object.fromEntries(runtime.steps.filter((s) => s.op === 'ENV').flatMap((s) => [...s.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])));
  const settings = configNames();
  for (const name of Object.keys(env)) assert.ok(name === 'NODE_ENV' || settings.has(name), `ENV ${name} is not a setting of src/config.ts`);
  assert.deepEqual(JSON.parse(runtime.steps.find((s) => s.op === 'VOLUME')!.args), [env.DATA_DIR]);
  assert.equal(runtime.steps.find((s) => s.op === 'EXPOSE')!.args, env.PORT);
});

test('compose.yaml parses, builds the Dockerfile, waits for a healthy PostgreSQL, and sets only settings the service reads', () => {
  const compose = parseYaml(read('compose.yaml'));
  const { baseplate, postgres } = compose.services;
  assert.equal(baseplate.build.dockerfile, 'Dockerfile');
  assert.ok(existsSync(join(ROOT, baseplate.build.context, baseplate.build.dockerfile)));
  assert.deepEqual(baseplate.depends_on, { postgres: { condition: 'service_healthy' } });
  assert.ok(postgres.healthcheck?.test, 'PostgreSQL has a health check');
  assert.match(postgres.image, /^postgres:\d+/);
  const settings = configNames();
  for (const name of Object.keys(baseplate.environment)) assert.ok(settings.has(name), `${name} is not a setting of src/config.ts`);
  // the URL names the compose service, its user and database; the key and password come from .env
  const url = new URL(baseplate.environment.DATABASE_URL.replace(/\$\{[^}]+\}/g, 'x'));
  assert.deepEqual([url.hostname, url.username, url.pathname], ['postgres', postgres.environment.POSTGRES_USER, `/${postgres.environment.POSTGRES_DB}`]);
  assert.match(baseplate.environment.MASTER_KEY, /^\$\{MASTER_KEY:\?/);
  assert.match(postgres.environment.POSTGRES_PASSWORD, /^\$\{POSTGRES_PASSWORD:\?/);
  assert.ok(baseplate.ports.includes(`${baseplate.environment.PORT}:${baseplate.environment.PORT}`));
  assert.ok(read('.gitignore').split('\n').includes('.env'), '.env (the secrets) is never committed');
  assert.ok(ignored('.env'), '.env is not sent to the image build');
});

/** Why the image cannot be built here, or null when it can. */
function dockerUnavailable(): string | null {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20000 });
  if (info.error) return `no docker client (${info.error.message})`;
  if (info.status !== 0) return `no Docker engine answers (${(info.stderr || info.stdout).trim().split('\n')[0]})`;
  for (const image of new Set(dockerfile.map((s) => s.image))) {
    if (spawnSync('docker', ['image', 'inspect', image], { timeout: 20000 }).status === 0) continue;
    const pulled = spawnSync('docker', ['pull', image], { encoding: 'utf8', timeout: 600000 });
    if (pulled.status !== 0) return `base image ${image} is not available (${(pulled.stderr || '').trim().split('\n').at(-1)})`;
  }
  return null;
}

const unavailable = dockerUnavailable();
if (unavailable) process.stderr.write(`\n!!! WARNING: ${unavailable}: the Docker image build test is SKIPPED !!!\n\n`);

test('docker build: the image builds, runs as a non-root user with a health check, and its baseplate command answers', { skip: unavailable ?? false, timeout: 1800000 }, () => {
  const tag = `baseplate-test:${randomBytes(4).toString('hex')}`;
  try {
    const built = spawnSync('docker', ['build', '-t', tag, '.'], { cwd: ROOT, encoding: 'utf8', timeout: 1500000, maxBuffer: 64 * 1024 * 1024 });
    assert.equal(built.status, 0, built.stderr.slice(-4000));
    const config = JSON.parse(spawnSync('docker', ['image', 'inspect', tag], { encoding: 'utf8' }).stdout)[0].Config;
    assert.equal(config.User, 'node');
    assert.ok(config.Healthcheck?.Test?.join(' ').includes('/health'));
    const version = spawnSync('docker', ['run', '--rm', tag, 'baseplate', 'version'], { encoding: 'utf8', timeout: 120000 });
    assert.equal(version.stdout, `${JSON.parse(read('package.json')).version}\n`, version.stderr);
  } finally {
    spawnSync('docker', ['image', 'rm', '-f', tag]);
  }
});
