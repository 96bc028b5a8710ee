// Every error the service answers with, in one table: key -> status, message template, details
// template, hint and headers. A key is the wire code, or `code.variant` where one code has several
// sentences (the part before the dot is what clients see as `code`). Templates take `{{name}}`
// holes, filled from the values a throw site passes (src/errors.ts); in details a value that is a
// hole alone keeps its JSON type (numbers stay numbers) and is left out when the value is undefined.
import type { ErrorSpec } from './errors.ts';

/** details of a field-level validation error whose reason the entry fixes (CONTRACT §0) */
const field = <R extends string>(reason: R) => ({ field: '{{field}}', reason }) as const;
/** details of a field-level validation error whose reason the throw site passes */
const fieldReason = { field: '{{field}}', reason: '{{reason}}' } as const;
const bearer = { 'WWW-Authenticate': 'Bearer' } as const;
const retrySoon = { 'Retry-After': '1' } as const;
/** a restart or failover of the database takes a few seconds */
const retryDatabase = { 'Retry-After': '5' } as const;

const REQUEST = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  'bad_request.content_length': { status: 400, message: 'The Content-Length header does not match the body.' },
  /** a framework error with a 4xx status of its own: the handler keeps that status */
  'bad_request.malformed': { status: 400, message: 'The request is malformed.' },
  'bad_request.url': { status: 400, message: 'The request URL is malformed.' },
  'bad_request.http': { status: 400, message: 'The request is not valid HTTP.', details: { reason: '{{reason}}' } },
  request_timeout: { status: 408, message: 'The request was not received in time.', details: { reason: '{{reason}}' } },
  headers_too_large: { status: 431, message: 'The request headers are larger than the server accepts.', details: { reason: '{{reason}}' } },
  payload_too_large: { status: 413, message: 'The request body is larger than the limit.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  'too_deep.body': { status: 422, message: 'The request body nests deeper than {{max}} levels.' },
  nul_character: { status: 422, message: 'Text in the request body must not contain the NUL character (U+0000).' },
  unpaired_surrogate: { status: 422, message: 'Text in the request body must be valid Unicode: a \\uD800-\\uDFFF escape must be one half of a surrogate pair.' },
  unknown_field: { status: 422, message: "Unknown field '{{field}}'.", details: field('unknown_field') },
  'validation_failed.required': { status: 422, message: "The field '{{field}}' is required.", details: field('required') },
  /** a request schema rule; `where` is field, query parameter, or the part of the request */
  'validation_failed.schema': { status: 422, message: "The {{where}} '{{field}}' is invalid ({{reason}}).", details: fieldReason },
  // a schema rule with a limit or a list: the message and details name it (src/http/schema-errors.ts)
  'validation_failed.schema_too_short': { status: 422, message: "The {{where}} '{{field}}' must have at least {{min}} characters.", details: { ...field('too_short'), min: '{{min}}' } },
  'validation_failed.schema_too_long': { status: 422, message: "The {{where}} '{{field}}' must have at most {{max}} characters.", details: { ...field('too_long'), max: '{{max}}' } },
  'validation_failed.schema_too_few': { status: 422, message: "The {{where}} '{{field}}' must have at least {{min}} entries.", details: { ...field('too_few'), min: '{{min}}' } },
  'validation_failed.schema_too_many': { status: 422, message: "The {{where}} '{{field}}' must have at most {{max}} entries.", details: { ...field('too_many'), max: '{{max}}' } },
  'validation_failed.schema_minimum': { status: 422, message: "The {{where}} '{{field}}' must be at least {{min}}.", details: { ...field('out_of_range'), min: '{{min}}' } },
  'validation_failed.schema_maximum': { status: 422, message: "The {{where}} '{{field}}' must be at most {{max}}.", details: { ...field('out_of_range'), max: '{{max}}' } },
  'validation_failed.schema_one_of': { status: 422, message: "The {{where}} '{{field}}' must be one of: {{allowed}}.", details: { ...field('not_allowed'), allowed: '{{allowed}}' } },
  'validation_failed.schema_type': { status: 422, message: "The {{where}} '{{field}}' must be of type {{types}}.", details: { ...field('wrong_type'), expected: '{{expected}}' } },
  'validation_failed.schema_pattern': { status: 422, message: "The {{where}} '{{field}}' must match {{pattern}}.", details: { ...field('invalid_format'), pattern: '{{pattern}}' } },
  'validation_failed.schema_format': { status: 422, message: "The {{where}} '{{field}}' must be a valid {{format}}.", details: { ...field('invalid_format'), format: '{{format}}' } },
  'validation_failed.schema_duplicate': { status: 422, message: "The {{where}} '{{field}}' must not list the same value twice.", details: field('duplicate') },
  not_found: { status: 404, message: 'No such {{what}}.' },
  'not_found.route': { status: 404, message: 'No such route.', details: { method: '{{method}}', path: '{{path}}' } },
  'not_found.resource': { status: 404, message: 'No such resource.' },
  // a project's store gone (deleted through another node): worded as for a project never seen, so
  // that an unauthenticated caller does not learn that the id once existed
  'not_found.deleted': { status: 404, message: 'No such project.' },
  'not_found.console': { status: 404, message: 'The console is not built.', hint: 'Run npm run build (the console needs the development dependencies to build).' },
  'not_found.console_file': { status: 404, message: 'No such console file.' },
  internal_error: { status: 500, message: 'An unexpected error occurred (request id {{request_id}}).', details: { request_id: '{{request_id}}' } },
  rate_limited: { status: 429, message: 'Too many requests; try again later.', headers: { 'Retry-After': '{{retry_after}}' } },
  shutting_down: {
    status: 503,
    message: 'The server is shutting down.',
    hint: 'Retry the request: another node, or this one once restarted, will answer it.',
    headers: retrySoon,
  },
} as const satisfies Record<string, ErrorSpec>;

/** The database and the shared capacity in front of it. */
const CAPACITY = {
  query_timeout: {
    status: 503,
    message: 'The database cancelled the query because it ran longer than the statement timeout.',
    hint: 'Narrow the filter or add an index.',
  },
  'database_unavailable.unreachable': {
    status: 503,
    message: 'The service could not get a connection to the database; nothing was changed.',
    details: { reason: 'unreachable' },
    hint: 'This is temporary: retry the request after Retry-After seconds.',
    headers: retryDatabase,
  },
  'database_unavailable.connection_lost': {
    status: 503,
    message: 'The connection to the database was lost while the request ran.',
    details: { reason: 'connection_lost' },
    hint: 'This is temporary: retry the request. A write whose connection was lost while it committed may have been applied.',
    headers: retryDatabase,
  },
  'database_unavailable.read_only': {
    status: 503,
    message: 'The database accepts only reads right now (a failover may be in progress); nothing was changed.',
    details: { reason: 'read_only' },
    hint: 'This is temporary: retry the request after Retry-After seconds.',
    headers: retryDatabase,
  },
  storage_full: {
    status: 507,
    message: 'The server has no storage space left for this write.',
    hint: 'Reads still work; writes succeed again once space is freed on the server.',
  },
  /** PROJECT_MAX_BYTES: the project's own bound, not the server's disk */
  'storage_full.quota': {
    status: 507,
    message: 'This project has reached its storage limit of {{limit}} bytes: writes that need more space are refused.',
    details: { reason: 'project_quota', limit: '{{limit}}' },
    hint: 'Reads and deletes still work, and the space deleted rows held is used again (on PostgreSQL once the table is vacuumed, which it does on its own). The operator can raise PROJECT_MAX_BYTES.',
  },
  write_conflict: {
    status: 503,
    message: 'The write conflicted with a concurrent write and was rolled back; nothing was written.',
    hint: 'Retry the request.',
    headers: retrySoon,
  },
  'write_conflict.schema_changed': {
    status: 503,
    message: 'The table changed while the request ran (its owner altered it); nothing was written.',
    details: { reason: 'schema_changed' },
    hint: 'Retry the request: it runs against the table as it is now.',
    headers: retrySoon,
  },
  project_busy: {
    status: 503,
    message: 'This project has too many database requests running at once; retry shortly.',
    hint: 'Retry with backoff, or make the slow requests cheaper.',
    headers: retrySoon,
  },
  'project_busy.passwords': {
    status: 503,
    message: 'This project has too many password checks waiting (sign-ups, logins, password changes); retry shortly.',
    hint: 'Retry with backoff.',
    headers: retrySoon,
  },
  'project_busy.owner_passwords': {
    status: 503,
    message: 'Too many account password checks are waiting (sign-ups, logins, password changes); retry shortly.',
    hint: 'Retry with backoff.',
    headers: retrySoon,
  },
  'function_busy.queue': { status: 503, message: 'Too many functions are running; try again shortly.', headers: retrySoon },
  'function_busy.closing': { status: 503, message: 'The service is shutting down.' },
} as const satisfies Record<string, ErrorSpec>;

/** Credentials: platform tokens, API keys, end-user tokens, passwords. */
const CREDENTIALS = {
  'invalid_token.credential': { status: 401, message: 'The credential is missing, unknown, expired or revoked.', headers: bearer },
  /** a single-use emailed token (magic link, reset, verification, email change) */
  'invalid_token.purpose': { status: 400, message: 'The token is unknown, expired, already used, or not for this action.' },
  missing_token: { status: 401, message: 'A platform token is required (Authorization: Bearer <token>).', headers: bearer },
  'missing_token.metrics': { status: 401, message: 'The metrics token is required (Authorization: Bearer <METRICS_TOKEN>).', headers: bearer },
  missing_api_key: { status: 401, message: 'A project API key is required (Authorization: Bearer <key>).', headers: bearer },
  invalid_api_key: { status: 401, message: 'The API key is unknown, revoked or expired.', headers: bearer },
  invalid_user_token: { status: 401, message: 'A valid end-user token is required (X-User-Token).', headers: bearer },
  // a 401 names its scheme (RFC 9110 §15.5.2), as every other one of CONTRACT §0 does
  'invalid_credentials.login': { status: 401, message: 'The email or password is wrong.', headers: bearer },
  /** CONTRACT §1: a wrong current_password is 403, the caller is authenticated */
  'invalid_credentials.current_password': { status: 403, message: 'The current password is wrong.', details: { field: 'current_password' } },
  email_not_verified: {
    status: 403,
    message: 'The email address must be verified before logging in.',
    hint: 'Use the link in the verification email, or request a new one with POST /{project_id}/auth/verify/resend.',
  },
  'email_taken.account': { status: 409, message: 'An account with this email already exists.', details: { field: 'email' } },
  'email_taken.user': { status: 409, message: 'A user with this email already exists.', details: { field: 'email' } },
  insufficient_permission: { status: 403, message: "The API key lacks the '{{permission}}' permission.", details: { permission: '{{permission}}' } },
  'insufficient_permission.select': { status: 403, message: "{{why}} It needs the 'select' permission.", details: { permission: 'select' } },
  'insufficient_permission.upsert': {
    status: 403,
    message: "An upsert that merges duplicates needs the 'update' permission too.",
    details: { permission: 'update' },
  },
} as const satisfies Record<string, ErrorSpec>;

/** Input rules of the platform API (CONTRACT §1-§8): 422 naming the field. */
const VALIDATION = {
  'validation_failed.empty': { status: 422, message: 'The {{what}} must not be empty.', details: field('empty') },
  'validation_failed.too_short': { status: 422, message: 'The {{what}} must have at least {{min}} characters.', details: { ...field('too_short'), min: '{{min}}' } },
  /** policy-language/cost.ts */
  'validation_failed.policy_cost': {
    status: 422,
    message:
      "The table's policies would call costly functions too often for one row: together they would weigh {{cost}}, at most {{max}} (JSON_CONTAINS 100; LOCATE, REPLACE 40; JSON_EXTRACT, JSON_UNQUOTE, JSON_LENGTH, LIKE 20; LOWER, UPPER 10; other text functions 5).",
    details: { field: 'expression', reason: 'too_costly', cost: '{{cost}}', max: '{{max}}' },
  },
  'validation_failed.too_long': { status: 422, message: 'The {{what}} must have at most {{max}} characters.', details: { ...field('too_long'), max: '{{max}}' } },
  'validation_failed.secret_unreadable': {
    status: 422,
    message: "The stored {{field}} cannot be opened with this server's MASTER_KEY (it was sealed under another key): set it again.",
    details: field('unreadable'),
  },
  'validation_failed.secret_too_long': { status: 422, message: '{{field}} must have at most {{max}} characters.', details: { ...field('too_long'), max: '{{max}}' } },
  'validation_failed.invalid_email': { status: 422, message: 'The {{field}} is not a valid email address.', details: field('invalid_email') },
  'validation_failed.not_email': { status: 422, message: '{{field}} must be an email address.', details: field('invalid_format') },
  'validation_failed.one_of': { status: 422, message: '{{field}} must be one of {{allowed}}.', details: { ...field('not_allowed'), allowed: '{{allowed}}' } },
  'validation_failed.listed_twice': { status: 422, message: "The {{what}} '{{value}}' is listed twice.", details: field('duplicate') },
  'validation_failed.missing': { status: 422, message: '{{field}} is required.', details: field('required') },
  'validation_failed.current_password': {
    status: 422,
    message: 'Changing the email or password needs current_password.',
    details: { field: 'current_password', reason: 'required' },
  },
  'validation_failed.column_type': { status: 422, message: 'The column type must be one of {{allowed}}.', details: { ...field('invalid_type'), allowed: '{{allowed}}' } },
  'validation_failed.default_required': {
    status: 422,
    message: 'A non-nullable column added to an existing table needs a literal default.',
    details: field('default_required'),
  },
  'validation_failed.too_many_columns': { status: 422, message: 'A table has at most {{max}} columns.', details: { ...field('too_many'), max: '{{max}}' } },
  'validation_failed.too_many_tables': { status: 422, message: 'A project has at most {{max}} tables.', details: { field: 'name', reason: 'too_many_tables', max: '{{max}}' } },
  'validation_failed.key_name': { status: 422, message: 'The key name must have 1 to 100 characters.', details: { field: 'name', reason: '{{reason}}', min: 1, max: 100 } },
  'validation_failed.no_permission': { status: 422, message: 'A key needs at least one permission.', details: { field: 'permissions', reason: 'empty' } },
  'validation_failed.unknown_permission': { status: 422, message: "Unknown permission '{{permission}}'; allowed: {{allowed}}.", details: { ...field('not_allowed'), allowed: '{{allowed}}' } },
  'validation_failed.expires_at_format': {
    status: 422,
    message: 'expires_at must be an ISO-8601 date-time with a time zone.',
    details: { field: 'expires_at', reason: 'invalid_format' },
  },
  'validation_failed.expires_at_past': { status: 422, message: 'expires_at must be in the future.', details: { field: 'expires_at', reason: 'in_the_past' } },
  'validation_failed.role_length': { status: 422, message: 'A role has 1 to {{max}} characters, or is null.', details: { field: 'role', reason: '{{reason}}', min: 1, max: '{{max}}' } },
  'validation_failed.role_control': { status: 422, message: 'A role must not contain control characters.', details: { field: 'role', reason: 'invalid_format' } },
  'validation_failed.page_param': { status: 422, message: '{{field}} must be a non-negative whole number.', details: field('invalid_format') },
  'validation_failed.policy_name': { status: 422, message: 'A policy name has 1 to 100 characters.', details: { field: 'name', reason: '{{reason}}', min: 1, max: 100 } },
  'validation_failed.function_name': {
    status: 422,
    message: 'A function name matches ^[a-z_][a-z0-9_]{0,62}$.',
    details: { field: 'name', reason: 'invalid_format' },
  },
  'validation_failed.code_too_long': { status: 422, message: 'The code must be at most {{max}} bytes.', details: { field: 'code', reason: 'too_long', max: '{{max}}' } },
  /** the caller the owner acts as (owner row access, the policy simulator) */
  'validation_failed.acting_as': { status: 422, message: 'as must be {{allowed}}.', details: { field: 'as', reason: '{{reason}}' } },
  'validation_failed.not_applicable': { status: 422, message: '{{field}} does not apply here: {{why}}', details: field('not_applicable') },
  'validation_failed.simulated_insert': {
    status: 422,
    message: 'Simulating an INSERT needs values: the candidate row.',
    details: { field: 'values', reason: 'required' },
  },
  'validation_failed.subject_one_line': { status: 422, message: 'The subject must be one line.', details: { field: 'subject', reason: 'invalid_format' } },
} as const satisfies Record<string, ErrorSpec>;

/** Email configuration and auth settings (CONTRACT §6, §7). */
const EMAIL = {
  'validation_failed.provider_required': {
    status: 422,
    message: "provider is required: 'smtp' or 'emailapi'.",
    details: { field: 'provider', reason: 'required', allowed: ['smtp', 'emailapi'] },
  },
  'validation_failed.provider': {
    status: 422,
    message: "provider must be 'smtp' or 'emailapi'.",
    details: { field: 'provider', reason: 'not_allowed', allowed: ['smtp', 'emailapi'] },
  },
  'validation_failed.required_for_provider': { status: 422, message: "{{field}} is required when provider is '{{provider}}'.", details: field('required') },
  'validation_failed.from_name': {
    status: 422,
    message: 'from_name must have at most 100 characters and no line breaks, quotes or angle brackets.',
    details: { field: 'from_name', reason: 'invalid_format', max: 100 },
  },
  'validation_failed.smtp_username': {
    status: 422,
    message: 'smtp_username must have at most 320 characters and no line breaks.',
    details: { field: 'smtp_username', reason: 'invalid_format', max: 320 },
  },
  'validation_failed.emailapi_api_key': {
    status: 422,
    message: 'emailapi_api_key must be printable ASCII without spaces (it is sent as an HTTP header).',
    details: { field: 'emailapi_api_key', reason: 'invalid_format' },
  },
  'validation_failed.smtp_host_single_label': {
    status: 422,
    message: 'smtp_host must be a fully qualified host name, not a single label.',
    details: { field: 'smtp_host', reason: '{{reason}}' },
  },
  'validation_failed.smtp_host_private': {
    status: 422,
    message: 'smtp_host must be a public host name or public IP address.',
    details: { field: 'smtp_host', reason: '{{reason}}' },
  },
  'validation_failed.smtp_host_invalid': {
    status: 422,
    message: 'smtp_host is not a valid host name or IP address.',
    details: { field: 'smtp_host', reason: '{{reason}}' },
  },
  email_not_configured: { status: 422, message: 'The project has no email provider configured.' },
  email_delivery_failed: { status: 502, message: 'The test email was not sent: {{cause}}.', details: { reason: '{{reason}}' } },
  'validation_failed.url_not_a_url': { status: 422, message: '{{field}} is not an absolute URL.', details: field('not_a_url') },
  'validation_failed.url_not_http': { status: 422, message: '{{field}} must use http or https.', details: field('not_http') },
  'validation_failed.url_credentials': { status: 422, message: '{{field}} must not contain a user name or password.', details: field('credentials') },
  'validation_failed.url_too_long': { status: 422, message: '{{field}} is longer than 2048 characters.', details: { ...field('too_long'), max: 2048 } },
  'validation_failed.url_query_or_fragment': {
    status: 422,
    message: '{{field}} must not contain a query or fragment (entries match on scheme, host, port and path).',
    details: field('query_or_fragment'),
  },
  'validation_failed.url_listed_twice': { status: 422, message: '{{field}} is listed twice.', details: field('duplicate') },
  'validation_failed.too_many_redirect_urls': {
    status: 422,
    message: 'At most {{max}} redirect URLs are allowed.',
    details: { field: 'redirect_urls', reason: 'too_many', max: '{{max}}' },
  },
  invalid_redirect_url: {
    status: 422,
    message: "redirect_url does not match the project's site URL or an allowed redirect URL.",
    details: { field: 'redirect_url', reason: 'not_allowed' },
  },
} as const satisfies Record<string, ErrorSpec>;

/** Tables and their columns (CONTRACT §3). */
const TABLES = {
  'invalid_name.format': { status: 422, message: 'The {{what}} name must match ^[a-z_][a-z0-9_]{0,62}$.', details: { ...field('invalid_name'), pattern: '^[a-z_][a-z0-9_]{0,62}$' } },
  'invalid_name.reserved_prefix': { status: 422, message: 'Names starting with {{prefix}} are reserved.', details: field('reserved_name') },
  'invalid_name.reserved_column': { status: 422, message: "The column name '{{name}}' is reserved.", details: field('reserved_name') },
  'invalid_name.proto': {
    status: 422,
    message: "The {{what}} name '__proto__' is reserved: it is not a usable key of a JavaScript object.",
    details: field('reserved_name'),
  },
  'invalid_name.drop_id': { status: 422, message: "The column 'id' cannot be dropped.", details: field('reserved_name') },
  'invalid_name.rename_id': { status: 422, message: "The column 'id' cannot be renamed.", details: field('reserved_name') },
  'invalid_default.marker': { status: 422, message: 'The default {{value}} does not apply to a {{type}} column.', details: field('invalid_default') },
  'invalid_default.value': { status: 422, message: "The default of '{{column}}' is not a valid {{type}} ({{reason}}).", details: field('invalid_default') },
  'unknown_column.alter': { status: 422, message: "The table has no column '{{column}}'.", details: field('unknown_column') },
  'duplicate_column.exists': { status: 409, message: "A column named '{{column}}' already exists.", details: { column: '{{column}}' } },
  'duplicate_column.twice': { status: 409, message: "The column '{{column}}' is defined twice.", details: { column: '{{column}}' } },
  duplicate_table: { status: 409, message: "A table named '{{table}}' already exists.", details: { table: '{{table}}' } },
  'unique_violation.alter': { status: 409, message: 'Existing rows would violate a unique column; nothing was changed.' },
  invalid_expression: { status: 422, message: '{{message}}', details: { offending: '{{offending}}', position: '{{position}}' } },
} as const satisfies Record<string, ErrorSpec>;

/** The REST passthrough: its grammar (src/rest-query) and its writes (CONTRACT §5). */
const ROWS = {
  invalid_filter: {
    status: 400,
    message: "The filter '{{param}}' is malformed ({{reason}}).",
    details: { param: '{{param}}', text: '{{text}}', reason: '{{reason}}', position: '{{position}}' },
  },
  pattern_too_long: {
    status: 400,
    message: "The like pattern for '{{column}}' is longer than {{limit}} characters.",
    details: { param: '{{param}}', column: '{{column}}', limit: '{{limit}}' },
  },
  /** `shown` is the name clipped for the sentence; details carry it whole */
  'unknown_column.query': { status: 400, message: "'{{shown}}' is not a column of this table.", details: { column: '{{column}}' } },
  'unknown_column.row': { status: 400, message: "The table has no column '{{column}}'.", details: { column: '{{column}}' } },
  invalid_value: { status: 422, message: "The value for column '{{column}}' is invalid ({{reason}}).", details: { column: '{{column}}', reason: '{{reason}}' } },
  'invalid_value.id_too_large': {
    status: 422,
    message: "The value for column 'id' is invalid (above {{max}}: ids past it are left for generated ones).",
    details: { column: 'id', reason: 'id_too_large', max: '{{max}}' },
  },
  'too_deep.json_value': {
    status: 422,
    message: "The json value for column '{{column}}' nests deeper than {{limit}} levels.",
    details: { column: '{{column}}', limit: '{{limit}}' },
  },
  invalid_select: {
    status: 400,
    message: "The select item '{{text}}' is not supported ({{reason}}).",
    details: { param: 'select', text: '{{text}}', reason: '{{reason}}' },
  },
  invalid_order: { status: 400, message: "The order item '{{text}}' is malformed ({{reason}}).", details: { param: 'order', text: '{{text}}', reason: '{{reason}}' } },
  invalid_param: { status: 400, message: "The parameter '{{param}}' is invalid ({{reason}}).", details: { param: '{{param}}', text: '{{text}}', reason: '{{reason}}' } },
  invalid_range: {
    status: 400,
    message: "The parameter '{{param}}' must be a non-negative integer ({{reason}}).",
    details: { param: '{{param}}', text: '{{text}}', reason: '{{reason}}' },
  },
  query_too_complex: {
    status: 400,
    message: 'The query is too large or too complex ({{reason}}).',
    details: { param: '{{param}}', reason: '{{reason}}', limit: '{{limit}}' },
  },
  /** a statement past the engine's bound on parameters: the table's policies (each bound once per use) with the request's filters or body */
  'query_too_complex.json_contains': {
    status: 400,
    message: 'A JSON_CONTAINS of the table\'s policies compares documents too long for one call: the product of their lengths as text is over {{max}} characters.',
    details: { reason: 'json_contains_too_large', max: '{{max}}' },
    hint: 'The owner can keep the documents a policy compares small, or compare one field (JSON_EXTRACT) instead.',
  },
  'query_too_complex.text_search': {
    status: 400,
    message: "A LOCATE or REPLACE of the table's policies searches a text too long for the string it looks for: the product of their lengths is over {{max}} characters.",
    details: { reason: 'text_search_too_large', max: '{{max}}' },
    hint: 'The owner can search for shorter strings, or compare shorter values (LEFT, SUBSTRING) instead.',
  },
  'query_too_complex.bound_values': {
    status: 400,
    message: 'The query is too large or too complex (too_many_bound_values): with the table\'s row-level security policies it needs more bound values than the database accepts.',
    details: { reason: 'too_many_bound_values', limit: '{{limit}}' },
    hint: 'Narrow the filter or send fewer rows; the owner can shorten the table\'s policies (their literals).',
  },
  range_not_satisfiable: { status: 416, message: 'The requested range is not satisfiable.', details: { range: '{{range}}', reason: '{{reason}}' } },
  unsupported_order: {
    status: 400,
    message: "The json column '{{column}}' cannot be ordered (engines order JSON values differently).",
    details: { column: '{{column}}' },
  },
  result_too_large: {
    status: 413,
    message: 'The rows asked for hold more than the server returns at once (MAX_RESULT_BYTES).',
    hint: 'Ask for fewer rows (limit) or fewer columns (select).',
  },
  invalid_preference: {
    status: 400,
    message: "The preference '{{preference}}' cannot be honoured, and the request asked for handling=strict.",
    details: { preference: '{{preference}}' },
    hint: 'Leave it out, or send handling=lenient to have it ignored.',
  },
  max_affected_exceeded: {
    status: 400,
    message: 'The write would affect {{count}} rows, more than max-affected={{max}}; nothing was written.',
    details: { max: '{{max}}', count: '{{count}}' },
  },
  not_single: { status: 406, message: 'JSON object requested, multiple (or no) rows returned.', details: 'The result contains {{rows}} rows' },
  /** a single-object write whose row the caller may not see (Dialect.assertTrue in its RETURNING list) */
  'not_single.hidden': { status: 406, message: 'JSON object requested, multiple (or no) rows returned.', details: 'The result contains 0 rows' },
  'method_not_allowed.post_row': { status: 405, message: 'POST is not allowed on a single row.' },
  'method_not_allowed.put_collection': { status: 405, message: 'PUT needs a row id: /rest/{table}/{id}.' },
  'filter_required.patch': { status: 400, message: 'PATCH on a table needs at least one filter; whole-table updates are refused.' },
  'filter_required.delete': { status: 400, message: 'DELETE on a table needs at least one filter; whole-table deletes are refused.' },
  invalid_on_conflict: { status: 422, message: 'on_conflict must name one column that is id or unique.', details: { on_conflict: '{{on_conflict}}' } },
  'invalid_body.expected_object': { status: 422, message: 'Each row must be a JSON object.', details: { reason: 'expected_object' } },
  'invalid_body.missing': { status: 422, message: 'A JSON object or array of objects is required.', details: { reason: 'missing' } },
  'invalid_body.update_array': { status: 422, message: 'An update takes one JSON object.', details: { reason: 'expected_object' } },
  'invalid_body.repeated_key': {
    status: 422,
    message: "Two rows name the same '{{column}}': a merging upsert updates a row at most once.",
    details: { column: '{{column}}', reason: 'repeated_key' },
  },
  empty_update: { status: 422, message: 'The update names no column.', details: { reason: 'empty' } },
  'read_only_column.id': { status: 422, message: "The column 'id' cannot be changed.", details: { column: 'id' } },
  'read_only_column.upsert_id': {
    status: 422,
    message: "Rows of an upsert on '{{column}}' cannot carry 'id': an existing row's id cannot change.",
    details: { column: 'id' },
    hint: 'Leave id out, or upsert on id.',
  },
  'unique_violation.row': { status: 409, message: 'A row with the same value in a unique column already exists.' },
  rls_violation: { status: 403, message: 'The row violates a row-level security policy; nothing was written.' },
  id_exhausted: {
    status: 409,
    message: 'The table has no exact integer id left for a new row; nothing was written.',
    details: { column: 'id', max: Number.MAX_SAFE_INTEGER },
  },
  too_many_rows: {
    status: 413,
    message: 'The response would hold {{rows}} rows of {{columns}} columns, more than {{max_values}} values; nothing was written.',
    details: { rows: '{{rows}}', columns: '{{columns}}', max_values: '{{max_values}}' },
    hint: 'Send Prefer: return=minimal, select fewer columns, or write fewer rows per request.',
  },
} as const satisfies Record<string, ErrorSpec>;

/** Edge functions: deployment, invocation, and what context.db answers a function (CONTRACT §8). */
const FUNCTIONS = {
  invalid_function: { status: 422, message: '{{message}}', details: { field: 'code', reason: 'invalid_function' } },
  'invalid_function.load': { status: 422, message: 'The module failed while loading: {{message}}', details: { field: 'code', reason: '{{reason}}' } },
  // a failed invocation; `details` is { error } or null (src/functions/sandbox.ts)
  function_error: { status: 500, message: '{{message}}', details: '{{details}}' },
  function_timeout: { status: 504, message: '{{message}}', details: '{{details}}' },
  function_out_of_memory: { status: 500, message: '{{message}}', details: '{{details}}' },
  function_invalid_response: { status: 500, message: '{{message}}', details: '{{details}}' },
  // a 500 too: the function broke its contract
  function_response_too_large: { status: 500, message: '{{message}}', details: '{{details}}' },
  'bad_request.no_database': { status: 400, message: 'There is no database here.' },
  'bad_request.call_not_json': { status: 400, message: 'The call is not JSON.' },
  'bad_request.call_shape': { status: 400, message: 'Use db.select/insert/update/delete(table, ...) with a query object or string.' },
  'too_many_calls.total': { status: 429, message: 'A function may make at most {{max}} context.db calls.' },
  'too_many_calls.in_flight': { status: 429, message: 'At most {{max}} context.db calls may run at once; await them.' },
  'payload_too_large.db_call': { status: 413, message: 'A context.db call is larger than 1 MiB.' },
  'internal_error.db_call': { status: 500, message: 'The database call failed.' },
} as const satisfies Record<string, ErrorSpec>;

/** The supabase-js door (src/http/routes/compat/): what GoTrue's clients may send and Baseplate does not do. */
const COMPAT = {
  not_supported: { status: 404, message: '{{what}} is not supported by Baseplate.' },
  'not_supported.hint': { status: 404, message: '{{what}} is not supported by Baseplate.', hint: '{{hint}}' },
  refresh_token_not_found: {
    status: 400,
    message: 'Baseplate issues no refresh tokens: a session lasts 30 days, then the user signs in again.',
    hint: 'Sign in again (signInWithPassword or a magic link).',
  },
  'unsupported_grant_type.missing': { status: 400, message: 'The grant_type query parameter is required (password).', details: { field: 'grant_type' } },
  unsupported_grant_type: { status: 400, message: "The grant type '{{grant}}' is not supported by Baseplate: only password.", details: { field: 'grant_type' } },
  /** a GoTrue request field Baseplate refuses; the sentence says what to do instead */
  'validation_failed.compat': { status: 422, message: '{{message}}', details: fieldReason },
  'missing_api_key.compat': { status: 401, message: 'A project API key is required (the apikey header, as supabase-js sends it).', headers: bearer },
  'invalid_user_token.compat': { status: 401, message: 'No user is signed in, or the session has ended (Authorization: Bearer <access_token>).', headers: bearer },
  'invalid_user_token.ended': { status: 401, message: 'The session has ended.', headers: bearer },
  reauthentication_needed: {
    status: 403,
    message: 'Setting a new password needs current_password once the session is older than 15 minutes.',
    details: { field: 'current_password' },
  },
} as const satisfies Record<string, ErrorSpec>;

/** the table's sections, apart so that a test can prove no key is defined twice */
export const ERROR_SECTIONS = [REQUEST, CAPACITY, CREDENTIALS, VALIDATION, EMAIL, TABLES, ROWS, FUNCTIONS, COMPAT] as const;
export const ERRORS = { ...REQUEST, ...CAPACITY, ...CREDENTIALS, ...VALIDATION, ...EMAIL, ...TABLES, ...ROWS, ...FUNCTIONS, ...COMPAT } as const;
