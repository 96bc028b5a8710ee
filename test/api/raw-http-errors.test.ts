// Errors that Node's HTTP parser or the framework answer before any route runs (oversized headers,
// malformed request lines, CONNECT, a request reaching a closing server) have the flat shape and a
// request id too. Sent over a real socket, byte by byte as written here: an HTTP client library
// would refuse to send most of them. The HTTP layer is the same on both engines: SQLite only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Sends `data` (a function: written in parts) and returns every response read until the server closes the connection. */
async function exchange(port: number, data: string | ((socket: net.Socket) => Promise<void>)): Promise<RawResponse[]> {
  const socket = net.connect(port, '127.0.0.1');
  const received: Buffer[] = [];
  const closed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no close within 10 s; got ${Buffer.concat(received).toString().slice(0, 300)}`)), 10000);
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', () => undefined); // a reset after the answer is read is fine
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  await new Promise((r) => socket.once('connect', r));
  if (typeof data === 'string') socket.write(data);
  else await data(socket);
  await closed;
  return parseResponses(Buffer.concat(received).toString('utf8'));
}

function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    assert.ok(end > 0, `not an HTTP response: ${JSON.stringify(rest.slice(0, 200))}`);
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const length = Number(headers['content-length']);
    assert.ok(Number.isInteger(length), `a response without Content-Length: ${statusLine}`);
    const body = Buffer.from(rest.slice(end + 4)).subarray(0, length).toString('utf8');
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) });
    rest = Buffer.from(rest.slice(end + 4)).subarray(length).toString('utf8');
  }
  return out;
}

function expectFlat(res: RawResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'details', 'hint', 'message']);
  assert.equal(res.body.code, code);
  assert.equal(typeof res.body.message, 'string');
  assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
}

let t: TestApp;
let port: number;
before(async () => {
  t = await startTestApp('sqlite');
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as net.AddressInfo).port;
});
after(async () => {
  await t.close();
});

/** baseplate_http_requests_total of the requests the parser refused with `status` */
async function refusedCount(status: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`baseplate_http_requests_total{method="(unparsed)",route="(unmatched)",status="${status}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

test('oversized headers: 431 headers_too_large in the flat shape, with a request id, counted like any answer', async () => {
  const before = await refusedCount(431);
  const [res, ...more] = await exchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20000)}\r\n\r\n`);
  expectFlat(res!, 431, 'headers_too_large');
  assert.equal(res!.headers.connection, 'close');
  assert.equal(more.length, 0);
  assert.equal(await refusedCount(431), before + 1);
});

test('malformed request lines and headers: 400 bad_request in the flat shape', async () => {
  for (const raw of ['GARBAGE\r\n\r\n', 'GET /health HTTP/9.x\r\nHost: x\r\n\r\n', 'GET /health HTTP/1.1\r\nNo colon here\r\n\r\n', 'GET /he alth x HTTP/1.1\r\n\r\n']) {
    const [res] = await exchange(port, raw);
    expectFlat(res!, 400, 'bad_request');
    assert.equal(typeof res!.body.details.reason, 'string', JSON.stringify(raw));
  }
});

test('CONNECT is answered like any method without a route, not by dropping the connection', async () => {
  const [res] = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  expectFlat(res!, 404, 'not_found');
  assert.deepEqual(res!.body.details, { method: 'CONNECT', path: 'example.com:443' });
});

test('the server still serves ordinary requests after refusing malformed ones', async () => {
  const res = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(res.status, 200);
});

test('a request that reaches the server while it closes: 503 shutting_down in the flat shape', async () => {
  const body = JSON.stringify({ email: 'closing@example.com', password: 'some password' });
  const responses = await exchange(port, async (socket) => {
    // the first request is in flight (its body incomplete) when the server starts closing; the
    // second arrives on the same connection after that
    socket.write(`POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    await new Promise((r) => setTimeout(r, 300));
    void t.app.close();
    await new Promise((r) => setTimeout(r, 300));
    socket.write(`${body.slice(5)}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
  assert.equal(responses.length, 2);
  expectFlat(responses[0]!, 401, 'invalid_credentials');
  expectFlat(responses[1]!, 503, 'shutting_down');
  assert.equal(responses[1]!.headers['retry-after'], '1');
});

test('a request whose body trickles in, a byte now and then, is answered 408 request_timeout at REQUEST_TIMEOUT_MS and let go', async () => {
  const slow = await startTestApp('sqlite', { REQUEST_TIMEOUT_MS: '1000' });
  try {
    await slow.app.listen({ port: 0, host: '127.0.0.1' });
    const slowPort = (slow.app.server.address() as net.AddressInfo).port;
    const t0 = performance.now();
    let sent = 0;
    const [res] = await exchange(slowPort, async (socket) => {
      socket.write('POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
      // one byte every 200 ms: never idle long, never done
      const timer = setInterval(() => (socket.writable && sent < 60 ? (socket.write(' '), sent++) : clearInterval(timer)), 200);
      socket.once('close', () => clearInterval(timer));
    });
    const ms = performance.now() - t0;
    expectFlat(res!, 408, 'request_timeout');
    assert.ok(ms >= 900 && ms < 5000, `answered after ${ms.toFixed(0)} ms`);
    assert.ok(sent < 25, `${sent} bytes trickled before the answer`);
  } finally {
    await slow.close();
  }
});

test('a request refused before its body arrived (415) is answered once, and its connection closed: no second answer for the rest of the body', async () => {
  const slow = await startTestApp('sqlite', { REQUEST_TIMEOUT_MS: '1000' });
  try {
    await slow.app.listen({ port: 0, host: '127.0.0.1' });
    const slowPort = (slow.app.server.address() as net.AddressInfo).port;
    const responses = await exchange(slowPort, async (socket) => {
      socket.write('POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n\r\n{');
      const timer = setInterval(() => (socket.writable ? socket.write(' ') : clearInterval(timer)), 200);
      socket.once('close', () => clearInterval(timer));
    });
    assert.equal(responses.length, 1, JSON.stringify(responses.map((r) => r.status)));
    expectFlat(responses[0]!, 415, 'unsupported_media_type');
    assert.equal(responses[0]!.headers.connection, 'close');
  } finally {
    await slow.close();
  }
});
