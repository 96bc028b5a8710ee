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
import type { QueryResultRow } from './pg-driver.ts';
import type { SqlParam } from '../engine.ts';

/** A column of a statement's rows: its name and the parser of its values (text format). */
export interface Column {
  name: string;
  parse(value: string): unknown;
}

/** The part of pg's connection a run writes to. */
interface Connection {
  stream: { cork?(): void; uncork?(): void };
  bind(config: { statement: string; values: readonly (string | null)[] }): void;
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
  /** a value the parsers refused: reported once the server is done with the statement */
  private failed: Error | null = null;
  private readonly values: (string | null)[];

  constructor(
    // (not `name`: pg reads an active query's `name` as one it parses)
    private readonly statement: string,
    values: readonly SqlParam[],
    private readonly columns: readonly Column[],
  ) {
    // as pg sends them (utils.prepareValue): the text of each value
    this.values = values.map((v) => (v === null ? null : String(v)));
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
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    if (this.failed) return;
    const row: QueryResultRow = {};
    try {
      for (let i = 0; i < this.columns.length; i++) {
        const raw = msg.fields[i];
        row[this.columns[i]!.name] = raw === null || raw === undefined ? null : this.columns[i]!.parse(raw);
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
