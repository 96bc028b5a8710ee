// The function catalogue: every callable name, its aliases and arity. Type rules live in the
// validator (validate-functions.ts); SQL lives in the compilers.

export interface FunctionSpec {
  /** canonical name */
  name: string;
  minArgs: number;
  maxArgs: number; // Infinity for variadic
  /** one-line description for the docs */
  doc: string;
}

const specs: FunctionSpec[] = [
  { name: 'LOWER', minArgs: 1, maxArgs: 1, doc: 'lower-case (Unicode)' },
  { name: 'UPPER', minArgs: 1, maxArgs: 1, doc: 'upper-case (Unicode)' },
  { name: 'TRIM', minArgs: 1, maxArgs: 1, doc: 'strip leading and trailing spaces' },
  { name: 'LENGTH', minArgs: 1, maxArgs: 1, doc: 'length in characters' },
  { name: 'CHAR_LENGTH', minArgs: 1, maxArgs: 1, doc: 'length in characters' },
  { name: 'CONCAT', minArgs: 1, maxArgs: Infinity, doc: 'concatenation; NULL if any argument is NULL' },
  { name: 'SUBSTRING', minArgs: 2, maxArgs: 3, doc: 'SUBSTRING(s, pos[, len]), MySQL rules' },
  { name: 'LEFT', minArgs: 2, maxArgs: 2, doc: 'first n characters' },
  { name: 'RIGHT', minArgs: 2, maxArgs: 2, doc: 'last n characters' },
  { name: 'LOCATE', minArgs: 2, maxArgs: 3, doc: 'LOCATE(sub, s[, pos]): 1-based position or 0' },
  { name: 'REPLACE', minArgs: 3, maxArgs: 3, doc: 'replace every occurrence (case-sensitive)' },
  { name: 'FIND_IN_SET', minArgs: 2, maxArgs: 2, doc: 'index in a comma-separated list or 0' },
  { name: 'COALESCE', minArgs: 1, maxArgs: Infinity, doc: 'first non-NULL argument' },
  { name: 'IFNULL', minArgs: 2, maxArgs: 2, doc: 'IFNULL(a, b) = COALESCE(a, b)' },
  { name: 'NULLIF', minArgs: 2, maxArgs: 2, doc: 'NULL if a = b, else a' },
  { name: 'IF', minArgs: 3, maxArgs: 3, doc: 'IF(cond, a, b)' },
  { name: 'GREATEST', minArgs: 2, maxArgs: Infinity, doc: 'largest argument; NULL if any is NULL' },
  { name: 'LEAST', minArgs: 2, maxArgs: Infinity, doc: 'smallest argument; NULL if any is NULL' },
  { name: 'ABS', minArgs: 1, maxArgs: 1, doc: 'absolute value' },
  { name: 'ROUND', minArgs: 1, maxArgs: 2, doc: 'round half away from zero' },
  { name: 'FLOOR', minArgs: 1, maxArgs: 1, doc: 'round down' },
  { name: 'CEIL', minArgs: 1, maxArgs: 1, doc: 'round up' },
  { name: 'NOW', minArgs: 0, maxArgs: 0, doc: 'current UTC instant' },
  { name: 'UTC_TIMESTAMP', minArgs: 0, maxArgs: 0, doc: 'current UTC instant' },
  { name: 'CURDATE', minArgs: 0, maxArgs: 0, doc: 'current UTC date' },
  { name: 'DATE', minArgs: 1, maxArgs: 1, doc: 'UTC date part' },
  { name: 'DATE_ADD', minArgs: 2, maxArgs: 2, doc: 'DATE_ADD(d, INTERVAL n unit)' },
  { name: 'DATE_SUB', minArgs: 2, maxArgs: 2, doc: 'DATE_SUB(d, INTERVAL n unit)' },
  { name: 'DATEDIFF', minArgs: 2, maxArgs: 2, doc: 'days from b to a (date parts only)' },
  { name: 'TIMESTAMPDIFF', minArgs: 3, maxArgs: 3, doc: 'TIMESTAMPDIFF(unit, a, b): whole units from a to b' },
  { name: 'JSON_CONTAINS', minArgs: 2, maxArgs: 3, doc: 'JSON_CONTAINS(target, candidate[, path])' },
  { name: 'JSON_EXTRACT', minArgs: 2, maxArgs: 2, doc: 'JSON_EXTRACT(doc, path)' },
  { name: 'JSON_UNQUOTE', minArgs: 1, maxArgs: 1, doc: 'JSON value as text; strings unquoted' },
  { name: 'JSON_LENGTH', minArgs: 1, maxArgs: 2, doc: 'elements of an array, keys of an object, 1 for a scalar' },
];

export const FUNCTIONS: ReadonlyMap<string, FunctionSpec> = new Map(specs.map((s) => [s.name, s]));

export const FUNCTION_ALIASES: Readonly<Record<string, string>> = {
  CEILING: 'CEIL',
  SUBSTR: 'SUBSTRING',
  MID: 'SUBSTRING',
  LCASE: 'LOWER',
  UCASE: 'UPPER',
  CHARACTER_LENGTH: 'CHAR_LENGTH',
  CURRENT_TIMESTAMP: 'NOW',
  CURRENT_DATE: 'CURDATE',
};

/** The canonical spec for a name as written (any case), or undefined if it is not callable. */
export function lookupFunction(name: string): FunctionSpec | undefined {
  const upper = name.toUpperCase();
  return FUNCTIONS.get(FUNCTION_ALIASES[upper] ?? upper);
}
