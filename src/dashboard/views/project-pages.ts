import type { apiKeyView } from '../../services/views/manage-views.js';
import type { ProjectRow } from '../../store/store.js';
import { copyable, duration, errorSummary, field, notice, postForm, time, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';
import type { ProjectHealth } from '../../services/project-health.js';

type ApiKeyView = ReturnType<typeof apiKeyView>;

/** The command that dispatches a project's first job: its own URL, and a key (in clear just after it was made, else masked). */
function firstJobCurl(publicUrl: string, key: string): string {
  return `curl -X POST ${publicUrl}/api/jobs/dispatch \\
  -H "Authorization: Bearer ${key}" \\
  -H "Content-Type: application/json" \\
  -d '{"payload": {"hello": "world"}}'`;
}

/** The name of a key made from the first-job card for its command. */
export const CURL_KEY_NAME = 'curl';

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

/**
 * Pause (with a confirmation) while deliveries run; while paused, the banner above every tab
 * resumes. Running is green only while the receiver answers: a failing one says so.
 */
export function deliveriesCard(ctx: PageContext, project: ProjectRow, health: ProjectHealth): SafeHtml {
  return html`<section class="card" aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Deliveries</h2>
    ${project.paused
      ? html`<p><span class="badge badge-paused">paused</span> Jobs wait, QUEUED, until you resume them with <strong>Resume deliveries</strong> above.</p>`
      : html`${health.state === 'healthy'
          ? html`<p><span class="badge badge-completed">running</span> Jobs are sent to the webhook when they are due.</p>`
          : html`<p><span class="badge badge-failing">running, failing</span> Jobs are sent when they are due, and the receiver fails them (see above).</p>`}
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
 * The curl command that dispatches a job, always reachable (the API keys tab): open on a project
 * without jobs yet, folded away once it has some. It carries the key just made, in clear, or else
 * the newest key masked (its full text was shown once) with the way to make a new one for it.
 * Without a webhook URL it says so first: the command would answer WEBHOOK_NOT_CONFIGURED.
 */
export function firstJobCard(
  ctx: PageContext,
  o: { project: ProjectRow; keys: ApiKeyView[]; publicUrl: string; createdKey?: { name: string; key: string } | null; open: boolean },
): SafeHtml {
  const { project } = o;
  const activeKey = [...o.keys].reverse().find((k) => k.revokedAt === null) ?? null;
  const key = o.createdKey?.key ?? (activeKey ? `${activeKey.prefix}${'•'.repeat(29)}` : 'pk_…');
  const makeKey = postForm(
    ctx,
    `/projects/${project.id}/keys`,
    html`<input type="hidden" name="name" value="${CURL_KEY_NAME}"><button type="submit" class="button button-small button-secondary">Make a new key for this command</button>`,
    { class: 'inline-action' },
  );
  const body = html`${project.webhookUrl
      ? html`<p>Run this to queue a job; Punctual POSTs it to <code>${project.webhookUrl}</code> at once.</p>`
      : html`<div class="alert alert-note" data-testid="curl-needs-webhook">This project has no webhook URL yet, so this command would answer <code>WEBHOOK_NOT_CONFIGURED</code>.
          <a href="/projects/${project.id}/webhook">Set the webhook URL</a> first; the command stays here.</div>`}
    <div class="copyable"><pre id="first-curl" class="code" data-testid="first-curl">${firstJobCurl(o.publicUrl, key)}</pre>
    <button type="button" class="button button-small" data-copy="first-curl" aria-label="Copy the curl command" hidden>Copy</button></div>
    ${o.createdKey
      ? ''
      : activeKey
        ? html`<div class="curl-key"><p>The key is masked: the full text of <strong>${activeKey.name}</strong> (<code>${activeKey.prefix}…</code>) was shown once, when it was made.
            Paste it in place of the dots, or make a new key and this command is shown with it, ready to run.</p>${makeKey}</div>`
        : html`<div class="curl-key"><p>This project has no active key: make one and this command is shown with it, ready to run.</p>${makeKey}</div>`}
    <p>Then watch it on the <a href="/projects/${project.id}/jobs">Jobs</a> page, or send a test job from there.</p>`;
  if (o.open) return html`<section class="card first-job" aria-labelledby="first-job-title" data-testid="first-job"><h2 id="first-job-title">Dispatch your first job</h2>${body}</section>`;
  return html`<details class="card first-job" data-testid="first-job"><summary><strong>The curl command that dispatches a job</strong></summary>${body}</details>`;
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
      ${firstJobCard(ctx, { ...o, open: !o.hasJobs || Boolean(o.createdKey) })}
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
