// A project's email templates (SPEC 4.10, CONTRACT §7): a custom override per key, or the default.
import type { Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../errors.ts';
import { defaultTemplate, isTemplateKey, render, renderPreview, sampleValues, templateLengthError, TEMPLATE_KEYS, type Template, type TemplateKey, type TemplateValues } from '../email/templates.ts';

export interface TemplateView {
  key: TemplateKey;
  subject: string;
  body: string;
  is_custom: boolean;
}

function checkKey(key: string): TemplateKey {
  if (!isTemplateKey(key)) throw new AppError('not_found', { what: 'template' });
  return key;
}

function checkTemplate(t: Template): Template {
  if (t.subject.trim() === '') throw new AppError('validation_failed.empty', { field: 'subject', what: 'subject' });
  if (t.body.trim() === '') throw new AppError('validation_failed.empty', { field: 'body', what: 'body' });
  if (/[\r\n]/.test(t.subject)) throw new AppError('validation_failed.subject_one_line');
  const tooLong = templateLengthError(t);
  if (tooLong) throw new AppError('validation_failed.too_long', { field: tooLong.field, what: tooLong.field, max: tooLong.max });
  return t;
}

export class EmailTemplateService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
  ) {}

  private async custom(projectId: string): Promise<Map<string, Template>> {
    const db = await this.engine.project(projectId);
    const rows = await db.all<{ key: string; subject: string; body: string }>(`SELECT key, subject, body FROM ${db.t('_bp_email_templates')}`);
    return new Map(rows.map((r) => [r.key, { subject: r.subject, body: r.body }]));
  }

  async list(projectId: string): Promise<TemplateView[]> {
    const custom = await this.custom(projectId);
    return TEMPLATE_KEYS.map((key) => {
      const c = custom.get(key);
      return { key, ...(c ?? defaultTemplate(key)), is_custom: c !== undefined };
    });
  }

  async get(projectId: string, key: string): Promise<TemplateView> {
    const k = checkKey(key);
    return (await this.list(projectId)).find((t) => t.key === k)!;
  }

  async put(projectId: string, key: string, input: Template): Promise<TemplateView> {
    const k = checkKey(key);
    const t = checkTemplate({ subject: input.subject, body: input.body });
    const db = await this.engine.project(projectId);
    await db.run(
      `INSERT INTO ${db.t('_bp_email_templates')} (key, subject, body, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET subject = excluded.subject, body = excluded.body, updated_at = excluded.updated_at`,
      [k, t.subject, t.body, this.clock.now().toISOString()],
    );
    return { key: k, ...t, is_custom: true };
  }

  /** Back to the built-in default (idempotent). */
  async reset(projectId: string, key: string): Promise<void> {
    const k = checkKey(key);
    const db = await this.engine.project(projectId);
    await db.run(`DELETE FROM ${db.t('_bp_email_templates')} WHERE key = ?`, [k]);
  }

  /** Renders with sample values and the project's real name; nothing is saved or sent. */
  preview(projectName: string, input: Template & { key?: string }): { subject: string; body: string } {
    const t = checkTemplate({ subject: input.subject, body: input.body });
    const out = input.key === undefined ? renderPreview(t, projectName) : render(checkPreviewKey(input.key), t, sampleValues(checkPreviewKey(input.key), projectName));
    return { subject: out.subject, body: out.html };
  }

  /** The email a flow sends: the project's template for the key, rendered. */
  async renderFor(projectId: string, key: TemplateKey, values: TemplateValues): Promise<{ subject: string; html: string; text: string }> {
    const t = (await this.custom(projectId)).get(key) ?? defaultTemplate(key);
    return render(key, t, values);
  }
}

function checkPreviewKey(key: string): TemplateKey {
  if (!isTemplateKey(key)) throw new AppError('validation_failed.one_of', { field: 'key', allowed: TEMPLATE_KEYS });
  return key;
}
