// Project auth settings (SPEC 4.8, CONTRACT §6): the site URL and the allowed redirect URLs, and
// the one rule that decides which URL an email link may point to.
import type { Engine } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../errors.ts';
import { linkWithToken, matchesEntry, parseHttpUrl } from '../lib/redirect-url.ts';

export const REDIRECT_URLS_MAX = 20;

export interface AuthSettings {
  site_url: string | null;
  redirect_urls: string[];
}

function checkEntry(value: string, field: string): string {
  const url = parseHttpUrl(value, { allowQuery: false });
  if (typeof url === 'string') throw new AppError(`validation_failed.url_${url}`, { field });
  return url.href;
}

export class AuthSettingsService {
  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
    /** the service's own application URL: the link target when a project has no site URL */
    private readonly appUrl: string,
  ) {}

  /** Under the project's share (Engine.callers): the public email flows read it. */
  async get(projectId: string): Promise<AuthSettings> {
    const db = await this.engine.callers(projectId);
    const row = await db.get<{ site_url: string | null; redirect_urls: string }>(`SELECT site_url, redirect_urls FROM ${db.t('_bp_auth_settings')} WHERE id = 1`);
    return row ? { site_url: row.site_url, redirect_urls: JSON.parse(row.redirect_urls) } : { site_url: null, redirect_urls: [] };
  }

  /** Either field may be given; an omitted one keeps its value. */
  async update(projectId: string, input: { site_url?: string | null; redirect_urls?: string[] }): Promise<AuthSettings> {
    const current = await this.get(projectId);
    const next: AuthSettings = { ...current };
    if (input.site_url !== undefined) next.site_url = input.site_url === null ? null : checkEntry(input.site_url, 'site_url');
    if (input.redirect_urls !== undefined) {
      if (input.redirect_urls.length > REDIRECT_URLS_MAX)
        throw new AppError('validation_failed.too_many_redirect_urls', { max: REDIRECT_URLS_MAX });
      const seen = new Set<string>();
      next.redirect_urls = input.redirect_urls.map((u, i) => {
        const href = checkEntry(u, `redirect_urls[${i}]`);
        if (seen.has(href)) throw new AppError('validation_failed.url_listed_twice', { field: `redirect_urls[${i}]` });
        seen.add(href);
        return href;
      });
    }
    const db = await this.engine.project(projectId);
    await db.run(
      `INSERT INTO ${db.t('_bp_auth_settings')} (id, site_url, redirect_urls, updated_at) VALUES (1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET site_url = excluded.site_url, redirect_urls = excluded.redirect_urls, updated_at = excluded.updated_at`,
      [next.site_url, JSON.stringify(next.redirect_urls), this.clock.now().toISOString()],
    );
    return next;
  }

  /**
   * Where an email link points: `requested` when it matches the site URL or an allowed redirect URL
   * (422 `invalid_redirect_url` otherwise), else the site URL, else the service's own URL.
   */
  async redirectBase(projectId: string, requested: string | undefined): Promise<string> {
    const settings = await this.get(projectId);
    if (requested === undefined) return settings.site_url ?? this.appUrl;
    const url = parseHttpUrl(requested, { allowQuery: true });
    const entries = [settings.site_url, ...settings.redirect_urls].filter((e): e is string => e !== null).map((e) => new URL(e));
    if (typeof url === 'string' || !entries.some((e) => matchesEntry(url, e)))
      throw new AppError('invalid_redirect_url');
    return url.href;
  }

  /** The link an email carries: the checked redirect base with `token` in its query. */
  async emailLink(projectId: string, requested: string | undefined, token: string): Promise<string> {
    return linkWithToken(await this.redirectBase(projectId, requested), token);
  }
}
