// Policy expression AST. The parser produces `Expr` (schema-blind); the validator produces
// `TypedExpr`: the same node shapes, each carrying its inferred `type`, with explicit `cast` nodes
// inserted wherever an operand is converted (date -> timestamp, integer -> text).

export type ColumnType = 'text' | 'integer' | 'number' | 'boolean' | 'timestamp' | 'date' | 'json';
/** `null`: an untyped NULL literal; `interval`: only as an operand of date arithmetic. */
export type ValueType = ColumnType | 'interval' | 'null';

export type IntervalUnit = 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';
export const INTERVAL_UNITS: readonly IntervalUnit[] = ['SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'];

/** The `$auth.*` placeholders and their types; all of them are NULL for an anonymous caller. */
export const AUTH_FIELDS = { id: 'integer', email: 'text', role: 'text', email_verified: 'boolean' } as const satisfies Record<string, ColumnType>;
export type AuthField = keyof typeof AUTH_FIELDS;

export type ComparisonOp = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type ArithmeticOp = '+' | '-' | '*' | '/' | '%';

interface Span {
  /** 0-based offset of the node's first character in the source. */
  pos: number;
  /** Offset just past the node's last character. */
  end: number;
}

export type LiteralValue =
  | { valueType: 'string'; value: string }
  | { valueType: 'integer'; value: bigint }
  | { valueType: 'number'; value: number }
  | { valueType: 'boolean'; value: boolean }
  | { valueType: 'null'; value: null }
  // produced by the validator only: a string literal read as a date/time (canonical text)
  | { valueType: 'timestamp'; value: string }
  | { valueType: 'date'; value: string };

export type LiteralNode = Span & { kind: 'literal' } & LiteralValue;
export interface ColumnNode extends Span { kind: 'column'; name: string }
export interface AuthNode extends Span { kind: 'auth'; field: AuthField }
export interface UnitNode extends Span { kind: 'unit'; unit: IntervalUnit }

export type Node<X> = (
  | LiteralNode
  | ColumnNode
  | AuthNode
  | UnitNode
  | (Span & { kind: 'unary'; op: 'NOT' | '-' | '+'; operand: Node<X> })
  | (Span & { kind: 'arith'; op: ArithmeticOp; left: Node<X>; right: Node<X> })
  | (Span & { kind: 'compare'; op: ComparisonOp; left: Node<X>; right: Node<X> })
  | (Span & { kind: 'logical'; op: 'AND' | 'OR'; operands: Node<X>[] })
  | (Span & { kind: 'is'; operand: Node<X>; test: 'NULL' | 'TRUE' | 'FALSE'; negated: boolean })
  | (Span & { kind: 'in'; operand: Node<X>; list: Node<X>[]; negated: boolean })
  | (Span & { kind: 'between'; operand: Node<X>; low: Node<X>; high: Node<X>; negated: boolean })
  // the language's LIKE folds case (MySQL's default collation); caseSensitive: the REST filter `like`
  | (Span & { kind: 'like'; operand: Node<X>; pattern: Node<X>; negated: boolean; caseSensitive: boolean })
  | (Span & { kind: 'case'; operand?: Node<X>; whens: { when: Node<X>; then: Node<X> }[]; else?: Node<X> })
  | (Span & { kind: 'call'; name: string; nameEnd: number; args: Node<X>[] })
  | (Span & { kind: 'interval'; value: Node<X>; unit: IntervalUnit })
  | (Span & { kind: 'cast'; to: 'timestamp' | 'text' | 'date' | 'json'; operand: Node<X> })
) &
  X;

export type Expr = Node<{}>;
export type TypedExpr = Node<{ type: ValueType }>;
