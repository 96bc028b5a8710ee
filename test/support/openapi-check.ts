// Checks real responses against /openapi.json: the operation the request reached (found with the
// router Fastify itself uses, so static segments win over parameters exactly as they do there), the
// response declared for its status (or `default`), and its body against that response's schema.
// A schema that lies fails here. test/support/app.ts runs every in-process request of the suite
// through it; test/api/openapi-truth.test.ts adds the scenarios that reach every operation.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import FindMyWay from 'find-my-way';

const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => void;

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head'] as const;

export interface Operation {
  method: string;
  path: string;
  spec: Json;
}

export interface CheckedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
  /** the raw body text */
  body: string;
}

export class OpenApiCheck {
  private readonly ajv: Ajv;
  private readonly router = FindMyWay();
  private readonly validators = new Map<string, ValidateFunction>();
  /** `METHOD path status` of every documented answer seen */
  readonly seen = new Set<string>();

  constructor(readonly doc: Json) {
    this.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(doc, 'openapi');
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const m of METHODS) {
        if (!item[m]) continue;
        // OpenAPI's {name} as the router's :name; an x-wildcard operation's last parameter takes the rest of the path
        const route = (item[m]['x-wildcard'] ? path.replace(/\{[^}]+\}$/, '*') : path).replace(/\{([^}]+)\}/g, ':$1');
        this.router.on(m.toUpperCase() as 'GET', route, () => undefined, { path, spec: item[m] });
      }
    }
  }

  /** The documented operation a request reaches, or null (an unknown route, an OPTIONS preflight). */
  operation(method: string, url: string): Operation | null {
    const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
    const found = this.router.find(m as 'GET', url.split('?')[0]!);
    if (!found) return null;
    const store = found.store as { path: string; spec: Json };
    return { method: m.toLowerCase(), path: store.path, spec: store.spec };
  }

  /** Every problem with one response; empty when the document tells the truth about it. */
  check(res: CheckedResponse): string[] {
    const op = this.operation(res.method, res.url);
    // an operation nobody described yet (no response schemas: no `default` answer) is left to the
    // completeness test of test/api/openapi-truth.test.ts
    if (!op || !op.spec.responses?.default) return [];
    const where = `${res.method} ${op.path} → ${res.status}`;
    const declared = op.spec.responses[String(res.status)];
    const response = declared ?? op.spec.responses.default;
    if (declared && res.status < 400) this.seen.add(`${op.method.toUpperCase()} ${op.path} ${res.status}`);
    if (res.method.toUpperCase() === 'HEAD' || res.status === 304) return [];
    if (res.body.length === 0) {
      const optional: number[] | true | undefined = op.spec['x-body-optional'];
      return response.content && optional !== true && !optional?.includes(res.status) ? [`${where}: the body is empty, the document declares one`] : [];
    }
    if (!response.content) return [`${where}: a body was sent, the document declares none`];
    // the declared media type of the answer's: its own, or */*
    const type = (res.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    const mediaType = response.content[type] ? type : response.content['*/*'] ? '*/*' : null;
    if (!mediaType) return [`${where}: content type ${res.contentType}, the document declares ${Object.keys(response.content).join(', ')}`];
    if (!type.endsWith('json')) return [];
    const ptr = ['paths', op.path, op.method, 'responses', declared ? String(res.status) : 'default', 'content', mediaType, 'schema']
      .map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1'))
      .join('/');
    const validate = this.validator(ptr);
    if (validate(JSON.parse(res.body))) return [];
    const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
    return [`${where}: the body does not match the declared schema: ${errors.join('; ')}\n  body: ${res.body.slice(0, 400)}`];
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `openapi#/${pointer}` });
      this.validators.set(pointer, v);
    }
    return v;
  }
}

const cache = new Map<string, OpenApiCheck>();

/** One checker per distinct document (every app of a test file serves the same one). */
export function openApiCheck(doc: Json): OpenApiCheck {
  const key = JSON.stringify(doc);
  let c = cache.get(key);
  if (!c) {
    c = new OpenApiCheck(doc);
    cache.set(key, c);
  }
  return c;
}
