// A project ready for data-plane tests: an owner, keys with each permission set, end users, and a
// `rest` helper that sends the API key and (optionally) an end-user token.
import type { TestApp, Reply } from './app.ts';
import { registerAccount, createProject, uniqueEmail } from './app.ts';

export interface EndUserFixture {
  id: number;
  email: string;
  token: string;
}

export interface DataPlane {
  owner: string;
  pid: string;
  keys: Record<'all' | 'select' | 'insert' | 'update' | 'delete' | 'readwrite', string>;
  createTable(name: string, columns: unknown[]): Promise<{ id: string; name: string }>;
  createKey(permissions: string[], extra?: Record<string, unknown>): Promise<{ key: string; key_id: string }>;
  endUser(email?: string): Promise<EndUserFixture>;
  policy(tableId: string, operation: string, expression: string, extra?: Record<string, unknown>): Promise<Reply>;
  rest(method: string, path: string, opts?: { key?: string | null; user?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string }): Promise<Reply>;
}

export async function dataPlane(t: TestApp): Promise<DataPlane> {
  const { token: owner } = await registerAccount(t);
  const project = await createProject(t, owner, 'data plane');
  const pid = project.id;
  const createKey = async (permissions: string[], extra: Record<string, unknown> = {}) => {
    const res = await t.req('POST', `/projects/${pid}/keys`, { token: owner, body: { name: permissions.join('+'), permissions, ...extra } });
    if (res.status !== 201) throw new Error(`key: ${res.status} ${JSON.stringify(res.body)}`);
    return { key: res.body.key as string, key_id: res.body.key_id as string };
  };
  const keys = {
    all: (await createKey(['select', 'insert', 'update', 'delete'])).key,
    select: (await createKey(['select'])).key,
    insert: (await createKey(['insert'])).key,
    update: (await createKey(['update'])).key,
    delete: (await createKey(['delete'])).key,
    readwrite: (await createKey(['select', 'insert', 'update'])).key,
  };
  return {
    owner,
    pid,
    keys,
    createKey,
    async createTable(name, columns) {
      const res = await t.req('POST', `/projects/${pid}/tables`, { token: owner, body: { name, columns } });
      if (res.status !== 201) throw new Error(`table: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async endUser(email = uniqueEmail('enduser')) {
      const res = await t.req('POST', `/${pid}/auth/register`, { body: { email, password: 'end user password' } });
      if (res.status !== 201) throw new Error(`end user: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.user.id, email: res.body.user.email, token: res.body.token };
    },
    policy(tableId, operation, expression, extra = {}) {
      return t.req('POST', `/projects/${pid}/tables/${tableId}/rls-policies`, {
        token: owner,
        body: { name: `${operation} policy`, operation, expression, ...extra },
      });
    },
    rest(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const key = opts.key === undefined ? keys.all : opts.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      if (opts.user) headers['x-user-token'] = opts.user;
      return t.req(method, `/${pid}/rest/${path}`, { headers, body: opts.body, rawBody: opts.rawBody });
    },
  };
}
