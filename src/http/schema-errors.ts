// A request that breaks its TypeBox schema, as the flat 422 (CONTRACT §0): the field, the reason,
// and, where the rule has one, the limit or the allowed values, in the message and in details
// ({ field, reason, min | max | allowed | expected | pattern | format }).
import { AppError } from '../errors.ts';

export interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
}

/** Keywords without a limit or a list: only the reason. */
const REASONS: Record<string, string> = {
  pattern: 'invalid_format',
  format: 'invalid_format',
  anyOf: 'wrong_type',
};

function fieldOf(path: string, extra?: unknown): string {
  const parts = path.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (typeof extra === 'string') parts.push(extra);
  return parts.length ? parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') : '(body)';
}

/**
 * A union (TypeBox's anyOf) whose every branch failed on a constant or a type names what it takes:
 * the allowed values when the branches are constants (and null), else the allowed types.
 */
function unionRule(at: AjvError[], where: string, field: string): AppError | null {
  const branches = at.filter((e) => e.keyword !== 'anyOf');
  if (!at.some((e) => e.keyword === 'anyOf') || !branches.every((e) => ['const', 'enum', 'type'].includes(e.keyword))) return null;
  const values = branches.flatMap((e) => (e.keyword === 'const' ? [e.params.allowedValue] : e.keyword === 'enum' ? (e.params.allowedValues as unknown[]) : []));
  const types = branches.filter((e) => e.keyword === 'type').flatMap((e) => String(e.params.type).split(','));
  if (values.length > 0 && types.every((t) => t === 'null')) return new AppError('validation_failed.schema_one_of', { where, field, allowed: [...values, ...(types.length ? [null] : [])] });
  if (values.length === 0) return new AppError('validation_failed.schema_type', { where, field, types: types.join(' or '), expected: types });
  return null;
}

/** The rule one failed keyword names. */
function keywordRule(e: AjvError, where: string, field: string): AppError {
  const limit = e.params.limit;
  switch (e.keyword) {
    case 'minLength':
      return new AppError('validation_failed.schema_too_short', { where, field, min: limit });
    case 'maxLength':
      return new AppError('validation_failed.schema_too_long', { where, field, max: limit });
    case 'minItems':
    case 'minProperties':
      return new AppError('validation_failed.schema_too_few', { where, field, min: limit });
    case 'maxItems':
    case 'maxProperties':
      return new AppError('validation_failed.schema_too_many', { where, field, max: limit });
    case 'minimum':
      return new AppError('validation_failed.schema_minimum', { where, field, min: limit });
    case 'maximum':
      return new AppError('validation_failed.schema_maximum', { where, field, max: limit });
    case 'enum':
      return new AppError('validation_failed.schema_one_of', { where, field, allowed: e.params.allowedValues });
    case 'const':
      return new AppError('validation_failed.schema_one_of', { where, field, allowed: [e.params.allowedValue] });
    case 'type': {
      const types = String(e.params.type).split(',');
      return new AppError('validation_failed.schema_type', { where, field, types: types.join(' or '), expected: types });
    }
    case 'pattern':
      return new AppError('validation_failed.schema_pattern', { where, field, pattern: e.params.pattern });
    case 'format':
      return new AppError('validation_failed.schema_format', { where, field, format: e.params.format });
    case 'uniqueItems':
      return new AppError('validation_failed.schema_duplicate', { where, field });
  }
  return new AppError('validation_failed.schema', { where, field, reason: REASONS[e.keyword] ?? 'invalid' });
}

export function validationToAppError(errors: AjvError[], context: string): AppError {
  const first = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[0]!;
  if (first.keyword === 'additionalProperties') return new AppError('unknown_field', { field: fieldOf(first.instancePath, first.params.additionalProperty) });
  if (first.keyword === 'required') return new AppError('validation_failed.required', { field: fieldOf(first.instancePath, first.params.missingProperty) });
  const where = context === 'body' ? 'field' : context === 'querystring' ? 'query parameter' : context;
  const field = fieldOf(first.instancePath);
  return unionRule(errors.filter((e) => e.instancePath === first.instancePath), where, field) ?? keywordRule(first, where, field);
}
