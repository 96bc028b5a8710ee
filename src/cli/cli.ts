// The `baseplate` command (bin/baseplate.mjs runs its bundle, dist/cli.js): serve, migrate, backup,
// restore, version. Besides main.ts, the one file that reads process.env: every command takes its
// settings from the service's environment variables (src/config.ts), validated before it touches
// anything. Exit codes: 0 done; 1 failed, with one line on stderr saying why; 2 a usage error
// (unknown command or flag, missing or extra argument), with the usage on stderr.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.ts';
import { ROOT } from '../bundles.ts';
import { withoutPassword } from '../lib/database-target.ts';
import type { CommandContext } from './manifest.ts';

interface Command {
  args: string[];
  summary: string;
  details: string;
  force?: boolean;
  run(args: string[], force: boolean, ctx: CommandContext): Promise<string | undefined>;
}

const config = () => loadConfig(process.env);

const COMMANDS: Record<string, Command> = {
  serve: {
    args: [],
    summary: 'run the service (what npm start runs)',
    details: 'Listens on HOST:PORT with the embedded engine in DATA_DIR, or on PostgreSQL when DATABASE_URL is set.\nMigrations run at start. SIGTERM or SIGINT stops it.',
    // main.ts is the service's composition root: importing it starts the service
    run: async () => void (await import('../main.ts')),
  },
  migrate: {
    args: [],
    summary: 'bring the database schema up to date, then exit',
    details: 'Opens the database named by DATABASE_URL (or DATA_DIR), applies the platform migrations and\nthose of every project store, and exits.',
    run: async () => (await import('./migrate.ts')).migrateDatabase(config()),
  },
  backup: {
    args: ['<dir>'],
    summary: 'copy the embedded engine\'s data into <dir>, while the server runs',
    details:
      'Writes a consistent copy of every database file of DATA_DIR (platform.db, projects/*.db), master.key and\nmanifest.json (sizes, SHA-256 checksums) into <dir>, which must be new or empty. Safe beside a running\nserver. With DATABASE_URL set, use pg_dump instead (README, "Backups").',
    run: async ([dir], _force, ctx) => (await import('./backup.ts')).backup(config(), dir!, ctx),
  },
  restore: {
    args: ['<dir>'],
    force: true,
    summary: 'restore a backup of `baseplate backup` into DATA_DIR (server stopped)',
    details:
      'Checks every file against the manifest and with PRAGMA integrity_check, then moves them into DATA_DIR,\nwhich must be empty or missing. --force replaces the Baseplate files of a non-empty DATA_DIR\n(never while a server has it open).\nWith DATABASE_URL set, use pg_restore instead (README, "Backups").',
    run: async ([dir], force, ctx) => (await import('./restore.ts')).restore(config(), dir!, force, ctx),
  },
  version: {
    args: [],
    summary: 'print the version',
    details: '',
    run: async (_args, _force, ctx) => ctx.version,
  },
};

function version(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

function generalUsage(): string {
  const width = Math.max(...Object.entries(COMMANDS).map(([name, c]) => `${name} ${c.args.join(' ')}`.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${`${name} ${c.args.join(' ')}`.padEnd(width)}  ${c.summary}`);
  return `Usage: baseplate <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nOptions:\n  -h, --help  show help (baseplate <command> --help: that command's)\n\nSettings come from the environment: PORT, DATA_DIR, DATABASE_URL, MASTER_KEY, ... (see the README).\n`;
}

function commandUsage(name: string, c: Command): string {
  const synopsis = ['baseplate', name, ...c.args, ...(c.force ? ['[--force]'] : [])].join(' ');
  return `Usage: ${synopsis}\n\n${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.\n${c.details ? `${c.details}\n` : ''}`;
}

/** A usage error; `usage`: the usage text that goes with it (the command's, or the general one). */
class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string = generalUsage(),
  ) {
    super(message);
  }
}

/** The command and its arguments, or the help text to print. */
function parse(argv: string[]): { help: string } | { name: string; command: Command; args: string[]; force: boolean } {
  const [name, ...rest] = argv;
  if (name === undefined) throw new UsageError('a command is needed');
  if (name === '--help' || name === '-h' || name === 'help') return { help: generalUsage() };
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`unknown command '${name}'`);
  let parsed;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, strict: true, options: { help: { type: 'boolean', short: 'h' }, ...(command.force ? { force: { type: 'boolean' as const } } : {}) } });
  } catch (err) {
    // parseArgs' first sentence ("Unknown option '--x'"); the rest advises on '--'
    throw new UsageError((err as Error).message.split(/\.( |$)/)[0]!, commandUsage(name, command));
  }
  if (parsed.values.help) return { help: commandUsage(name, command) };
  if (parsed.positionals.length !== command.args.length)
    throw new UsageError(command.args.length === 0 ? `${name} takes no arguments` : `${name} takes ${command.args.join(' ')}`, commandUsage(name, command));
  return { name, command, args: parsed.positionals, force: parsed.values.force === true };
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`baseplate: ${err.message}\n\n${err.usage}`);
    return 2;
  }
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return 0;
  }
  const ctx: CommandContext = { version: version(), say: (line) => process.stderr.write(`${line}\n`) };
  try {
    const report = await parsed.command.run(parsed.args, parsed.force, ctx);
    if (report !== undefined) process.stdout.write(`${report}\n`);
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`baseplate ${parsed.name}: ${withoutPassword(message, process.env.DATABASE_URL)}\n`);
    return 1;
  }
}

// a finished command ends once its output is written; serve runs until a signal (main.ts)
process.exitCode = await main(process.argv.slice(2));
