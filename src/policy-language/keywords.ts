// Reserved words of the policy language.

/** Words with a meaning in the language; a column with one of these names must be backtick-quoted. */
export const LANGUAGE_KEYWORDS = new Set([
  'AND', 'OR', 'NOT', 'IN', 'LIKE', 'BETWEEN', 'IS', 'NULL', 'TRUE', 'FALSE', 'CASE', 'WHEN', 'THEN',
  'ELSE', 'END', 'INTERVAL', 'CURRENT_TIMESTAMP', 'CURRENT_DATE',
]);
/** SQL words that have no place in a policy expression. */
export const FORBIDDEN_KEYWORDS = new Set([
  'SELECT', 'FROM', 'WHERE', 'UNION', 'INTERSECT', 'EXCEPT', 'INSERT', 'UPDATE', 'DELETE',
  'DROP', 'CREATE', 'ALTER', 'TABLE', 'INTO', 'VALUES', 'SET', 'JOIN', 'ON', 'AS', 'EXISTS', 'ALL', 'ANY',
  'SOME', 'HAVING', 'GROUP', 'ORDER', 'BY', 'LIMIT', 'OFFSET', 'DISTINCT', 'XOR', 'DIV', 'MOD', 'REGEXP',
  'RLIKE', 'ESCAPE', 'COLLATE', 'BINARY', 'CAST', 'CONVERT', 'EXEC', 'EXECUTE', 'CALL', 'GRANT', 'REVOKE',
  'TRUNCATE', 'WITH', 'RETURNING', 'USING', 'SOUNDS', 'MATCH', 'AGAINST', 'UNKNOWN', 'DEFAULT', 'PROCEDURE',
  'DECLARE', 'HANDLER', 'LOCK', 'SHOW', 'USE', 'OUTFILE', 'DUMPFILE', 'FOR', 'WINDOW', 'OVER', 'PARTITION',
  'FETCH', 'ROW', 'ROWS', 'LATERAL', 'NATURAL', 'INNER', 'OUTER', 'CROSS', 'ILIKE', 'SIMILAR', 'GLOB',
]);
