// The shapes the public API answers with (CONTRACT.md; G-API for rows and the simulator).

export interface Account {
  id: string;
  name: string;
  email: string;
  created_at: string;
}

export interface Session {
  token: string;
  expires_at: string;
  account: Account;
}

export interface Project {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export const COLUMN_TYPES = ['text', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export interface ColumnDef {
  name: string;
  type: ColumnType;
  nullable?: boolean;
  default?: unknown;
  unique?: boolean;
  indexed?: boolean;
}

export interface Column extends Required<ColumnDef> {
  primary_key: boolean;
}

export interface Table {
  id: string;
  name: string;
  columns: Column[];
  created_at: string;
}

export type ProjectWithTables = Project & { tables: Table[] };

export const PERMISSIONS = ['select', 'insert', 'update', 'delete', 'function'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface ApiKey {
  key_id: string;
  name: string;
  permissions: Permission[];
  expires_at: string | null;
  key_prefix: string;
  created_at: string;
  last_used_at: string | null;
}

export type NewApiKey = ApiKey & { key: string };

export const OPERATIONS = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'ALL'] as const;
export type PolicyOperation = (typeof OPERATIONS)[number];

export interface Policy {
  policy_id: string;
  name: string;
  operation: PolicyOperation;
  expression: string;
  enabled: boolean;
  created_at: string;
}

export interface EndUser {
  id: number;
  email: string;
  role: string | null;
  email_verified: boolean;
  created_at: string;
}

export interface AuthSettings {
  site_url: string | null;
  redirect_urls: string[];
}

export interface EmailConfig {
  provider: 'smtp' | 'emailapi' | null;
  from_address: string | null;
  from_name: string | null;
  smtp_host: string | null;
  smtp_port: number | null;
  smtp_username: string | null;
  smtp_encryption: 'none' | 'ssl' | 'tls' | null;
  require_email_confirmation: boolean;
  has_smtp_password: boolean;
  has_emailapi_api_key: boolean;
}

export const TEMPLATE_KEYS = ['magic_link', 'password_reset', 'email_verification', 'email_change'] as const;
export type TemplateKey = (typeof TEMPLATE_KEYS)[number];

export interface EmailTemplate {
  key: TemplateKey;
  subject: string;
  body: string;
  is_custom: boolean;
}

export interface FunctionInfo {
  name: string;
  size: number;
  created_at: string;
  updated_at: string;
}

export type FunctionDetail = FunctionInfo & { code: string };

export type Row = Record<string, unknown> & { id: number };

/** Who the owner acts as on the rows routes and in the simulator. */
export type Caller = 'owner' | 'anonymous' | `end_user:${number}`;

export type SimOperation = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';
export type Stage = 'select' | 'check' | 'update' | 'delete';

export interface SimPolicy extends Policy {
  stages: Stage[];
  valid: boolean;
  error: { code: string; message: string; details: unknown } | null;
}

export interface SimStage {
  open: boolean;
  passed: boolean;
  results: Record<string, boolean | null>;
}

export interface SimRow {
  id: number | null;
  exists: boolean;
  row: Record<string, unknown> | null;
  after?: Record<string, unknown>;
  allowed: boolean;
  stages: Partial<Record<Stage, SimStage>>;
  reason: string;
}

export interface Simulation {
  operation: SimOperation;
  as: Caller;
  auth: { id: number; email: string; role: string | null; email_verified: boolean } | null;
  stages: Stage[];
  policies: SimPolicy[];
  rows: SimRow[];
}
