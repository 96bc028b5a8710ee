// The REST passthrough's operations as /openapi.json shows them (CONTRACT §5). Its query, headers
// and body are parsed by the service (src/rest-query, services/rows), not by Fastify: a schema
// there would turn the grammar's own errors into schema errors, and a repeated filter into a
// type error. So they are documented only (openapi.ts documentOnly), and the responses like any
// route's. The columns are each table's own: filters are one free-form parameter.
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';
import * as R from './response-schemas.ts';
import { documentOnly, type ErrorCodes } from './openapi.ts';

export type RestMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

const Text = (description: string) => Type.Optional(Type.String({ description }));

const QUERY = {
  select: Text('Columns to return: `a,b,alias:c` (default `*`)'),
  order: Text('`col[.asc|.desc][.nullsfirst|.nullslast],…`'),
  limit: Text('At most this many rows (capped by the server’s MAX_ROWS)'),
  offset: Text('Rows to skip'),
  on_conflict: Text('POST with `Prefer: resolution=…`: the unique column an upsert matches on (default id)'),
  columns: Text('POST/PATCH/PUT: only these keys of the body are written: `a,b`'),
  or: Text('`(cond,cond,…)`: any of the conditions, e.g. `(done.is.true,priority.gte.3)`; `not.or` negates; nests with and(…)'),
  and: Text('`(cond,cond,…)`: all of the conditions (several filters are ANDed already)'),
  filters: Type.Optional(
    Type.Record(Type.String(), Type.String(), {
      description:
        "Column filters, one query parameter per column (form style, exploded): `column=[not.]op.value` with op one of eq, neq, gt, gte, lt, lte, like, ilike (`*` as `%`), in (`in.(a,\"b,c\")`), is (null, not_null, true, false). A column may be filtered several times; the columns are the table's own.",
    }),
  ),
};

const Headers = (method: RestMethod) =>
  Type.Object({
    Prefer: Text(
      (method === 'GET'
        ? '`count=exact|planned|estimated`: the total in Content-Range'
        : '`return=minimal|representation`, `count=exact`, `tx=rollback` (a dry run)' +
          (method === 'POST' ? ', `resolution=merge-duplicates|ignore-duplicates` (upsert), `missing=default`' : ', `max-affected=n` (with handling=strict)')) +
        '; `handling=strict`: 400 invalid_preference for one that cannot be honoured',
    ),
    ...(method === 'GET' ? { Range: Text('`first-last` rows, e.g. `0-9` (as limit and offset)') } : {}),
    Accept: Text('`application/vnd.pgrst.object+json`: one object instead of an array (406 not_single unless exactly one row)' + (method === 'GET' ? '; `text/csv`: the rows as CSV' : '')),
  });

const Path = (single: boolean) =>
  Type.Object({
    project_id: Type.String({ description: 'The project id' }),
    table: Type.String({ description: 'A table name' }),
    ...(single ? { id: Type.String({ description: 'The row id (an integer)' }) } : {}),
  });

const Rows = Type.Union([Type.Array(R.Row), R.Row], { description: 'The rows (an array), or one object with Accept: application/vnd.pgrst.object+json or on /{table}/{id}' });
const CsvRows = Type.String({ description: 'With Accept: text/csv: a header line of the selected names, then a line a row (RFC 4180; NULL is an empty field)' });
const ContentRange = { 'Content-Range': { type: 'string', description: '`first-last/total`, e.g. `0-9/123` (`*` for the total without Prefer: count=exact)' } };
/** A write's answer: the total it touched with Prefer: count=exact, and the preferences applied. */
const WriteHeaders = {
  'Content-Range': { type: 'string', description: 'With Prefer: count=exact: `0-(n-1)/n` for the n rows written' },
  'Preference-Applied': { type: 'string', description: 'The preferences applied, e.g. `return=minimal, count=exact`' },
};
const written = (description?: string) => ({ ...Rows, headers: WriteHeaders, ...(description ? { description } : {}) });
const nothingReturned = { ...R.NoContent, headers: WriteHeaders };

const READ_ERRORS: ErrorCodes = {
  400: ['invalid_filter', 'pattern_too_long', 'unknown_column', 'invalid_select', 'invalid_order', 'invalid_param', 'invalid_range', 'query_too_complex', 'unsupported_order', 'invalid_preference'],
  403: ['insufficient_permission'],
  404: ['not_found'],
  406: ['not_single'],
  413: ['result_too_large'],
  422: ['invalid_value'],
};
const WRITE_ERRORS: ErrorCodes = {
  ...READ_ERRORS,
  403: ['insufficient_permission', 'rls_violation'],
  409: ['unique_violation', 'id_exhausted'],
  413: ['too_many_rows', 'result_too_large'],
  415: [],
  422: ['invalid_value', 'invalid_body', 'invalid_on_conflict', 'read_only_column', 'empty_update'],
  503: [],
};

interface Shape {
  summary: string;
  body?: TSchema;
  response: Record<number, unknown>;
  errors: ErrorCodes;
}

function shape(method: RestMethod, single: boolean): Shape {
  const one = single ? 'one row' : 'rows';
  switch (method) {
    case 'GET':
      return {
        summary: single ? 'Read one row' : 'Read rows (filters, select, order, paging)',
        response: { 200: single ? { ...Rows, headers: ContentRange } : { description: Rows.description, headers: ContentRange, content: { 'application/json': { schema: Rows }, 'text/csv': { schema: CsvRows } } } },
        errors: { ...READ_ERRORS, 416: ['range_not_satisfiable'] },
      };
    case 'POST':
      return {
        summary: 'Insert one row or many (an array: one transaction); upsert with Prefer: resolution',
        body: Type.Union([R.Row, Type.Array(R.Row)], { description: 'A row, or an array of rows; keys are column names' }),
        response: { 201: written('Created: the rows as written (empty with Prefer: return=minimal)') },
        errors: WRITE_ERRORS,
      };
    case 'PATCH':
      return {
        summary: single ? 'Update one row' : 'Update the rows the filters match (a filter is required)',
        body: Type.Record(Type.String(), Type.Unknown(), { description: 'The columns to change' }),
        response: { 200: written(), 204: nothingReturned },
        errors: { ...WRITE_ERRORS, 400: [...(WRITE_ERRORS[400] ?? []), 'max_affected_exceeded', ...(single ? [] : ['filter_required'])] },
      };
    case 'PUT':
      return {
        summary: 'Replace one row: every writable column (omitted ones get their default or NULL)',
        body: Type.Record(Type.String(), Type.Unknown(), { description: 'The new values' }),
        response: { 200: written(), 204: nothingReturned },
        errors: { ...WRITE_ERRORS, 400: [...(WRITE_ERRORS[400] ?? []), 'max_affected_exceeded'] },
      };
    case 'DELETE':
      return {
        summary: single ? 'Delete one row' : 'Delete the rows the filters match (a filter is required)',
        response: { 204: nothingReturned, 200: written(`The deleted ${one}, with Prefer: return=representation`) },
        errors: { ...READ_ERRORS, 400: [...(READ_ERRORS[400] ?? []), 'max_affected_exceeded', ...(single ? [] : ['filter_required'])], 403: ['insufficient_permission'], 413: ['too_many_rows', 'result_too_large'], 503: [] },
      };
  }
}

/** Who calls: the security, operationId and tags of the operations, and what differs from the passthrough's own door. */
export interface RestDoor {
  tags: string[];
  security: FastifySchema['security'];
  operationId: string;
  description?: string;
  /** the path parameters (default: the passthrough's project_id, table and id) */
  params?: TSchema;
  /** query parameters besides the grammar's (the owner's `as`) */
  query?: TProperties;
  /** false: the caller holds every table permission, so no 403 insufficient_permission (the owner's row routes) */
  keyPermissions?: boolean;
}

/** The codes of a caller that holds every table permission: 403 only where a policy can refuse a write. */
function withoutKeyPermissions(errors: ErrorCodes): ErrorCodes {
  const { 403: forbidden = [], ...rest } = errors;
  const left = forbidden.filter((c) => c !== 'insufficient_permission');
  return left.length > 0 ? { ...rest, 403: left } : rest;
}

/**
 * The schema and config of one passthrough operation: `door` names the security and the
 * operationId (the supabase-js door takes the key in `apikey`; the owner's row routes a platform
 * token, a table id and `as`).
 */
export function restOperation(method: RestMethod, single: boolean, door: RestDoor) {
  const s = shape(method, single);
  const schema: FastifySchema = {
    tags: door.tags,
    security: door.security,
    operationId: door.operationId,
    summary: s.summary,
    ...(door.description ? { description: door.description } : {}),
    response: s.response,
    errors: door.keyPermissions === false ? withoutKeyPermissions(s.errors) : s.errors,
    // a write that returns nothing (Prefer: return=minimal) answers its status without a body
    ...(method === 'POST' ? { 'x-body-optional': [201] } : {}),
  };
  const parts = { params: door.params ?? Path(single), querystring: Type.Object({ ...door.query, ...QUERY }), headers: Headers(method) };
  return { schema, config: documentOnly({ ...parts, ...(s.body ? { body: s.body } : {}) }) };
}
