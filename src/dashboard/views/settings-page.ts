/**
 * A project's delivery settings (SPEC section 7): durations in the unit that says them (30 s, not
 * 30000), each range said in words, and the retry schedule the policy gives, in words ("retries
 * after about 30 s, 2 min, 8 min"), kept up to date by the page's script as values are typed.
 */
import { backoffMs } from '../../delivery/retry-policy.js';
import {
  ASYNC_COMPLETION_TIMEOUT_RANGE,
  DELIVERY_CONCURRENCY_RANGE,
  DELIVERY_RATE_RANGE,
  DELIVERY_TIMEOUT_RANGE,
  RETRY_INITIAL_DELAY_RANGE,
  RETRY_MAX_DELAY_RANGE,
} from '../../services/project-settings.js';
import { RETENTION_DAYS_RANGE } from '../../retention.js';
import { EVENTS_FORMATS, type EventsFormat, type ProjectRow } from '../../store/store.js';
import { DURATION_UNITS, type DurationUnit } from '../form-values.js';
import { errorSummary, field, notice, postForm, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

/** A duration as a form holds it: a number in a unit. */
export interface DurationValue {
  value: string;
  unit: DurationUnit;
}

export interface SettingsValues {
  maxRetries: string;
  initialDelay: DurationValue;
  factor: string;
  maxDelay: DurationValue;
  deliveryTimeout: DurationValue;
  deliveryConcurrency: string;
  deliveryRatePerSecond: string;
  acceptAny2xx: boolean;
  asyncCompletion: boolean;
  asyncCompletionTimeout: DurationValue;
  holdOnFailure: boolean;
  /** retryPolicy.stopOn as typed: statuses separated by commas or spaces. */
  stopOn: string;
  retentionDays: string;
  eventsUrl: string;
  eventsFormat: string;
}

/** A duration in words, to about two units: "30 s", "2 min", "1 h 30 min", "7 d". */
export function durationWords(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const parts: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  const first = parts.findIndex(([size]) => ms >= size);
  const [size, unit] = parts[first]!;
  const whole = Math.floor(ms / size);
  const next = parts[first + 1];
  const rest = next ? Math.round((ms - whole * size) / next[0]) : 0;
  return rest > 0 && next ? `${whole} ${unit} ${rest} ${next[1]}` : `${Math.round(ms / size)} ${unit}`;
}

/** The duration fields: their form name (the API's field, errors name it), label and range. */
export const DURATION_FIELDS = {
  'retryPolicy.initialDelayMs': { label: 'First retry after', range: RETRY_INITIAL_DELAY_RANGE },
  'retryPolicy.maxDelayMs': { label: 'Longest wait between attempts', range: RETRY_MAX_DELAY_RANGE },
  deliveryTimeoutMs: { label: 'Timeout per attempt', range: DELIVERY_TIMEOUT_RANGE },
  asyncCompletionTimeoutMs: { label: 'Wait for a report at most', range: ASYNC_COMPLETION_TIMEOUT_RANGE },
} as const;
export type DurationField = keyof typeof DURATION_FIELDS;

const rangeWords = (range: readonly [number, number]) => `${range[0] === 0 ? '0' : durationWords(range[0])} to ${durationWords(range[1])}`;

/** A duration's refusal said in the form's terms (its label and range in words), not in milliseconds. */
export function durationRefusal(fieldName: DurationField): string {
  const { label, range } = DURATION_FIELDS[fieldName];
  return `${label} must be from ${rangeWords(range)}`;
}

/** A number and its unit, with the field's range in words; the error beside them when it was refused. */
function durationField(name: DurationField, value: DurationValue, hint: string, error: FormError | null | undefined): SafeHtml {
  const id = `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const { label, range } = DURATION_FIELDS[name];
  const failed = error?.field === name;
  return html`<div class="field${failed ? ' field-error' : ''}">
    <label for="${id}">${label}</label>
    <p class="hint" id="${id}-hint">${hint ? `${hint} ` : ''}${rangeWords(range)}.</p>
    ${failed ? html`<p class="error" id="${id}-error">${error!.message}</p>` : ''}
    <div class="with-unit">
      <input id="${id}" name="${name}" type="number" min="0" step="any" required value="${value.value}" data-duration="${name}" aria-describedby="${id}-hint${failed ? ` ${id}-error` : ''}"${failed ? html` aria-invalid="true"` : ''}>
      <select name="${name}.unit" aria-label="${label}: unit" data-duration-unit="${name}">
        ${DURATION_UNITS.map((u) => html`<option value="${u.unit}"${u.unit === value.unit ? html` selected` : ''}>${u.label}</option>`)}
      </select>
    </div>
  </div>`;
}

/** The form's fields the retry schedule follows. */
export const RETRY_FIELDS = [
  'retryPolicy.maxRetries',
  'retryPolicy.initialDelayMs',
  'retryPolicy.initialDelayMs.unit',
  'retryPolicy.factor',
  'retryPolicy.maxDelayMs',
  'retryPolicy.maxDelayMs.unit',
];

/** The waits a failed job's retries come after, as the policy gives them (before the jitter of up to 10%). */
export function retryWaits(policy: { initialDelayMs: number; factor: number; maxDelayMs: number }, retries: number): number[] {
  const row = { retryInitialDelayMs: policy.initialDelayMs, retryFactor: policy.factor, retryMaxDelayMs: policy.maxDelayMs };
  return Array.from({ length: retries }, (_, i) => backoffMs(row, i + 1, () => 0));
}

/** The retry schedule in a sentence: "A failed attempt is retried after about 30 s, 2 min and 8 min; then the job is FAILED." */
export function retrySchedule(waits: number[], retriesSaid: string): string {
  if (waits.length === 0) return `With ${retriesSaid}, a failed attempt is not retried: the job is FAILED at once.`;
  const words = waits.map(durationWords);
  const list = words.length === 1 ? words[0]! : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
  const total = durationWords(waits.reduce((sum, wait) => sum + wait, 0));
  return `With ${retriesSaid}, a failed job is retried after about ${list}; if the last retry fails too, it is FAILED, about ${total} after its first attempt.`;
}

const EVENTS_FORMAT_LABELS: Record<EventsFormat, string> = {
  json: 'JSON: the event as an object',
  slack: 'Slack-compatible: {"text": "<one readable line>"}',
};

/** Where events go and in which shape (SPEC section 10). */
function eventsCard(project: ProjectRow, v: SettingsValues, error: FormError | null | undefined): SafeHtml {
  const formatFailed = error?.field === 'eventsFormat';
  return html`<section class="card">
    <h2>Events</h2>
    <p>Punctual POSTs an event when a job fails for good (<code>job.failed</code>), when 10 attempts in a row fail
      (<code>webhook.failing</code>, at most once an hour) and at the first success after that (<code>webhook.recovered</code>),
      and when a schedule skips a fire because its previous job is still running (<code>schedule.skipped</code>).
      Events are signed exactly as deliveries (the secrets on the <a href="/projects/${project.id}/webhook">Webhook</a> tab; <code>webhook-id</code> is the event id)
      and retried with the retry policy above. The <a href="/projects/${project.id}/events">Events</a> tab lists them.</p>
    ${field({
      name: 'eventsUrl',
      label: 'Events URL',
      type: 'url',
      value: v.eventsUrl,
      hint: 'Any URL a webhook URL may be. Leave empty for no events: none are sent or recorded.',
      error,
    })}
    <div class="field${formatFailed ? ' field-error' : ''}">
      <label for="f-eventsFormat">Events format</label>
      <p class="hint" id="f-eventsFormat-hint">Slack-compatible lets a Slack incoming webhook URL be the Events URL as it is.</p>
      ${formatFailed ? html`<p class="error" id="f-eventsFormat-error">${error!.message}</p>` : ''}
      <select id="f-eventsFormat" name="eventsFormat" aria-describedby="f-eventsFormat-hint${formatFailed ? ' f-eventsFormat-error' : ''}"${formatFailed ? html` aria-invalid="true"` : ''}>
        ${EVENTS_FORMATS.map((format) => html`<option value="${format}"${v.eventsFormat === format ? html` selected` : ''}>${EVENTS_FORMAT_LABELS[format]}</option>`)}
      </select>
    </div>
  </section>`;
}


/** Async completion (SPEC section 11): a 202 means "accepted, working on it", and the receiver reports the result later. */
function asyncCompletionCard(v: SettingsValues, error: FormError | null | undefined): SafeHtml {
  const checkFailed = error?.field === 'asyncCompletion';
  return html`<section class="card">
    <h2>Async completion</h2>
    <div class="field field-check${checkFailed ? ' field-error' : ''}">
      <input id="f-asyncCompletion" name="asyncCompletion" type="checkbox" value="true"${v.asyncCompletion ? html` checked` : ''} aria-describedby="f-asyncCompletion-hint${checkFailed ? ' f-asyncCompletion-error' : ''}"${checkFailed ? html` aria-invalid="true"` : ''}>
      <label for="f-asyncCompletion">Async completion: a 202 answer means "accepted, working on it"</label>
    </div>
    ${checkFailed ? html`<p class="error" id="f-asyncCompletion-error">${error!.message}</p>` : ''}
    <p class="hint" id="f-asyncCompletion-hint">The job then stays STARTED until the receiver reports the result
      (<code>success</code>, <code>failure</code> or <code>running</code>) with <code>POST /api/jobs/:jobId/attempts/:attemptId/result</code>,
      authenticated by the <code>callbackToken</code> each delivery carries. Other answers count as before.</p>
    ${durationField('asyncCompletionTimeoutMs', v.asyncCompletionTimeout, 'From the 202, or from the last "running" report; past it the attempt ends as timeout and is retried as the retry policy says.', error)}
  </section>`;
}

export function settingsPage(
  ctx: PageContext,
  o: {
    project: ProjectRow;
    values: SettingsValues;
    maxRetriesCap: number;
    defaultRetentionDays: number;
    /** The retry schedule of the values shown (the saved ones, or those just refused when they read as numbers). */
    retrySchedule: string;
    error?: FormError | null;
    notice?: string | null;
  },
): SafeHtml {
  const { project, values: v } = o;
  return layout({
    title: `${project.name}: delivery settings`,
    ctx,
    project,
    tab: 'settings',
    body: html`<h1>Delivery settings</h1>
      ${notice(o.notice)}
      ${errorSummary(o.error)}
      ${postForm(
        ctx,
        `/projects/${project.id}/settings`,
        html`<section class="card" data-retry-policy data-max-retries-cap="${o.maxRetriesCap}">
          <h2>Retry policy</h2>
          ${field({ name: 'retryPolicy.maxRetries', label: 'Retries per job', type: 'number', value: v.maxRetries, hint: `Used when a dispatch does not say; empty means the plan's cap (${o.maxRetriesCap}). At most ${o.maxRetriesCap}.`, error: o.error, attrs: html`min="0" max="${o.maxRetriesCap}"` })}
          ${durationField('retryPolicy.initialDelayMs', v.initialDelay, 'The wait before the first retry.', o.error)}
          ${field({ name: 'retryPolicy.factor', label: 'Backoff factor', type: 'number', value: v.factor, required: true, hint: 'Each wait is the previous one times this (plus up to 10% jitter). 1 to 100.', error: o.error, attrs: html`min="1" step="any"` })}
          ${durationField('retryPolicy.maxDelayMs', v.maxDelay, 'No wait is longer than this.', o.error)}
          <p class="retry-schedule" data-testid="retry-schedule" aria-live="polite" data-live-url="/projects/${project.id}/settings/retry-schedule"
            data-live-fields="${RETRY_FIELDS.join(' ')}">${o.retrySchedule}</p>
        </section>
        <section class="card">
          <h2>Each attempt</h2>
          ${durationField('deliveryTimeoutMs', v.deliveryTimeout, 'The receiver must answer within this.', o.error)}
          ${field({ name: 'deliveryConcurrency', label: 'Deliveries in flight at once', type: 'number', value: v.deliveryConcurrency, required: true, hint: `${DELIVERY_CONCURRENCY_RANGE[0]} to ${DELIVERY_CONCURRENCY_RANGE[1]}, for this project.`, error: o.error, attrs: html`min="${DELIVERY_CONCURRENCY_RANGE[0]}" max="${DELIVERY_CONCURRENCY_RANGE[1]}"` })}
          ${field({ name: 'deliveryRatePerSecond', label: 'Attempts started per second at most', type: 'number', value: v.deliveryRatePerSecond, hint: `Empty: no limit. ${DELIVERY_RATE_RANGE[0]} to ${DELIVERY_RATE_RANGE[1].toLocaleString('en-US')}; jobs over the rate wait QUEUED. Shared by every instance with REDIS_URL, else each instance keeps it alone.`, error: o.error, attrs: html`min="${DELIVERY_RATE_RANGE[0]}" max="${DELIVERY_RATE_RANGE[1]}" step="any"` })}
          <div class="field field-check">
            <input id="f-acceptAny2xx" name="acceptAny2xx" type="checkbox" value="true"${v.acceptAny2xx ? html` checked` : ''}>
            <label for="f-acceptAny2xx">Count any 2xx answer as success (otherwise only 200 and 201)</label>
          </div>
        </section>
        <section class="card">
          <h2>When the receiver fails</h2>
          <div class="field field-check">
            <input id="f-holdOnFailure" name="holdOnFailure" type="checkbox" value="true"${v.holdOnFailure ? html` checked` : ''} aria-describedby="f-holdOnFailure-hint">
            <label for="f-holdOnFailure">Hold the jobs while the receiver is down, probe it, and resume by itself</label>
          </div>
          <p class="hint" id="f-holdOnFailure-hint">After 10 attempts in a row fail (a network error, a timeout, a 5xx, 408 or 429), no new attempt starts:
            due jobs wait QUEUED with their retries intact. Punctual probes the receiver after 30 s, then at doubling intervals up to 10 minutes,
            and the first probe answered 200 or 201 sends the waiting jobs, earliest due first.</p>
          ${field({ name: 'retryPolicy.stopOn', label: 'Statuses that end a job at once', value: v.stopOn, hint: 'HTTP statuses from 400 to 599, separated by commas, such as 410: a job answered with one is FAILED at once, with no further retries.', error: o.error })}
        </section>
        ${asyncCompletionCard(v, o.error)}
        <section class="card">
          <h2>Retention</h2>
          ${field({ name: 'retentionDays', label: 'Keep finished jobs for (days)', type: 'number', value: v.retentionDays, hint: `Completed, failed and cancelled jobs are deleted with their attempts this many days after they finished. Empty means the server's default (${o.defaultRetentionDays} days). ${RETENTION_DAYS_RANGE[0]} to ${RETENTION_DAYS_RANGE[1]}.`, error: o.error, attrs: html`min="${RETENTION_DAYS_RANGE[0]}" max="${RETENTION_DAYS_RANGE[1]}"` })}
        </section>
        ${eventsCard(project, v, o.error)}
        <button type="submit" class="button">Save settings</button>`,
      )}`,
  });
}
