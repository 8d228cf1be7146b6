/**
 * A project's delivery health where people land: a status on the projects list, and on the
 * overview a banner that says what is wrong and what to do while the receiver fails (SPEC sections
 * 10 and 13). Each health state is one case of the switches below.
 */
import type { ProjectHealth } from '../../services/project-health.js';
import type { ProjectRow } from '../../store/store.js';
import { postForm, time, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';

/** A share as a percentage with one decimal, rounded down: 99.96% with a failure shows 99.9%, never 100%. */
export function percent(part: number, whole: number): string {
  return `${(Math.floor((part / whole) * 1000) / 10).toFixed(part === whole || part === 0 ? 0 : 1)}%`;
}

const count = (n: number) => n.toLocaleString('en-US');

/** What the projects list says of a project: its state in a word (a badge), then why, in a few. */
interface StatusWord {
  label: string;
  tone: 'ok' | 'bad' | 'warn' | 'quiet';
  detail: SafeHtml | string;
}

/** The badges of a project's state: its health first (a failing receiver is what needs a person), then pause and set-up. */
export function projectStatus(project: ProjectRow, health: ProjectHealth, hasJobs: boolean): StatusWord[] {
  const words: StatusWord[] = [];
  switch (health.state) {
    case 'failing':
      words.push({
        label: 'failing',
        tone: 'bad',
        detail: html`${count(health.consecutiveFailures)} attempts in a row failed${health.since !== null ? html` since ${time(health.since)}` : ''}`,
      });
      break;
    case 'held':
      words.push({
        label: 'held',
        tone: 'bad',
        detail: html`the receiver failed ${count(health.consecutiveFailures)} times in a row; jobs wait${health.nextProbeAt !== null ? html`, next probe ${time(health.nextProbeAt)}` : ''}`,
      });
      break;
    case 'healthy':
      break;
  }
  if (project.paused) words.push({ label: 'paused', tone: 'warn', detail: 'nothing is sent until it is resumed' });
  if (project.webhookUrl === null) words.push({ label: 'no webhook URL', tone: 'warn', detail: 'dispatches answer WEBHOOK_NOT_CONFIGURED' });
  if (words.length === 0) words.push(hasJobs ? { label: 'delivering', tone: 'ok', detail: '' } : { label: 'no jobs yet', tone: 'quiet', detail: '' });
  return words;
}

const TONE_CLASS: Record<StatusWord['tone'], string> = { ok: 'badge-completed', bad: 'badge-failing', warn: 'badge-paused', quiet: '' };

/** The badges, then what each means; one block, so that a phone's card keeps it beside its label. */
export function statusBadges(words: StatusWord[]): SafeHtml {
  return html`<div class="status-words">${words.map((w, i) => html`${i > 0 ? ' ' : ''}<span class="badge ${TONE_CLASS[w.tone]}">${w.label}</span>`)}${words
    .filter((w) => w.detail !== '')
    .map((w) => html`<br><span class="muted small">${w.detail}</span>`)}</div>`;
}

/** The success rate of the last 24 hours, or a dash without attempts. */
export function successRate(attempts: number, failedAttempts: number): SafeHtml {
  if (attempts === 0) return html`<span class="muted">— <span class="small">no attempts</span></span>`;
  return html`<span><strong class="${failedAttempts === attempts ? 'rate-bad' : failedAttempts > 0 ? 'rate-warn' : ''}">${percent(attempts - failedAttempts, attempts)}</strong>
    <span class="muted small">of ${count(attempts)} ${attempts === 1 ? 'attempt' : 'attempts'}</span></span>`;
}

/**
 * Above a project's overview while its receiver fails: what is wrong, since when, the last error,
 * and what to do about it. Nothing while it is healthy.
 */
export function healthBanner(ctx: PageContext, project: ProjectRow, health: ProjectHealth): SafeHtml {
  switch (health.state) {
    case 'healthy':
      return html``;
    case 'failing':
      return html`<section class="alert alert-failing" aria-labelledby="failing-title" data-testid="failing-banner">
        <h2 id="failing-title">Deliveries are failing</h2>
        <p>The last <strong>${count(health.consecutiveFailures)} attempts in a row</strong> failed${health.since !== null ? html`, since ${time(health.since)}` : ''}.
          ${health.lastError ? html`The last error: <code>${health.lastError}</code>.` : ''}</p>
        <p>Jobs are retried as the retry policy says, and fail for good when their retries run out.
          Check that the receiver at <code>${project.webhookUrl ?? 'the webhook URL'}</code> is up and answers 200 or 201, then send a test delivery.
          ${project.paused ? '' : 'Pausing deliveries keeps the jobs waiting, QUEUED, with their retries intact, until you resume.'}</p>
        <div class="actions">
          ${postForm(ctx, `/projects/${project.id}/webhook/test`, html`<button type="submit" class="button">Send a test delivery</button>`)}
          <a class="button button-secondary" href="/projects/${project.id}/webhook">Check the webhook URL</a>
          <a class="button button-secondary" href="/projects/${project.id}/jobs?status=FAILED">Failed jobs</a>
        </div>
      </section>`;
    case 'held':
      return html`<section class="alert alert-failing" aria-labelledby="held-title" data-testid="failing-banner">
        <h2 id="held-title">Deliveries are held: the receiver is failing</h2>
        <p>The last <strong>${count(health.consecutiveFailures)} attempts in a row</strong> failed, and since ${time(health.since!)} no new attempt starts
          (holdOnFailure). ${health.lastError ? html`The last error: <code>${health.lastError}</code>.` : ''}</p>
        <p>Due jobs wait QUEUED with their retries intact; new jobs are still accepted.
          Punctual probes <code>${project.webhookUrl ?? 'the webhook URL'}</code>${health.nextProbeAt !== null ? html` (next ${time(health.nextProbeAt)})` : ''},
          and the first probe answered 200 or 201 ends the hold: the waiting jobs then go out, earliest due first.
          ${project.paused ? 'The project is also paused: it is not probed until you resume it.' : ''}</p>
        <div class="actions">
          ${postForm(ctx, `/projects/${project.id}/webhook/probe`, html`<button type="submit" class="button" data-testid="probe-now">Probe now</button>`)}
          <a class="button button-secondary" href="/projects/${project.id}/webhook">Check the webhook URL</a>
          <a class="button button-secondary" href="/projects/${project.id}/jobs?status=QUEUED">Waiting jobs</a>
        </div>
      </section>`;
  }
}
