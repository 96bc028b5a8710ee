// TypeBox schemas of what the service answers: they document the responses in /openapi.json, each
// a named component (`#/components/schemas/Account` …) that routes reference, and real responses are
// checked against them (test/api/openapi-truth.test.ts). They do not serialize: src/http/openapi.ts
// keeps JSON.stringify, so a field missing here fails a test, it is never dropped from a response.
import { Type, type Static, type TProperties, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { COLUMN_TYPES } from '../services/column-values.ts';
import { PERMISSIONS } from '../services/keys.ts';
import { OPERATIONS } from '../services/policies.ts';
import { SIM_OPERATIONS, STAGES } from '../services/rows/simulator-plan.ts';
import { SMTP_PORTS, ENCRYPTIONS } from '../services/email-config.ts';
import { TEMPLATE_KEYS } from '../email/templates.ts';

const registry: TSchema[] = [];
/** The named schemas, added to the app (app.addSchema) so that references to them resolve. */
export const SHARED_SCHEMAS: readonly TSchema[] = registry;

/** Registers a schema under a component name and returns a reference to it. */
function named<T extends TSchema>(id: string, schema: T): TUnsafe<Static<T>> {
  registry.push({ ...schema, $id: id });
  return Type.Unsafe<Static<T>>({ $ref: id });
}
/** A named response object: no undeclared field passes the tests. */
const Obj = <T extends TProperties>(id: string, props: T, description?: string) =>
  named(id, Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) }));
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const OneOf = (values: readonly (string | number)[]) => Type.Unsafe<string>({ type: typeof values[0] === 'number' ? 'integer' : 'string', enum: [...values] });
/** One of the values or null (OpenAPI 3.0's nullable enum must list null itself). */
const OneOfOrNull = (values: readonly (string | number)[]) =>
  Type.Unsafe<string | null>({ type: typeof values[0] === 'number' ? 'integer' : 'string', enum: [...values, null], nullable: true });

const Timestamp = Type.String({ format: 'date-time', description: 'ISO-8601 UTC, e.g. 2026-11-21T10:00:00.000Z' });
const Token = Type.String({ pattern: '^[0-9a-f]{64}$', description: '64 lower-case hex characters; shown once' });
const OpaqueId = Type.String({ description: 'An opaque, URL-safe identifier' });

export const Account = Obj('Account', { id: OpaqueId, name: Type.String(), email: Type.String(), created_at: Timestamp }, 'A platform account');
export const PlatformSession = Obj('PlatformSession', { token: Token, expires_at: Timestamp, account: Account }, 'A platform token (30 days) and its account');

const projectFields = { id: OpaqueId, name: Type.String(), description: Nullable(Type.String()), created_at: Timestamp, updated_at: Timestamp };
export const Project = Obj('Project', projectFields);

export const Column = Obj('Column', {
  name: Type.String(),
  type: OneOf(COLUMN_TYPES),
  nullable: Type.Boolean(),
  default: Type.Unknown({ description: 'A JSON value of the column type, a marker (now(), $auth.id, $auth.email), or null' }),
  unique: Type.Boolean(),
  indexed: Type.Boolean(),
  primary_key: Type.Boolean({ description: 'true for the implicit id column only' }),
});
export const Table = Obj('Table', { id: OpaqueId, name: Type.String(), columns: Type.Array(Column), created_at: Timestamp }, 'A table; columns[0] is the implicit id');
export const ProjectWithTables = Obj('ProjectWithTables', { ...projectFields, tables: Type.Array(Table) }, 'A project with its tables');

const keyFields = {
  key_id: OpaqueId,
  name: Type.String(),
  permissions: Type.Array(OneOf(PERMISSIONS)),
  expires_at: Nullable(Timestamp),
  key_prefix: Type.String({ pattern: '^[0-9a-f]{8}$', description: 'The first 8 hex characters of the key' }),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
};
export const ApiKey = Obj('ApiKey', keyFields, 'A project API key, without its secret');
export const ApiKeyWithSecret = Obj('ApiKeyWithSecret', { ...keyFields, key: Token }, 'A new key: `key` is its plaintext, returned this once');

const policyFields = {
  policy_id: OpaqueId,
  name: Type.String(),
  operation: OneOf(OPERATIONS),
  expression: Type.String(),
  enabled: Type.Boolean(),
  created_at: Timestamp,
};
export const Policy = Obj('Policy', policyFields);
export const PolicyValid = Obj('PolicyValid', { valid: Type.Literal(true) }, 'The expression validates against the table as it is now');

export const EndUser = Obj('EndUser', {
  id: Type.Integer({ minimum: 1 }),
  email: Type.String(),
  role: Nullable(Type.String()),
  email_verified: Type.Boolean(),
  created_at: Timestamp,
});
export const EndUserSession = Obj('EndUserSession', { token: Token, expires_at: Timestamp, user: EndUser }, 'An end-user token (30 days) and its user');
export const PendingVerification = Obj(
  'PendingVerification',
  {
    // always null; OpenAPI 3.0 has no null type, and openapi-fetch drops a property typed null alone,
    // so a nullable string that no non-empty string satisfies
    token: Type.Unsafe<string | null>({ type: 'string', nullable: true, maxLength: 0, description: 'Always null: no session before the address is verified' }),
    user: EndUser,
    email_verification_required: Type.Literal(true),
  },
  'Registered while the project requires email confirmation: no session until the emailed link is used',
);
export const UserEnvelope = Obj('UserEnvelope', { user: EndUser });
export const Ok = Obj('Ok', { ok: Type.Literal(true) }, 'The same answer whether or not the address is registered');

export const AuthSettings = Obj('AuthSettings', { site_url: Nullable(Type.String()), redirect_urls: Type.Array(Type.String(), { maxItems: 20 }) });

export const EmailConfig = Obj('EmailConfig', {
  provider: OneOfOrNull(['smtp', 'emailapi']),
  from_address: Nullable(Type.String()),
  from_name: Nullable(Type.String()),
  smtp_host: Nullable(Type.String()),
  smtp_port: OneOfOrNull(SMTP_PORTS),
  smtp_username: Nullable(Type.String()),
  smtp_encryption: OneOfOrNull(ENCRYPTIONS),
  require_email_confirmation: Type.Boolean(),
  has_smtp_password: Type.Boolean(),
  has_emailapi_api_key: Type.Boolean(),
}, 'Secrets are never returned: only whether they are set');
export const EmailSent = Obj('EmailSent', { sent: Type.Literal(true) });

export const Template = Obj('Template', { key: OneOf(TEMPLATE_KEYS), subject: Type.String(), body: Type.String(), is_custom: Type.Boolean() });
export const RenderedTemplate = Obj('RenderedTemplate', { subject: Type.String(), body: Type.String({ description: 'HTML' }) });

const functionFields = {
  name: Type.String(),
  size: Type.Integer({ description: 'Bytes of code' }),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const FunctionInfo = Obj('FunctionInfo', functionFields);
export const FunctionWithCode = Obj('FunctionWithCode', { ...functionFields, code: Type.String() });

export const Health = Obj('Health', { status: OneOf(['ok', 'unavailable']) });

/** supabase-js door (compat/gotrue.ts): the GoTrue shapes auth-js reads. */
export const GotrueUser = Obj('GotrueUser', {
  id: Type.String({ description: "The end user's numeric id, as a string" }),
  aud: Type.Literal('authenticated'),
  role: Nullable(Type.String()),
  email: Type.String(),
  email_confirmed_at: Nullable(Timestamp),
  confirmed_at: Nullable(Timestamp),
  phone: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  app_metadata: Type.Object({ provider: Type.String(), providers: Type.Array(Type.String()) }, { additionalProperties: false }),
  user_metadata: Type.Object({}, { additionalProperties: false }),
  identities: Type.Array(Type.Unknown(), { maxItems: 0 }),
  is_anonymous: Type.Boolean(),
});
export const GotrueSession = Obj('GotrueSession', {
  access_token: Token,
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer({ description: 'Seconds' }),
  expires_at: Type.Integer({ description: 'Unix time, seconds' }),
  refresh_token: Type.String({ description: 'Not a secret: Baseplate issues no refresh tokens (sign in again after 30 days)' }),
  user: GotrueUser,
});
export const GotrueUserEnvelope = Obj('GotrueUserEnvelope', { user: GotrueUser });
export const Empty = Obj('Empty', {}, 'An empty object');

const ErrorDetails = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String(), Type.Null()], {
  description: 'Machine-readable: for a field, { field, reason } and, where a rule has one, min, max or allowed',
});

/** A row of a project table: its columns are the table's own, so any JSON values. */
export const Row = named('Row', Type.Record(Type.String(), Type.Unknown(), { description: "A row: the table's columns (id first) as JSON values" }));

const StageName = OneOf([...new Set(Object.values(STAGES).flat())]);
const StageOutcome = Obj('SimulatedStage', {
  open: Type.Boolean({ description: 'No enabled policy takes part in this stage: every row passes' }),
  passed: Type.Boolean(),
  results: Type.Record(Type.String(), Nullable(Type.Boolean()), { description: 'Each policy taking part, by policy_id: true, false, or null (SQL NULL: no match either)' }),
});
/** The policy simulator's answer (services/rows/simulator.ts). */
export const Simulation = Obj('Simulation', {
  operation: OneOf(SIM_OPERATIONS),
  as: Type.String({ description: '`anonymous` or `end_user:{id}`' }),
  auth: Nullable(Obj('SimulatedCaller', { id: Type.Integer(), email: Type.String(), role: Nullable(Type.String()), email_verified: Type.Boolean() }, "The end user's view in the policies ($auth.*); null for an anonymous caller")),
  stages: Type.Array(StageName, { description: 'The stages the operation runs, in order' }),
  policies: Type.Array(Obj('SimulatedPolicy', {
    ...policyFields,
    stages: Type.Array(StageName, { description: 'The stages of this operation it takes part in ([] when disabled or for another operation)' }),
    valid: Type.Boolean({ description: 'false: it no longer validates against the table (a column renamed or dropped) and matches no row' }),
    error: Nullable(Type.Object({ code: Type.String(), message: Type.String(), details: ErrorDetails }, { additionalProperties: false })),
  })),
  rows: Type.Array(Obj('SimulatedRow', {
    id: Type.Integer({ description: 'For INSERT the id the row would get' }),
    exists: Type.Boolean(),
    row: Nullable(Row),
    after: Type.Optional(Row),
    candidate: Type.Optional(Type.Literal(true)),
    allowed: Type.Boolean(),
    stages: Type.Object({ select: Type.Optional(StageOutcome), update: Type.Optional(StageOutcome), delete: Type.Optional(StageOutcome), check: Type.Optional(StageOutcome) }, { additionalProperties: false }),
    reason: Type.String({ description: 'One sentence: what let the row through, or the stage that hid or refused it and why' }),
  })),
}, 'Which rows the caller could read or change, and which policy decided it, stage by stage; nothing is written');

/** Anything a function returns. */
export const AnyJson = Type.Unknown({ description: 'Any JSON value' });

/** The flat error shape of every error (CONTRACT §0). */
export const ErrorBody = named('Error', Type.Object(
  {
    code: Type.String({ description: 'snake_case; the codes each operation can answer are listed per status' }),
    message: Type.String({ description: 'One human sentence' }),
    details: ErrorDetails,
    hint: Nullable(Type.String()),
  },
  { additionalProperties: false },
));

/** The error shape with `code` narrowed to the codes an operation answers for one status. */
export function errorBody(codes: readonly string[]): TSchema {
  return Type.Unsafe({ allOf: [ErrorBody, { type: 'object', properties: { code: { type: 'string', enum: [...codes] } } }] });
}

/** 204: no body. */
export const NoContent = Type.Null({ description: 'No content' });
