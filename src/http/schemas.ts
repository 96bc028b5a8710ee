// TypeBox schemas: the same objects validate requests and feed /openapi.json.
import { Type, type Static } from '@sinclair/typebox';
import { DEFAULT_SIMULATED_ROWS, MAX_SIMULATED_ROWS } from '../services/rows/simulator.ts';

const strict = { additionalProperties: false } as const;

export const Email = Type.String({ minLength: 1, maxLength: 320, description: 'An email address; trimmed and lower-cased.' });
export const Password = Type.String({ minLength: 8, maxLength: 1024, description: '8 to 1024 characters.' });

export const RegisterBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), email: Email, password: Password }, strict);
export const LoginBody = Type.Object({ email: Type.String({ maxLength: 320 }), password: Type.String({ maxLength: 1024 }) }, strict);
export const AccountPatch = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    email: Type.Optional(Email),
    password: Type.Optional(Password),
    current_password: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  strict,
);

export const ProjectCreate = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }), description: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])) },
  strict,
);
export const ProjectPatch = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })), description: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])) },
  strict,
);

const Name = Type.String({ minLength: 1, maxLength: 63, description: 'Matches ^[a-z_][a-z0-9_]{0,62}$' });
export const ColumnDef = Type.Object(
  {
    name: Name,
    type: Type.Union(['text', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'].map((t) => Type.Literal(t))),
    nullable: Type.Optional(Type.Boolean()),
    default: Type.Optional(Type.Unknown({ description: 'A JSON value of the column type, or now() / $auth.id / $auth.email' })),
    unique: Type.Optional(Type.Boolean()),
    indexed: Type.Optional(Type.Boolean()),
  },
  strict,
);
export const TableCreate = Type.Object({ name: Name, columns: Type.Array(ColumnDef, { maxItems: 100 }) }, strict);
export const TablePatch = Type.Object(
  {
    name: Type.Optional(Name),
    add_columns: Type.Optional(Type.Array(ColumnDef, { maxItems: 100 })),
    drop_columns: Type.Optional(Type.Array(Name, { maxItems: 100 })),
    rename_columns: Type.Optional(Type.Record(Type.String({ maxLength: 63 }), Name, { maxProperties: 100 })),
  },
  strict,
);

export type RegisterBody = Static<typeof RegisterBody>;
export type LoginBody = Static<typeof LoginBody>;
export type AccountPatch = Static<typeof AccountPatch>;
export type ProjectCreate = Static<typeof ProjectCreate>;
export type ProjectPatch = Static<typeof ProjectPatch>;
export type TableCreate = Static<typeof TableCreate>;
export type TablePatch = Static<typeof TablePatch>;

export const KeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    permissions: Type.Array(Type.String({ maxLength: 20 }), { minItems: 1, maxItems: 5, description: 'Subset of select, insert, update, delete, function' }),
    expires_at: Type.Optional(Type.Union([Type.String({ maxLength: 40, description: 'ISO-8601, in the future' }), Type.Null()])),
  },
  strict,
);
export type KeyCreate = Static<typeof KeyCreate>;

export const PolicyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    operation: Type.String({ maxLength: 10, description: 'SELECT, INSERT, UPDATE, DELETE or ALL (any case)' }),
    expression: Type.String({ maxLength: 65536, description: 'Restricted SQL boolean expression, at most 4,000 characters' }),
    enabled: Type.Optional(Type.Boolean()),
  },
  strict,
);
export type PolicyCreate = Static<typeof PolicyCreate>;
export const PolicyPatch = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    expression: Type.Optional(Type.String({ maxLength: 65536 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  strict,
);
export type PolicyPatch = Static<typeof PolicyPatch>;
export const PolicyValidate = Type.Object({ expression: Type.String({ maxLength: 65536 }) }, strict);
export type PolicyValidate = Static<typeof PolicyValidate>;

export const EndUserCredentials = Type.Object({ email: Email, password: Password }, strict);
export type EndUserCredentials = Static<typeof EndUserCredentials>;
export const EndUserLogin = Type.Object({ email: Type.String({ maxLength: 320 }), password: Type.String({ maxLength: 1024 }) }, strict);
export type EndUserLogin = Static<typeof EndUserLogin>;
export const EndUserListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ maxLength: 10 })),
    offset: Type.Optional(Type.String({ maxLength: 16 })),
    // no NUL: PostgreSQL's text cannot hold it
    email: Type.Optional(Type.String({ maxLength: 320, pattern: '^[^\\u0000]*$' })),
  },
  strict,
);
export type EndUserListQuery = Static<typeof EndUserListQuery>;
export const RoleBody = Type.Object({ role: Type.Union([Type.String({ maxLength: 100 }), Type.Null()]) }, strict);
export type RoleBody = Static<typeof RoleBody>;

const HttpUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'An absolute http(s) URL without query or fragment' });
export const AuthSettingsPut = Type.Object(
  {
    site_url: Type.Optional(Type.Union([HttpUrl, Type.Null()])),
    redirect_urls: Type.Optional(Type.Array(HttpUrl, { maxItems: 20, description: 'At most 20 entries' })),
  },
  { ...strict, minProperties: 1 },
);
export type AuthSettingsPut = Static<typeof AuthSettingsPut>;

export const EmailConfigPut = Type.Object(
  {
    provider: Type.Optional(Type.Union([Type.Literal('smtp'), Type.Literal('emailapi')])),
    from_address: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    from_name: Type.Optional(Type.String({ maxLength: 100 })),
    smtp_host: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 253 }), Type.Null()])),
    smtp_port: Type.Optional(Type.Union([Type.Integer({ description: '25, 465, 587 or 2525' }), Type.Null()])),
    smtp_username: Type.Optional(Type.Union([Type.String({ maxLength: 320 }), Type.Null()])),
    smtp_encryption: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('ssl'), Type.Literal('tls'), Type.Null()])),
    smtp_password: Type.Optional(Type.String({ maxLength: 1024, description: 'Write-only; omitted keeps it, empty string clears it' })),
    emailapi_api_key: Type.Optional(Type.String({ maxLength: 1024, description: 'Write-only; omitted keeps it, empty string clears it' })),
    require_email_confirmation: Type.Optional(Type.Boolean()),
  },
  { ...strict, minProperties: 1 },
);
export type EmailConfigPut = Static<typeof EmailConfigPut>;
export const EmailTestBody = Type.Object({ to: Type.String({ minLength: 1, maxLength: 320 }) }, strict);
export type EmailTestBody = Static<typeof EmailTestBody>;

export const TemplatePut = Type.Object(
  { subject: Type.String({ minLength: 1, maxLength: 200 }), body: Type.String({ minLength: 1, maxLength: 20000 }) },
  strict,
);
export type TemplatePut = Static<typeof TemplatePut>;
export const TemplatePreview = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 200 }),
    body: Type.String({ minLength: 1, maxLength: 20000 }),
    key: Type.Optional(Type.String({ maxLength: 40, description: 'Render with this template key’s placeholders only (default: all placeholders)' })),
  },
  strict,
);
export type TemplatePreview = Static<typeof TemplatePreview>;

const RedirectUrl = Type.String({ maxLength: 2048, description: "Must match the project's site URL or an allowed redirect URL" });
export const EmailRequestBody = Type.Object({ email: Type.String({ maxLength: 320 }), redirect_url: Type.Optional(RedirectUrl) }, strict);
export type EmailRequestBody = Static<typeof EmailRequestBody>;
export const EmailChangeBody = Type.Object({ new_email: Type.String({ maxLength: 320 }), redirect_url: Type.Optional(RedirectUrl) }, strict);
export type EmailChangeBody = Static<typeof EmailChangeBody>;
export const TokenBody = Type.Object({ token: Type.String({ maxLength: 128, description: 'The token from the email link' }) }, strict);
export type TokenBody = Static<typeof TokenBody>;
export const PasswordResetBody = Type.Object({ token: Type.String({ maxLength: 128 }), password: Password }, strict);
export type PasswordResetBody = Static<typeof PasswordResetBody>;

export const FunctionDeploy = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 262144, description: 'A JavaScript module: export default async (request, context) => response' }) },
  strict,
);
export type FunctionDeploy = Static<typeof FunctionDeploy>;

export const OwnerRowsQuery = Type.Object(
  {
    as: Type.Optional(
      Type.String({
        maxLength: 40,
        description:
          'Whom the owner acts as: `owner` (the default: every row, no policy), `anonymous` (an anonymous passthrough caller holding every permission: ' +
          'every policy applies, $auth.* NULL) or `end_user:{id}` (that end user of the project, read now). Reserved on this route: a column named ' +
          '`as` is filtered with `and=(as.eq.value)`.',
      }),
    ),
  },
  { description: 'Every other parameter is the passthrough’s: select, order, limit, offset, on_conflict, columns, and col=op.value filters with or/and/not.' },
);
export type OwnerRowsQuery = Static<typeof OwnerRowsQuery>;

export const SimulateBody = Type.Object(
  {
    as: Type.String({ maxLength: 40, description: '`anonymous` or `end_user:{id}`' }),
    operation: Type.String({ maxLength: 10, description: 'SELECT, INSERT, UPDATE or DELETE (any case; returned upper-case)' }),
    row_ids: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), {
        maxItems: MAX_SIMULATED_ROWS,
        description: `At most ${MAX_SIMULATED_ROWS} rows to explain (a missing one is reported with exists: false). Not with INSERT, filter or limit.`,
      }),
    ),
    filter: Type.Optional(
      Type.Union([Type.Literal('all'), Type.Literal('visible'), Type.Literal('hidden')], {
        description: 'Without row_ids: the first `limit` rows by id that the operation allows (visible), refuses or hides (hidden), or any (all, the default).',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_SIMULATED_ROWS, description: `Without row_ids: how many rows (default ${DEFAULT_SIMULATED_ROWS}).` }),
    ),
    values: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'INSERT (required): the candidate row, completed with defaults as it would be stored. UPDATE: the patch applied to each row for the post-write check. Not with SELECT or DELETE.',
      }),
    ),
  },
  strict,
);
export type SimulateBody = Static<typeof SimulateBody>;
