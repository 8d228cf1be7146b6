import type { apiKeyView } from '../../services/views/manage-views.js';
import { ASYNC_COMPLETION_TIMEOUT_RANGE, DELIVERY_CONCURRENCY_RANGE, DELIVERY_RATE_RANGE, DELIVERY_TIMEOUT_RANGE } from '../../services/project-settings.js';
import { EVENTS_FORMATS, type EventsFormat, type ProjectRow } from '../../store/store.js';
import { copyable, duration, emptyState, errorSummary, field, notice, postForm, time, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';
import { RETENTION_DAYS_RANGE } from '../../retention.js';

type ApiKeyView = ReturnType<typeof apiKeyView>;

/** The command that dispatches a project's first job: its own URL, and its key when we have it in clear. */
function firstJobCurl(publicUrl: string, key: string | null, prefix: string | null): string {
  const bearer = key ?? `${prefix ?? 'pk_'}…  (your API key)`;
  return `curl -X POST ${publicUrl}/api/jobs/dispatch \\
  -H "Authorization: Bearer ${bearer}" \\
  -H "Content-Type: application/json" \\
  -d '{"payload": {"hello": "world"}}'`;
}

interface KeysOptions {
  project: ProjectRow;
  keys: ApiKeyView[];
  hasJobs: boolean;
  publicUrl: string;
  /** A key just created: its full text, shown this once. */
  createdKey?: { name: string; key: string } | null;
  error?: FormError | null;
  notice?: string | null;
}

function keyRow(ctx: PageContext, project: ProjectRow, key: ApiKeyView): SafeHtml {
  return html`<tr>
    <td data-label="Name">${key.name}</td>
    <td data-label="Prefix"><code>${key.prefix}…</code></td>
    <td data-label="Created">${time(key.createdAt)}</td>
    <td data-label="Last used">${time(key.lastUsedAt)}</td>
    <td data-label="Status">${key.revokedAt
      ? html`<span class="badge badge-cancelled">revoked</span> ${time(key.revokedAt)}`
      : html`<details class="confirm">
          <summary class="button button-small button-danger">Revoke…</summary>
          <div class="confirm-box">
            <p>Revoke <strong>${key.name}</strong>? Requests with this key answer 401 from then on. This cannot be undone.</p>
            ${postForm(ctx, `/projects/${project.id}/keys/${key.keyId}/revoke`, html`<button type="submit" class="button button-danger">Revoke ${key.name}</button>`)}
          </div>
        </details>`}</td>
  </tr>`;
}

/** Pause (with a confirmation) while deliveries run; while paused, the banner above every tab resumes. */
export function deliveriesCard(ctx: PageContext, project: ProjectRow): SafeHtml {
  return html`<section class="card" aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Deliveries</h2>
    ${project.paused
      ? html`<p><span class="badge badge-paused">paused</span> Jobs wait, QUEUED, until you resume them with <strong>Resume deliveries</strong> above.</p>`
      : html`<p><span class="badge badge-completed">running</span> Jobs are sent to the webhook when they are due.</p>
        <details class="confirm">
          <summary class="button button-danger">Pause deliveries…</summary>
          <div class="confirm-box">
            <p>Pause deliveries of <strong>${project.name}</strong>? Dispatches are still accepted and schedules still create jobs, but nothing is sent:
              jobs wait, QUEUED, until you resume. A delivery already under way finishes.</p>
            ${postForm(ctx, `/projects/${project.id}/pause`, html`<button type="submit" class="button button-danger">Pause deliveries</button>`)}
          </div>
        </details>`}
  </section>`;
}

/** A key just created, in clear, this once. */
export function createdKeyCard(createdKey: { name: string; key: string } | null | undefined): SafeHtml | '' {
  if (!createdKey) return '';
  return html`<section class="card card-highlight" aria-labelledby="new-key-title">
    <h2 id="new-key-title">New API key “${createdKey.name}”</h2>
    <p><strong>Copy it now: it is shown this once.</strong> Only a hash is kept.</p>
    ${copyable('new-key', createdKey.key, 'the API key')}
  </section>`;
}

/**
 * A project without jobs yet: the curl command that dispatches its first one, with the key just
 * created in it (else the prefix of one, as a placeholder), or how to get there without a webhook URL.
 */
export function firstJobCard(o: { project: ProjectRow; keys: ApiKeyView[]; publicUrl: string; createdKey?: { name: string; key: string } | null; keysOnPage: boolean }): SafeHtml {
  const { project } = o;
  const activeKey = o.keys.find((k) => k.revokedAt === null) ?? null;
  const curl = firstJobCurl(o.publicUrl, o.createdKey?.key ?? null, activeKey?.prefix ?? null);
  const createOne = o.keysOnPage ? 'create a key below' : html`create one on the <a href="/projects/${project.id}/keys">API keys</a> tab`;
  return emptyState(
    'Dispatch your first job',
    html`${project.webhookUrl
      ? html`<p>Run this to queue a job; Punctual POSTs it to <code>${project.webhookUrl}</code> at once.
          ${o.createdKey ? '' : html` Put the API key you saved in place of the placeholder (or ${createOne}: it is shown once).`}</p>
          <div class="copyable"><pre id="first-curl" class="code">${curl}</pre>
          <button type="button" class="button button-small" data-copy="first-curl" aria-label="Copy the curl command" hidden>Copy</button></div>
          <p>Then watch it on the <a href="/projects/${project.id}/jobs">Jobs</a> page.</p>`
      : html`<p>This project has no webhook URL yet, so a dispatch would answer <code>WEBHOOK_NOT_CONFIGURED</code>.
          <a href="/projects/${project.id}/webhook">Set the webhook URL</a> first, then come back for the curl command.</p>`}`,
  );
}

export function projectFactsCard(project: ProjectRow): SafeHtml {
  return html`<section class="card">
    <h2>Project</h2>
    <dl class="facts">
      <dt>Project id</dt><dd><code>${project.id}</code></dd>
      <dt>Webhook URL</dt><dd>${project.webhookUrl ?? html`<span class="muted">not set</span>`} <a href="/projects/${project.id}/webhook">change</a></dd>
      <dt>Created</dt><dd>${time(project.createdAt)}</dd>
    </dl>
  </section>`;
}

/** A project's API keys: list, create (the new key shown once), revoke. */
export function keysPage(ctx: PageContext, o: KeysOptions): SafeHtml {
  const { project } = o;
  return layout({
    title: `${project.name}: API keys`,
    ctx,
    project,
    tab: 'keys',
    body: html`<h1>API keys</h1>
      ${notice(o.notice)}
      ${createdKeyCard(o.createdKey)}
      ${o.hasJobs ? '' : firstJobCard({ ...o, keysOnPage: true })}
      <section class="card">
        <h2>Keys</h2>
        ${o.keys.length === 0
          ? html`<p>No keys yet. Create one for each environment (production, staging…).</p>`
          : html`<div class="table-wrap"><table class="table table-cards">
              <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th></tr></thead>
              <tbody>${o.keys.map((k) => keyRow(ctx, project, k))}</tbody>
            </table></div>`}
        <h3>Create a key</h3>
        ${errorSummary(o.error)}
        ${postForm(
          ctx,
          `/projects/${project.id}/keys`,
          html`${field({ name: 'name', label: 'Key name', hint: 'For you: where the key is used, e.g. "production".', required: true, error: o.error })}
          <button type="submit" class="button">Create key</button>`,
          { class: 'inline-form' },
        )}
      </section>`,
  });
}

interface SecretView {
  webhookSecret: string;
  createdAt: string;
  expiresAt: string | null;
}

export interface TestDeliveryView {
  outcome: string;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
  at: number;
}

export function webhookPage(
  ctx: PageContext,
  o: {
    project: ProjectRow;
    secrets: SecretView[];
    revealed: boolean;
    testResult?: TestDeliveryView | null;
    error?: FormError | null;
    notice?: string | null;
    webhookUrl?: string;
  },
): SafeHtml {
  const { project } = o;
  const masked = (s: string) => `whsec_${'•'.repeat(12)}${s.slice(-4)}`;
  return layout({
    title: `${project.name}: webhook`,
    ctx,
    project,
    tab: 'webhook',
    body: html`<h1>Webhook</h1>
      ${notice(o.notice)}
      <section class="card">
        <h2>Webhook URL</h2>
        ${errorSummary(o.error)}
        ${postForm(
          ctx,
          `/projects/${project.id}/webhook`,
          html`${field({
            name: 'webhookUrl',
            label: 'URL Punctual POSTs each job to',
            type: 'url',
            value: o.webhookUrl ?? project.webhookUrl ?? '',
            hint: 'An absolute http(s) URL. Leave empty to unset it (dispatches then answer WEBHOOK_NOT_CONFIGURED).',
            error: o.error,
          })}
          <button type="submit" class="button">Save URL</button>`,
        )}
      </section>
      <section class="card">
        <h2>Test delivery</h2>
        <p>Sends a real, signed request with payload <code>{"test": true}</code> to the URL above. No job is created.</p>
        ${postForm(ctx, `/projects/${project.id}/webhook/test`, html`<button type="submit" class="button"${project.webhookUrl ? '' : html` disabled`}>Send a test delivery</button>`)}
        ${o.testResult
          ? html`<div class="result result-${o.testResult.outcome === 'success' ? 'ok' : 'bad'}" role="status" data-testid="test-result">
              <dl class="facts">
                <dt>Outcome</dt><dd>${o.testResult.outcome}</dd>
                <dt>Status</dt><dd>${o.testResult.statusCode ?? '—'}</dd>
                <dt>Sent at</dt><dd>${time(o.testResult.at)}</dd>
                <dt>Time taken</dt><dd>${duration(o.testResult.durationMs)}</dd>
                ${o.testResult.error ? html`<dt>Error</dt><dd>${o.testResult.error}</dd>` : ''}
              </dl>
              <h3>Response body</h3>
              <pre class="code">${o.testResult.responseBody ?? '(empty)'}</pre>
            </div>`
          : ''}
      </section>
      <section class="card">
        <h2>Signing secrets</h2>
        <p>Every delivery is signed (<code>webhook-signature</code>, Standard Webhooks) with each secret below, and carries the newest in
          <code>Authorization: Bearer</code>. After a rotation the previous secret keeps signing for 24 hours, so receivers can switch over.</p>
        <div class="table-wrap"><table class="table table-cards">
          <thead><tr><th scope="col">Secret</th><th scope="col">Created</th><th scope="col">Signs until</th></tr></thead>
          <tbody>${o.secrets.map(
            (s, i) => html`<tr>
              <td data-label="Secret">${o.revealed ? copyable(`secret-${i}`, s.webhookSecret, `secret ${i + 1}`) : html`<code class="secret" data-testid="masked-secret">${masked(s.webhookSecret)}</code>`}</td>
              <td data-label="Created">${time(s.createdAt)}</td>
              <td data-label="Signs until">${s.expiresAt ? time(s.expiresAt) : html`<span class="badge badge-completed">newest</span>`}</td>
            </tr>`,
          )}</tbody>
        </table></div>
        <div class="actions">
          ${o.revealed ? html`<a class="button button-secondary" href="/projects/${project.id}/webhook">Hide secrets</a>` : postForm(ctx, `/projects/${project.id}/webhook/reveal`, html`<button type="submit" class="button button-secondary">Reveal secrets</button>`)}
          <details class="confirm">
            <summary class="button button-danger">Rotate secret…</summary>
            <div class="confirm-box">
              <p>Make a new secret? It signs and goes in <code>Authorization</code> at once; the current one keeps signing for 24 hours${o.secrets.length > 1 ? ', and the older one still signing stops now' : ''}.</p>
              ${postForm(ctx, `/projects/${project.id}/webhook/rotate`, html`<button type="submit" class="button button-danger">Rotate now</button>`)}
            </div>
          </details>
        </div>
      </section>`,
  });
}

export interface SettingsValues {
  maxRetries: string;
  initialDelayMs: string;
  factor: string;
  maxDelayMs: string;
  deliveryTimeoutMs: string;
  deliveryConcurrency: string;
  deliveryRatePerSecond: string;
  acceptAny2xx: boolean;
  asyncCompletion: boolean;
  asyncCompletionTimeoutMs: string;
  retentionDays: string;
  eventsUrl: string;
  eventsFormat: string;
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
  const [min, max] = ASYNC_COMPLETION_TIMEOUT_RANGE;
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
    ${field({
      name: 'asyncCompletionTimeoutMs',
      label: 'Wait for a report at most (ms)',
      type: 'number',
      value: v.asyncCompletionTimeoutMs,
      required: true,
      hint: `${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')} (7 days). From the 202, or from the last "running" report; past it the attempt ends as timeout and is retried as the retry policy says.`,
      error,
      attrs: html`min="${min}" max="${max}"`,
    })}
  </section>`;
}

export function settingsPage(
  ctx: PageContext,
  o: { project: ProjectRow; values: SettingsValues; maxRetriesCap: number; defaultRetentionDays: number; error?: FormError | null; notice?: string | null },
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
        html`<section class="card">
          <h2>Retry policy</h2>
          ${field({ name: 'retryPolicy.maxRetries', label: 'Retries per job', type: 'number', value: v.maxRetries, hint: `Used when a dispatch does not say; empty means the plan's cap (${o.maxRetriesCap}). At most ${o.maxRetriesCap}.`, error: o.error, attrs: html`min="0" max="${o.maxRetriesCap}"` })}
          ${field({ name: 'retryPolicy.initialDelayMs', label: 'First retry after (ms)', type: 'number', value: v.initialDelayMs, required: true, error: o.error, attrs: html`min="0"` })}
          ${field({ name: 'retryPolicy.factor', label: 'Backoff factor', type: 'number', value: v.factor, required: true, hint: 'Each wait is the previous one times this (plus up to 10% jitter).', error: o.error, attrs: html`min="1" step="any"` })}
          ${field({ name: 'retryPolicy.maxDelayMs', label: 'Longest wait between attempts (ms)', type: 'number', value: v.maxDelayMs, required: true, error: o.error, attrs: html`min="0"` })}
        </section>
        <section class="card">
          <h2>Each attempt</h2>
          ${field({ name: 'deliveryTimeoutMs', label: 'Timeout per attempt (ms)', type: 'number', value: v.deliveryTimeoutMs, required: true, hint: `${DELIVERY_TIMEOUT_RANGE[0]} to ${DELIVERY_TIMEOUT_RANGE[1]}; the receiver must answer within this.`, error: o.error, attrs: html`min="${DELIVERY_TIMEOUT_RANGE[0]}" max="${DELIVERY_TIMEOUT_RANGE[1]}"` })}
          ${field({ name: 'deliveryConcurrency', label: 'Deliveries in flight at once', type: 'number', value: v.deliveryConcurrency, required: true, hint: `${DELIVERY_CONCURRENCY_RANGE[0]} to ${DELIVERY_CONCURRENCY_RANGE[1]}, for this project.`, error: o.error, attrs: html`min="${DELIVERY_CONCURRENCY_RANGE[0]}" max="${DELIVERY_CONCURRENCY_RANGE[1]}"` })}
          ${field({ name: 'deliveryRatePerSecond', label: 'Attempts started per second at most', type: 'number', value: v.deliveryRatePerSecond, hint: `Empty: no limit. ${DELIVERY_RATE_RANGE[0]} to ${DELIVERY_RATE_RANGE[1].toLocaleString('en-US')}; jobs over the rate wait QUEUED. Shared by every instance with REDIS_URL, else each instance keeps it alone.`, error: o.error, attrs: html`min="${DELIVERY_RATE_RANGE[0]}" max="${DELIVERY_RATE_RANGE[1]}" step="any"` })}
          <div class="field field-check">
            <input id="f-acceptAny2xx" name="acceptAny2xx" type="checkbox" value="true"${v.acceptAny2xx ? html` checked` : ''}>
            <label for="f-acceptAny2xx">Count any 2xx answer as success (otherwise only 200 and 201)</label>
          </div>
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
