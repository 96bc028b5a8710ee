// A prepared statement run again on the connection that ran it before: Bind, Execute and Sync,
// and nothing else. pg's own run of a named statement also asks for its row description (Describe)
// every time, then builds a parser per column from it, and a Query, a Result and a copy of the
// query's settings per statement: about 40-50 us of CPU more a statement (measured, 20 rows of five
// columns), a tenth of a small read's work in Node. The columns are the ones the statement's first
// run on the connection described: a name stands for one text under one schema version
// (postgres-db.ts), so its columns never change, and a server that found them changed would fail
// the statement ("cached plan must not change result type") rather than answer in another shape.
// pg runs this as any query of its own (client.query with an object that has `submit`): in its
// queue, under its read timeout, and its connection's messages are handed to the handlers below.
import { pg, type QueryConfig, type QueryResult, type QueryResultRow } from './pg-driver.ts';
import type { SqlParam } from '../engine.ts';
import { compactJsonLength, resultTooLarge } from '../result-budget.ts';

/** A statement's rows as its run through pg described them. */
export interface Shape {
  names: readonly string[];
  /** each column's parser of its values (text format) */
  parsers: readonly ((value: string) => unknown)[];
  /** which columns are JSON, whose text MAX_RESULT_BYTES counts compacted (result-budget.ts) */
  json: readonly boolean[];
  /**
   * A row with every name as its own key, copied for each row as pg does: assigning to a fresh
   * object would run a setter for a column named `__proto__` (its value lost, or the row's
   * prototype replaced by a database value).
   */
  empty: QueryResultRow;
}

export function shapeOf(fields: readonly { name: string; dataTypeID: number }[], types: { getTypeParser(oid: number, format: 'text'): unknown }): Shape {
  const empty: QueryResultRow = {};
  for (const f of fields) Object.defineProperty(empty, f.name, { value: null, writable: true, enumerable: true, configurable: true });
  return { names: fields.map((f) => f.name), parsers: fields.map((f) => types.getTypeParser(f.dataTypeID, 'text') as (value: string) => unknown), json: fields.map((f) => JSON_TYPES.has(f.dataTypeID)), empty };
}

// pg's own encoding of a value (its types omit the export)
const prepareValue = (pg as unknown as { utils: { prepareValue(v: unknown): string | Buffer | null } }).utils.prepareValue;

/** The part of pg's connection a run writes to. */
interface Connection {
  stream: { cork?(): void; uncork?(): void };
  bind(config: { statement: string; values: readonly (string | Buffer | null)[] }): void;
  execute(config: Record<string, never>): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

// "SELECT 20", "INSERT 0 1", "UPDATE 3": the last number is the count of rows
const COMMAND_ROWS = / (\d+)$/;

export class PreparedRun {
  readonly rows: QueryResultRow[] = [];
  rowCount: number | null = null;
  /** pg's completion call: set before the run is queued, since pg wraps it with its read timeout */
  callback: (err: Error | null, result?: PreparedRun) => void;
  readonly done: Promise<PreparedRun>;
  /** a value the parsers refused, or rows past the budget: reported once the server is done with the statement */
  private failed: Error | null = null;
  private readonly values: (string | Buffer | null)[];

  constructor(
    // (not `name`: pg reads an active query's `name` as one it parses)
    private readonly statement: string,
    values: readonly SqlParam[],
    private readonly shape: Shape,
    /** MAX_RESULT_BYTES left for the rows (result-budget.ts); the rest are read and dropped */
    private left: number,
  ) {
    this.values = values.map(prepareValue);
    let settle!: (err: Error | null, result?: PreparedRun) => void;
    this.done = new Promise((resolve, reject) => (settle = (err, result) => (err ? reject(err) : resolve(result!))));
    this.callback = settle;
  }

  submit(connection: Connection): null {
    // one write for the three messages
    connection.stream.cork?.();
    try {
      connection.bind({ statement: this.statement, values: this.values });
      connection.execute({});
    } catch (err) {
      // (a Bind pg cannot encode, over its 2 GiB): nothing was sent but the Sync, whose answer settles this run
      this.failed = err as Error;
    } finally {
      connection.sync();
      connection.stream.uncork?.();
    }
    return null;
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    if (this.failed) return;
    this.left -= fieldBytes(msg.fields, this.shape.json);
    if (this.left < 0) {
      this.failed = resultTooLarge();
      this.rows.length = 0;
      return;
    }
    const { names, parsers, empty } = this.shape;
    const row: QueryResultRow = { ...empty };
    try {
      for (let i = 0; i < names.length; i++) {
        const raw = msg.fields[i];
        if (raw !== null && raw !== undefined) row[names[i]!] = parsers[i]!(raw);
      }
    } catch (err) {
      this.failed = err as Error;
      return;
    }
    this.rows.push(row);
  }

  handleCommandComplete(msg: { text: string }): void {
    const count = COMMAND_ROWS.exec(msg.text)?.[1];
    this.rowCount = count === undefined ? null : Number(count);
  }

  /** The server's error (the Sync after it brings ReadyForQuery), or pg's own: settled at once, as pg's queries are. */
  handleError(err: Error): void {
    this.callback(err);
  }

  handleReadyForQuery(): void {
    if (this.failed) this.callback(this.failed);
    else this.callback(null, this);
  }

  // never asked for: no Describe is sent, no statement is empty, no row limit is set, no COPY is run
  handleRowDescription(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('No source stream defined');
  }
  handleCopyData(): void {}
}

/** json and jsonb */
const JSON_TYPES: ReadonlySet<number> = new Set([114, 3802]);

/** A row's size as the server sent it: each value's text by length (JSON compacted), NULL as 8. */
function fieldBytes(fields: readonly (string | null)[], json: readonly boolean[]): number {
  let n = 0;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i];
    n += f === null || f === undefined ? 8 : json[i] ? compactJsonLength(f) : f.length;
  }
  return n;
}

/**
 * A statement's first run on a connection through pg's own query (Parse, Describe, the parsers
 * pg builds), its rows held within `maxBytes`: past it the rest are read off the socket and
 * dropped, and the run fails once the server is done with it (pg's own way out of a row it cannot
 * parse).
 */
export function boundedQuery(client: { query(q: unknown): unknown }, config: QueryConfig, maxBytes: number): Promise<QueryResult> {
  return new Promise((resolve, reject) => {
    const query = new BoundedQuery(config, maxBytes, (err: Error | null, result?: QueryResult) => (err ? reject(err) : resolve(result!)));
    // pg reads a submitted query's own read timeout
    Object.assign(query, { query_timeout: (config as { query_timeout?: number }).query_timeout });
    client.query(query);
  });
}

class BoundedQuery extends (pg.Query as unknown as new (config: QueryConfig, values: undefined, callback: (err: Error | null, result?: QueryResult) => void) => {
  handleDataRow(msg: { fields: (string | null)[] }): void;
  _canceledDueToError?: Error;
  _result?: { rows: unknown[]; fields?: { dataTypeID: number }[] };
}) {
  /** which columns are JSON, read off the row description before the first row */
  private json: boolean[] | undefined;

  constructor(
    config: QueryConfig,
    private left: number,
    callback: (err: Error | null, result?: QueryResult) => void,
  ) {
    super(config, undefined, callback);
  }

  override handleDataRow(msg: { fields: (string | null)[] }): void {
    if (!this._canceledDueToError) {
      this.left -= fieldBytes(msg.fields, (this.json ??= (this._result?.fields ?? []).map((f) => JSON_TYPES.has(f.dataTypeID))));
      if (this.left < 0) {
        this._canceledDueToError = resultTooLarge();
        if (this._result) this._result.rows.length = 0;
        return;
      }
    }
    super.handleDataRow(msg);
  }
}
