// Public API of the RLS policy expression language (reference: README.md, "Policy language reference").
export type { ColumnType, ComparisonOp, Expr, TypedExpr, ValueType, IntervalUnit } from './ast.js';
export type { ColumnInfo } from './validator.js';
export type { AuthContext, CompileContext, CompiledSql } from './compiler.js';
export { PolicyError, MAX_EXPRESSION_LENGTH, MAX_DEPTH, MAX_STRING_BYTES } from './errors.js';
export { parsePolicy } from './parser.js';
export { validatePolicy } from './validator.js';
export { PolicyCompiler } from './compiler.js';
export { FUNCTIONS, FUNCTION_ALIASES } from './functions.js';
