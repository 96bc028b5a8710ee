// An in-process TCP proxy to put between the service and PostgreSQL, so tests can simulate outages
// and partitions without touching the shared server: refuse new connections (nothing listens),
// reset every open connection, or go silent (accept, and forward nothing in either direction:
// a network partition, or a host that accepts connections and never answers).
import net from 'node:net';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
  /** Server bytes not yet parsed, while watching for the end of the handshake (see killAfterHandshake). */
  handshake: Buffer | null;
  /** Bytes held back while the proxy is silent, per direction; delivered when it forwards again (as TCP would retransmit them). */
  toUpstream: Buffer[];
  toClient: Buffer[];
}

export class TcpProxy {
  private server: net.Server | null = null;
  private readonly pairs = new Set<Pair>();
  /** Server-side connections whose client closed during a partition. */
  private readonly orphans = new Set<net.Socket>();
  private silent = false;
  private killNew = false;
  /** Connections accepted so far (all modes). */
  accepted = 0;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  /** Listens on a free loopback port and forwards to `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const probe = net.createServer();
    const port = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => resolve((probe.address() as net.AddressInfo).port)));
    await new Promise((r) => probe.close(r));
    const proxy = new TcpProxy(target, port);
    await proxy.listen();
    return proxy;
  }

  /** `url` (a postgres:// URL) pointed at this proxy instead. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  private listen(): Promise<void> {
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  private accept(client: net.Socket): void {
    this.accepted += 1;
    const pair: Pair = { client, upstream: null, handshake: this.killNew ? Buffer.alloc(0) : null, toUpstream: [], toClient: [] };
    this.pairs.add(pair);
    client.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => {
      if (this.silent || !pair.upstream) pair.toUpstream.push(chunk);
      else pair.upstream.write(chunk);
    });
    client.on('close', () => {
      this.pairs.delete(pair);
      // across a partition the server never learns that the client went away: its side stays open
      // until the network heals
      if (this.silent && pair.upstream) this.orphans.add(pair.upstream);
      else pair.upstream?.destroy();
    });
    if (!this.silent) this.connectUpstream(pair);
  }

  private connectUpstream(pair: Pair): void {
    const upstream = net.connect(this.target.port, this.target.host);
    pair.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.on('connect', () => this.flush(pair));
    upstream.on('data', (chunk: Buffer) => {
      if (pair.handshake) return this.watchHandshake(pair, chunk);
      if (this.silent) pair.toClient.push(chunk);
      else pair.client.write(chunk);
    });
    upstream.on('close', () => pair.client.destroy());
  }

  private flush(pair: Pair): void {
    if (this.silent || !pair.upstream || pair.upstream.connecting) return;
    for (const chunk of pair.toUpstream.splice(0)) pair.upstream.write(chunk);
    for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
  }

  /**
   * Forward again: held connections reach the server, held bytes are delivered, and the server
   * learns of clients that closed meanwhile. Listens again if refusing.
   */
  async forward(): Promise<void> {
    this.silent = false;
    if (!this.server) await this.listen();
    for (const orphan of this.orphans) orphan.destroy();
    this.orphans.clear();
    for (const pair of this.pairs) {
      if (pair.upstream) this.flush(pair);
      else this.connectUpstream(pair);
    }
  }

  /**
   * A partition: open connections stop carrying bytes (a close included), new ones are accepted and
   * never forwarded.
   */
  silence(): void {
    this.silent = true;
  }

  /** Nothing listens any more: new connections are refused (ECONNREFUSED). Open ones stay. */
  async refuse(): Promise<void> {
    const server = this.server;
    this.server = null;
    // close() stops listening at once; its callback waits for open connections, so it is not awaited
    server?.close();
  }

  /** Resets every open connection (RST to both sides), as a dropped network path or a killed server does. */
  resetAll(): void {
    for (const pair of this.pairs) {
      pair.client.resetAndDestroy();
      pair.upstream?.resetAndDestroy();
    }
    this.pairs.clear();
    for (const orphan of this.orphans) orphan.resetAndDestroy();
    this.orphans.clear();
  }

  /**
   * New connections die the moment their handshake is done: the server's ReadyForQuery and, in the
   * same packet, a FATAL 57P01 (what pg_terminate_backend sends), then the connection closes.
   */
  killAfterHandshake(on: boolean): void {
    this.killNew = on;
  }

  /** Forwards server messages up to the first ReadyForQuery ('Z'), then kills the connection. */
  private watchHandshake(pair: Pair, chunk: Buffer): void {
    let buf = Buffer.concat([pair.handshake!, chunk]);
    let end = 0;
    while (buf.length >= end + 5) {
      const type = String.fromCharCode(buf[end]!);
      const length = 1 + buf.readInt32BE(end + 1);
      if (buf.length < end + length) break;
      end += length;
      if (type === 'Z') {
        const fields = Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0');
        const fatal = Buffer.alloc(5);
        fatal.write('E');
        fatal.writeInt32BE(4 + fields.length, 1);
        pair.client.end(Buffer.concat([buf.subarray(0, end), fatal, fields]));
        pair.upstream?.destroy();
        return;
      }
    }
    pair.client.write(buf.subarray(0, end));
    buf = buf.subarray(end);
    pair.handshake = buf;
  }

  /** Open client connections. */
  get open(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.resetAll();
    const server = this.server;
    this.server = null;
    if (server) await new Promise((r) => server.close(r));
  }
}
