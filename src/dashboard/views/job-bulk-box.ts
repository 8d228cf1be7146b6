/**
 * The jobs list's bulk actions (SPEC section 14): cancel, reschedule or retry every job the
 * current filter matches, each behind a confirmation that says, from a dry run, how many jobs it
 * would change. The form posts the filter as the list's own query, so the action runs on exactly
 * the filter the page shows.
 */
import { formUtcTime } from '../form-values.js';
import { postForm, time, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';

/** The list's filter as the form holds it (times typed in UTC, tags as `key:value`), checked by the route. */
export interface JobFilter {
  status: string;
  tags: string[];
  from: string;
  to: string;
  dueFrom: string;
  dueTo: string;
  scheduleId: string;
  /** A concurrencyKey (SPEC section 15): its jobs alone. */
  concurrencyKey: string;
  jobId: string;
}

/** One action the filter allows, with its dry run: how many jobs it matches now (at most `limit`), and whether more do. */
export interface BulkOffer {
  action: 'cancel' | 'reschedule' | 'retry';
  matched: number;
  hasMore: boolean;
  /** The most one action changes (BULK_MAX_LIMIT); the rest by running it again. */
  limit: number;
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** A time of the filter (UTC as typed, checked by the route) as shown elsewhere on the page. */
const filterTime = (value: string) => time(formUtcTime(value, 'filter'));

function window(from: string, to: string, what: string): SafeHtml | null {
  if (from && to) return html`${what} between ${filterTime(from)} and ${filterTime(to)}`;
  if (from) return html`${what} from ${filterTime(from)} on`;
  if (to) return html`${what} before ${filterTime(to)}`;
  return null;
}

/** What the filter selects, in words: "tagged order:123, made by schedule …, created between … and …", or "of this project". */
export function describeFilter(filter: JobFilter): SafeHtml {
  const parts = [
    filter.tags.length > 0 ? html`tagged ${filter.tags.map((tag, i) => html`${i > 0 ? ' and ' : ''}<code>${tag}</code>`)}` : null,
    filter.scheduleId ? html`made by schedule <code>${filter.scheduleId}</code>` : null,
    filter.concurrencyKey ? html`of key <code>${filter.concurrencyKey}</code>` : null,
    window(filter.from, filter.to, 'created'),
    window(filter.dueFrom, filter.dueTo, 'due'),
  ].filter((part): part is SafeHtml => part !== null);
  if (parts.length === 0) return html` of this project`;
  return html` ${parts.map((part, i) => html`${i > 0 ? ', ' : ''}${part}`)}`;
}

/** The list's query for a filter (and a cursor): what the GET form submits and the bulk forms carry back. */
export function filterQuery(filter: JobFilter, cursor: string | null = null): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) {
    if (name === 'tags') for (const tag of value as string[]) params.append('tag', tag);
    else if (value) params.set(name, value as string);
  }
  if (cursor) params.set('cursor', cursor);
  return params.toString();
}

const WORDS = {
  cancel: { summary: 'Cancel all that match…', state: ['queued job', 'queued jobs'], button: 'Cancel', testId: 'bulk-cancel-confirm' },
  reschedule: { summary: 'Reschedule all that match…', state: ['queued job', 'queued jobs'], button: 'Reschedule', testId: 'bulk-reschedule-confirm' },
  retry: { summary: 'Retry all failed that match…', state: ['failed job', 'failed jobs'], button: 'Retry', testId: 'bulk-retry-confirm' },
} as const;

function offerBox(ctx: PageContext, base: string, filter: JobFilter, offer: BulkOffer, paused: boolean): SafeHtml {
  const words = WORDS[offer.action];
  const [one, many] = words.state;
  const count = html`<strong>${offer.hasMore ? `more than ${plural(offer.limit, one, many)}` : plural(offer.matched, one, many)}</strong>`;
  const what = describeFilter(filter);
  const question =
    offer.action === 'cancel'
      ? html`<p>Cancel ${count}${what}? They will never be delivered. This cannot be undone.</p>`
      : offer.action === 'reschedule'
        ? html`<p>Move ${count}${what} to a new time?</p>`
        : html`<p>Queue again ${count}${what}? Each gets a fresh retry budget and runs at once, oldest first.</p>`;
  const taken = Math.min(offer.matched, offer.limit);
  return html`<details class="confirm bulk-${offer.action}">
      <summary class="button ${offer.action === 'cancel' ? 'button-danger' : 'button-secondary'}">${words.summary}</summary>
      <div class="confirm-box" data-testid="${words.testId}">
        ${question}
        ${offer.hasMore ? html`<p>At most ${offer.limit.toLocaleString('en-US')} are changed at a time, oldest first: run it again for the rest.</p>` : ''}
        ${paused && offer.action !== 'cancel' ? html`<p>Deliveries are paused: they wait, QUEUED, until you resume.</p>` : ''}
        ${postForm(
          ctx,
          `${base}/bulk`,
          html`<input type="hidden" name="action" value="${offer.action}"><input type="hidden" name="filter" value="${filterQuery(filter)}">
            ${offer.action === 'reschedule'
              ? html`<div class="field">
                  <label for="f-bulk-scheduledFor">Run at (UTC)</label>
                  <input id="f-bulk-scheduledFor" name="scheduledFor" type="text" inputmode="numeric" autocomplete="off" placeholder="YYYY-MM-DD HH:MM" aria-describedby="f-bulk-scheduledFor-hint">
                  <p class="hint" id="f-bulk-scheduledFor-hint">In UTC, such as 2027-01-05 09:30. Leave empty to run them at once.</p>
                </div>`
              : ''}
            <button type="submit" class="button${offer.action === 'cancel' ? ' button-danger' : ''}">${words.button} ${plural(taken, 'job', 'jobs')}</button>`,
        )}
      </div>
    </details>`;
}

/** The actions the filter allows, each with its confirmation; nothing when none matches a job. */
export function bulkBox(ctx: PageContext, base: string, filter: JobFilter, offers: BulkOffer[], paused: boolean): SafeHtml {
  const shown = offers.filter((offer) => offer.matched > 0);
  if (shown.length === 0) return html``;
  return html`<section class="bulk-actions" aria-label="Act on every job that matches">${shown.map((offer) => offerBox(ctx, base, filter, offer, paused))}</section>`;
}
