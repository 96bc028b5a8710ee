// Migrations of both stores, written once against a per-engine type vocabulary: the engines differ
// only in the SQL types below (and PostgreSQL's one SQL-defined function, which SQLite registers on
// each connection instead), so the migration list (and its names) is shared.
import type { Migration } from './migrate.ts';

export interface SchemaTypes {
  ts: string; // an instant
  bool: string;
  bigint: string;
  serial: string; // auto-increment integer primary key
  /** the statement that defines bp_assert (Dialect.assertTrue) in the platform store, if the engine defines functions in SQL */
  rowAssertion?: string;
}

// t() qualifies table names; index names stay bare (PostgreSQL puts an index in its table's schema).
type Q = (name: string) => string;

export function platformMigrations(t: Q, y: SchemaTypes): Migration[] {
  return [
    {
      name: '0001_accounts_projects',
      statements: [
        `CREATE TABLE ${t('accounts')} (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
          password_hash TEXT NOT NULL, created_at ${y.ts} NOT NULL, updated_at ${y.ts} NOT NULL)`,
        `CREATE TABLE ${t('platform_sessions')} (token_hash TEXT PRIMARY KEY,
          account_id TEXT NOT NULL REFERENCES ${t('accounts')}(id) ON DELETE CASCADE,
          created_at ${y.ts} NOT NULL, expires_at ${y.ts} NOT NULL)`,
        `CREATE INDEX "platform_sessions_account" ON ${t('platform_sessions')} (account_id)`,
        `CREATE TABLE ${t('projects')} (id TEXT PRIMARY KEY,
          owner_id TEXT NOT NULL REFERENCES ${t('accounts')}(id) ON DELETE CASCADE,
          name TEXT NOT NULL, description TEXT, created_at ${y.ts} NOT NULL, updated_at ${y.ts} NOT NULL)`,
        `CREATE INDEX "projects_owner" ON ${t('projects')} (owner_id, created_at)`,
        `CREATE TABLE ${t('auth_failures')} (scope TEXT NOT NULL, subject TEXT NOT NULL, at ${y.ts} NOT NULL)`,
        `CREATE INDEX "auth_failures_subject" ON ${t('auth_failures')} (scope, subject, at)`,
      ],
    },
    {
      // Login attempts are counted before the password is checked: a row is pending while it is
      // checked, a wrong password settles it, any other outcome removes it (by id). Rows from before
      // this step are settled failures. One lock row per subject orders concurrent attempts.
      name: '0002_login_attempts',
      statements: [
        `ALTER TABLE ${t('auth_failures')} ADD COLUMN id TEXT`,
        `ALTER TABLE ${t('auth_failures')} ADD COLUMN pending ${y.bool} NOT NULL DEFAULT FALSE`,
        `CREATE UNIQUE INDEX "auth_failures_id" ON ${t('auth_failures')} (id)`,
        `CREATE TABLE ${t('auth_throttle_locks')} (scope TEXT NOT NULL, subject TEXT NOT NULL, at ${y.ts} NOT NULL,
          PRIMARY KEY (scope, subject))`,
      ],
    },
    {
      // the throttle's opportunistic clean-up deletes by `at` alone
      name: '0003_throttle_cleanup_indexes',
      statements: [
        `CREATE INDEX "auth_failures_at" ON ${t('auth_failures')} (at)`,
        `CREATE INDEX "auth_throttle_locks_at" ON ${t('auth_throttle_locks')} (at)`,
      ],
    },
    {
      // a write's post-write check inside its own statement (Dialect.assertTrue)
      name: '0004_row_assertion',
      statements: y.rowAssertion ? [y.rowAssertion] : [],
    },
  ];
}

export function projectMigrations(t: Q, y: SchemaTypes): Migration[] {
  return [
    {
      name: '0001_tables',
      statements: [
        `CREATE TABLE ${t('_bp_tables')} (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, columns TEXT NOT NULL,
          created_at ${y.ts} NOT NULL)`,
      ],
    },
    keysUsersPolicies(t, y),
    authEmail(t, y),
    {
      name: '0004_functions',
      statements: [
        `CREATE TABLE ${t('_bp_functions')} (name TEXT PRIMARY KEY, code TEXT NOT NULL, created_at ${y.ts} NOT NULL, updated_at ${y.ts} NOT NULL)`,
      ],
    },
    {
      // whether the current password was set through a reset link sent to the address: such a
      // password was chosen by whoever holds the address, so the address's first verification keeps it
      name: '0005_password_proven',
      statements: [`ALTER TABLE ${t('_bp_users')} ADD COLUMN password_proven ${y.bool} NOT NULL DEFAULT FALSE`],
    },
    {
      // at most one live token per user and purpose (a newer request replaces the older token):
      // tokens that concurrent requests used to leave side by side are cut to the newest first
      name: '0006_one_token_per_purpose',
      statements: [
        `DELETE FROM ${t('_bp_email_tokens')} WHERE EXISTS (SELECT 1 FROM ${t('_bp_email_tokens')} newer
          WHERE newer.user_id = ${t('_bp_email_tokens')}.user_id AND newer.purpose = ${t('_bp_email_tokens')}.purpose
          AND (newer.created_at > ${t('_bp_email_tokens')}.created_at
            OR (newer.created_at = ${t('_bp_email_tokens')}.created_at AND newer.token_hash > ${t('_bp_email_tokens')}.token_hash)))`,
        `CREATE UNIQUE INDEX "_bp_email_tokens_user_purpose" ON ${t('_bp_email_tokens')} (user_id, purpose)`,
        `DROP INDEX ${t('_bp_email_tokens_user')}`,
      ],
    },
    {
      // the version of the project's tables and policies, bumped in the transaction of every change:
      // what a node derives from them is cached under it, exact on every node (services/project-schema.ts)
      name: '0007_schema_version',
      statements: [
        `CREATE TABLE ${t('_bp_meta')} (id INTEGER PRIMARY KEY CHECK (id = 1), version ${y.bigint} NOT NULL)`,
        `INSERT INTO ${t('_bp_meta')} (id, version) VALUES (1, 1)`,
      ],
    },
  ];
}

function keysUsersPolicies(t: Q, y: SchemaTypes): Migration {
  return {
    name: '0002_keys_users_policies',
    statements: [
      `CREATE TABLE ${t('_bp_keys')} (id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,
          key_prefix TEXT NOT NULL, permissions TEXT NOT NULL, expires_at ${y.ts}, created_at ${y.ts} NOT NULL,
          last_used_at ${y.ts})`,
      `CREATE TABLE ${t('_bp_users')} (id ${y.serial}, email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
          role TEXT, email_verified ${y.bool} NOT NULL DEFAULT FALSE, created_at ${y.ts} NOT NULL, updated_at ${y.ts} NOT NULL)`,
      `CREATE TABLE ${t('_bp_user_sessions')} (token_hash TEXT PRIMARY KEY,
          user_id ${y.bigint} NOT NULL REFERENCES ${t('_bp_users')}(id) ON DELETE CASCADE,
          created_at ${y.ts} NOT NULL, expires_at ${y.ts} NOT NULL)`,
      `CREATE INDEX "_bp_user_sessions_user" ON ${t('_bp_user_sessions')} (user_id)`,
      `CREATE TABLE ${t('_bp_policies')} (id TEXT PRIMARY KEY,
          table_id TEXT NOT NULL REFERENCES ${t('_bp_tables')}(id) ON DELETE CASCADE,
          name TEXT NOT NULL, operation TEXT NOT NULL, expression TEXT NOT NULL, enabled ${y.bool} NOT NULL,
          created_at ${y.ts} NOT NULL)`,
      `CREATE INDEX "_bp_policies_table" ON ${t('_bp_policies')} (table_id, created_at)`,
    ],
  };
}

function authEmail(t: Q, y: SchemaTypes): Migration {
  return {
    // one-row tables hold the project's auth settings and email configuration (id is always 1)
    name: '0003_auth_email',
    statements: [
      `CREATE TABLE ${t('_bp_auth_settings')} (id INTEGER PRIMARY KEY CHECK (id = 1), site_url TEXT,
          redirect_urls TEXT NOT NULL, updated_at ${y.ts} NOT NULL)`,
      `CREATE TABLE ${t('_bp_email_config')} (id INTEGER PRIMARY KEY CHECK (id = 1), provider TEXT NOT NULL,
          from_address TEXT NOT NULL, from_name TEXT NOT NULL, smtp_host TEXT, smtp_port INTEGER, smtp_username TEXT,
          smtp_encryption TEXT, smtp_password_sealed TEXT, emailapi_api_key_sealed TEXT,
          require_email_confirmation ${y.bool} NOT NULL, updated_at ${y.ts} NOT NULL)`,
      `CREATE TABLE ${t('_bp_email_templates')} (key TEXT PRIMARY KEY, subject TEXT NOT NULL, body TEXT NOT NULL,
          updated_at ${y.ts} NOT NULL)`,
      `CREATE TABLE ${t('_bp_email_tokens')} (token_hash TEXT PRIMARY KEY, purpose TEXT NOT NULL,
          user_id ${y.bigint} NOT NULL REFERENCES ${t('_bp_users')}(id) ON DELETE CASCADE, new_email TEXT,
          created_at ${y.ts} NOT NULL, expires_at ${y.ts} NOT NULL)`,
      `CREATE INDEX "_bp_email_tokens_user" ON ${t('_bp_email_tokens')} (user_id, purpose)`,
      `CREATE TABLE ${t('_bp_email_requests')} (id TEXT PRIMARY KEY, scope TEXT NOT NULL, subject TEXT NOT NULL, at ${y.ts} NOT NULL)`,
      `CREATE INDEX "_bp_email_requests_subject" ON ${t('_bp_email_requests')} (scope, subject, at)`,
      // one row per limited subject, locked while a request counts it (serialises concurrent requests)
      `CREATE TABLE ${t('_bp_email_limit_locks')} (subject TEXT PRIMARY KEY)`,
    ],
  };
}
