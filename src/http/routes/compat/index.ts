// The supabase-js compatibility door (issue [F], CONTRACT §10): `createClient('{base}/{project_id}', key)`
// works unmodified for data, auth and functions. Routes only: every call lands in the services the
// native routes use.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../services/index.ts';
import { compatAuthRoutes } from './auth.ts';
import { compatDataRoutes } from './data.ts';

export function supabaseCompatRoutes(app: FastifyInstance, services: Services): void {
  compatDataRoutes(app, services.dataPlane, services.rows, services.functions);
  compatAuthRoutes(app, services.dataPlane, services.endUsers, services.emailFlows);
}
