/**
 * The dashboard's one templating primitive: an `html` tagged template that escapes every
 * interpolated value unless it is already SafeHtml (the result of another `html` template).
 * Nothing else produces SafeHtml from a string but `trustedHtml`, which is for constants only.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Arrays are joined; null, undefined and false render as nothing (so `cond && html\`…\`` works). */
export type Renderable = SafeHtml | string | number | boolean | null | undefined | readonly Renderable[];

function render(value: Renderable): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i += 1) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Marks a string as HTML without escaping: only for text written in this codebase, never for data. */
export const trustedHtml = (constant: string): SafeHtml => new SafeHtml(constant);
