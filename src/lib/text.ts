// Text no engine stores as it was sent: U+0000 (PostgreSQL refuses it) and an unpaired UTF-16
// surrogate (each driver writes its own replacement in UTF-8, so the engines would disagree).

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const hasNul = (text: string): boolean => text.includes('\u0000');
export const hasLoneSurrogate = (text: string): boolean => LONE_SURROGATE.test(text);

/** Whether a string of a JSON value (a key or a value, at any depth) is `bad`. */
export function someText(value: unknown, bad: (text: string) => boolean): boolean {
  if (typeof value === 'string') return bad(value);
  if (Array.isArray(value)) return value.some((v) => someText(v, bad));
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => bad(k) || someText(v, bad));
  return false;
}

/**
 * What of the above a JSON value holds, given the JSON text it was parsed from (or serialised to):
 * the text is scanned first, since only an escape in it (`\u0000`, `\ud800`) can put either there.
 */
export function badJsonText(json: string, value: unknown): 'nul_character' | 'unpaired_surrogate' | null {
  if (json.includes('\\u0000') && someText(value, hasNul)) return 'nul_character';
  if (/\\u[dD][89a-fA-F]/.test(json) && someText(value, hasLoneSurrogate)) return 'unpaired_surrogate';
  return null;
}
