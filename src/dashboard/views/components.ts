import type { TeamRow, UserRow } from '../../store/store.js';
import { html, type Renderable, type SafeHtml } from './html.js';

/** What every signed-in page knows: who is looking, their teams and the session's CSRF token. */
export interface PageContext {
  user: UserRow;
  operator: boolean;
  teams: TeamRow[];
  csrfToken: string;
  /** The team the page is about, for the navigation. */
  team: TeamRow | null;
}

/** A validation error from the services, shown next to the field it names (or above the form). */
export interface FormError {
  message: string;
  field?: string;
}

export const csrfField = (ctx: { csrfToken: string }): SafeHtml => html`<input type="hidden" name="_csrf" value="${ctx.csrfToken}">`;

/** A POST form carrying the session's CSRF token. */
export function postForm(ctx: { csrfToken: string }, action: string, body: Renderable, attrs: { class?: string; label?: string } = {}): SafeHtml {
  return html`<form method="post" action="${action}" class="${attrs.class ?? ''}"${attrs.label ? html` aria-label="${attrs.label}"` : ''}>${csrfField(ctx)}${body}</form>`;
}

const fieldId = (name: string) => `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/** The error summary at the top of a form; field errors are also repeated beside their field. */
export function errorSummary(error: FormError | null | undefined): SafeHtml {
  if (!error) return html``;
  return html`<div class="alert alert-error" role="alert"><strong>Not saved.</strong> ${error.message}</div>`;
}

interface FieldOptions {
  name: string;
  label: string;
  value?: string | number | null;
  type?: string;
  hint?: string;
  error?: FormError | null;
  required?: boolean;
  attrs?: SafeHtml;
  autocomplete?: string;
}

/** A labelled input with its hint and, when the services refused it, its error (aria-describedby both). */
export function field(o: FieldOptions): SafeHtml {
  const id = fieldId(o.name);
  const failed = o.error?.field === o.name;
  const described = [o.hint ? `${id}-hint` : '', failed ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${failed ? ' field-error' : ''}">
    <label for="${id}">${o.label}</label>
    ${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ''}
    ${failed ? html`<p class="error" id="${id}-error">${o.error!.message}</p>` : ''}
    <input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value ?? ''}"${o.required ? html` required` : ''}${
      o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''
    }${described ? html` aria-describedby="${described}"` : ''}${failed ? html` aria-invalid="true"` : ''} ${o.attrs ?? ''}>
  </div>`;
}

export function notice(text: string | null | undefined): SafeHtml {
  return text ? html`<div class="alert alert-ok" role="status">${text}</div>` : html``;
}

/**
 * UTC, to the second (or the millisecond, where attempts follow each other fast); machine-readable
 * in datetime. `suffix` false leaves out " UTC" where a table's heading says it.
 */
export function time(ms: number | string | null | undefined, precise = false, suffix = true): SafeHtml {
  if (ms === null || ms === undefined) return html`<span class="muted">never</span>`;
  const iso = typeof ms === 'number' ? new Date(ms).toISOString() : ms;
  const shown = iso.replace('T', ' ').replace(precise ? /Z$/ : /\.\d{3}Z$/, suffix ? ' UTC' : '');
  return html`<time datetime="${iso}">${shown}</time>`;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * An instant as the clock of a zone shows it ("Thu, 26 Nov 2026, 02:30 CET"), seconds only where
 * it has some; its UTC time is the tooltip and the datetime. `zone` is a name the runtime knows
 * (a schedule's, checked when it was saved).
 */
export function zonedTime(ms: number | string, zone: string): SafeHtml {
  const instant = typeof ms === 'number' ? ms : Date.parse(ms);
  const withSeconds = instant % 60_000 !== 0;
  const key = `${zone}|${withSeconds}`;
  let format = zoneFormats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      ...(withSeconds && { second: '2-digit' }),
      timeZoneName: 'short',
      hourCycle: 'h23',
    });
    // Zone names the runtime knows are a few hundred: the cache stays small.
    zoneFormats.set(key, format);
  }
  const iso = new Date(instant).toISOString();
  return html`<time datetime="${iso}" title="${iso.replace('T', ' ').replace(/\.000Z$|Z$/, ' UTC')}">${format.format(instant)}</time>`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export function statusBadge(status: string): SafeHtml {
  return html`<span class="badge badge-${status.toLowerCase()}">${status}</span>`;
}

/** A read-only value with a copy button (progressive enhancement: without JavaScript the text stays selectable). */
export function copyable(id: string, value: string, label: string): SafeHtml {
  return html`<div class="copyable">
    <code id="${id}" class="secret">${value}</code>
    <button type="button" class="button button-small" data-copy="${id}" aria-label="Copy ${label}" hidden>Copy</button>
  </div>`;
}

export function emptyState(title: string, body: Renderable): SafeHtml {
  return html`<section class="empty"><h2>${title}</h2>${body}</section>`;
}
