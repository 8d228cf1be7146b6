import type { apiKeyView } from '../../services/views/manage-views.js';
import {
  DELIVERY_WINDOW_MINUTES,
  JOB_COUNT_LIMIT,
  LATENESS_WINDOW_MINUTES,
  windowStart,
  type FailedAttempt,
  type ProjectOverview,
} from '../../store/overview-store.js';
import { JOB_STATUSES, type JobStatus, type KeyLoad, type ProjectRow } from '../../store/store.js';
import { duration, notice, statusBadge, time, type PageContext } from './components.js';
import { deliveryChart, hourlyTotals } from './delivery-chart.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';
import { createdKeyCard, deliveriesCard, firstJobCard, projectFactsCard } from './project-pages.js';
import { healthBanner, percent } from './health-views.js';
import type { ProjectHealth } from '../../services/project-health.js';

interface OverviewOptions {
  project: ProjectRow;
  overview: ProjectOverview & { at: number };
  health: ProjectHealth;
  keys: ReturnType<typeof apiKeyView>[];
  /** Its busiest concurrency keys (SPEC section 15); none shows no card. */
  busiestKeys?: KeyLoad[];
  publicUrl: string;
  /** A key just created with the project: its full text, shown this once. */
  createdKey?: { name: string; key: string } | null;
  notice?: string | null;
}

/** What each state means, in a few words (docs/job-states.md has the rest). */
const STATUS_MEANING: Record<JobStatus, string> = {
  QUEUED: 'waiting for their time or a retry',
  DISPATCHED: 'claimed, request not yet sent',
  STARTED: 'sent, waiting for the answer',
  COMPLETED: 'answered 200 or 201',
  FAILED: 'every allowed attempt failed',
  CANCELLED: 'cancelled while queued',
};

const count = (n: number) => n.toLocaleString('en-US');
const jobCount = (n: number) => (n > JOB_COUNT_LIMIT ? `${count(JOB_COUNT_LIMIT)}+` : count(n));

function statusCounts(project: ProjectRow, counts: Record<JobStatus, number>): SafeHtml {
  const jobs = `/projects/${project.id}/jobs`;
  return html`<section class="card" aria-labelledby="jobs-now-title">
    <h2 id="jobs-now-title">Jobs now</h2>
    <ul class="status-counts">${JOB_STATUSES.map(
      (status) => html`<li><a href="${jobs}?status=${status}" data-testid="count-${status}">
          ${statusBadge(status)} <strong class="count">${jobCount(counts[status])}</strong>
          <span class="muted small">${STATUS_MEANING[status]}</span></a></li>`,
    )}</ul>
    <p class="hint">Jobs kept in the store (finished ones for the project's retention), counted up to ${count(JOB_COUNT_LIMIT)} per status.</p>
  </section>`;
}

function successCard(attempts: number, failed: number): SafeHtml {
  return html`<section class="card stat" aria-labelledby="success-title">
    <h2 id="success-title">Success rate <span class="muted small">last 24 hours</span></h2>
    ${attempts === 0
      ? html`<p class="big" data-testid="success-rate">—</p><p class="muted">No attempts finished in the last 24 hours.</p>`
      : html`<p class="big" data-testid="success-rate">${percent(attempts - failed, attempts)}</p>
          <p>${count(attempts - failed)} of ${count(attempts)} attempts succeeded${failed > 0 ? html`; <strong>${count(failed)} failed</strong>` : ''}.</p>`}
  </section>`;
}

function latenessCard(lateness: ProjectOverview['lateness']): SafeHtml {
  return html`<section class="card stat" aria-labelledby="lateness-title">
    <h2 id="lateness-title">Lateness <span class="muted small">last hour</span></h2>
    ${lateness.p50Ms === null || lateness.p99Ms === null
      ? html`<p class="big" data-testid="lateness">—</p><p class="muted">No first attempt started in the last hour.</p>`
      : html`<p class="big" data-testid="lateness"><span class="muted small">p50</span> ${duration(lateness.p50Ms)} <span class="muted small">p99</span> ${duration(lateness.p99Ms)}</p>
          <p>How long after its due time a job's first attempt started, over ${count(lateness.firstAttempts)} first ${lateness.firstAttempts === 1 ? 'attempt' : 'attempts'}.</p>
          <p class="hint">Each figure is an upper bound, at most a fifth above the true value.</p>`}
  </section>`;
}

function deliveriesChartCard(overview: OverviewOptions['overview']): SafeHtml {
  const from = windowStart(overview.at, DELIVERY_WINDOW_MINUTES);
  const hours = hourlyTotals(overview.deliveryMinutes);
  return html`<section class="card" aria-labelledby="chart-title">
    <h2 id="chart-title">Attempts per minute <span class="muted small">last 24 hours, UTC</span></h2>
    ${overview.deliveryMinutes.length === 0
      ? html`<p class="muted" data-testid="chart-empty">No attempts finished in the last 24 hours: the chart fills in as jobs are delivered.</p>`
      : html`${deliveryChart({ minutes: overview.deliveryMinutes, from, windowMinutes: DELIVERY_WINDOW_MINUTES })}
          <p class="legend"><span class="key key-ok"></span> succeeded <span class="key key-failed"></span> failed
            <span class="muted small">(each bar is a minute's attempts; the top left figure is the busiest minute's)</span></p>
          <details><summary>As a table, by hour</summary>
            <table class="table"><thead><tr><th scope="col">Hour (UTC)</th><th scope="col">Attempts</th><th scope="col">Failed</th></tr></thead>
            <tbody>${hours.map((h) => html`<tr><td>${time(h.hour)}</td><td>${count(h.attempts)}</td><td>${count(h.failedAttempts)}</td></tr>`)}</tbody></table>
          </details>`}
  </section>`;
}

/** An error as long as a receiver's report may make it (1,000 characters) would fill a phone's screen: the job's page has it whole. */
const ERROR_SHOWN_CHARS = 160;
const clipped = (text: string) => (text.length <= ERROR_SHOWN_CHARS ? text : `${text.slice(0, ERROR_SHOWN_CHARS - 1)}…`);

function failureRow(project: ProjectRow, f: FailedAttempt): SafeHtml {
  return html`<tr>
    <td data-label="Job"><a href="/projects/${project.id}/jobs/${f.jobId}"><code>${f.jobId}</code></a></td>
    <td data-label="Finished">${time(f.finishedAt)}</td>
    <td data-label="Attempt">${f.attemptNumber}</td>
    <td data-label="Outcome"><span class="badge badge-failed">${f.outcome}</span></td>
    <td data-label="Status">${f.statusCode ?? html`<span class="muted">—</span>`}</td>
    <td data-label="Error" class="clip">${f.error === null ? html`<span class="muted">—</span>` : clipped(f.error)}</td>
  </tr>`;
}

function failuresCard(project: ProjectRow, failures: FailedAttempt[]): SafeHtml {
  return html`<section class="card" aria-labelledby="failures-title">
    <h2 id="failures-title">Last failed attempts <span class="muted small">last 24 hours, newest first</span></h2>
    ${failures.length === 0
      ? html`<p class="muted" data-testid="failures-empty">No failed attempts in the last 24 hours.</p>`
      : html`<div class="table-wrap"><table class="table table-cards" aria-labelledby="failures-title">
          <thead><tr><th scope="col">Job</th><th scope="col">Finished</th><th scope="col">Attempt</th><th scope="col">Outcome</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead>
          <tbody>${failures.map((f) => failureRow(project, f))}</tbody>
        </table></div>`}
  </section>`;
}

/** The keys with the most jobs waiting, each a link to its jobs; only for a project with a keyed job unfinished. */
function busiestKeysCard(project: ProjectRow, keys: KeyLoad[]): SafeHtml {
  if (keys.length === 0) return html``;
  return html`<section class="card" aria-labelledby="busiest-keys-title" data-testid="busiest-keys">
    <h2 id="busiest-keys-title">Busiest keys <span class="muted small">most jobs waiting first</span></h2>
    <div class="table-wrap"><table class="table table-cards" aria-labelledby="busiest-keys-title">
      <thead><tr><th scope="col">Key</th><th scope="col">Waiting</th><th scope="col">Running</th></tr></thead>
      <tbody>${keys.map(
        (k) => html`<tr>
          <td data-label="Key"><a href="/projects/${project.id}/jobs?concurrencyKey=${encodeURIComponent(k.key)}"><code class="concurrency-key">${k.key}</code></a></td>
          <td data-label="Waiting">${count(k.waiting)}</td>
          <td data-label="Running">${count(k.running)}</td>
        </tr>`,
      )}</tbody>
    </table></div>
  </section>`;
}

/**
 * A project's first tab: at a glance, whether its deliveries are healthy (success rate, lateness,
 * attempts per minute, the last failures) and how its jobs stand now; a new project is shown how
 * to dispatch its first job. Then pausing and the project's facts.
 */
export function overviewPage(ctx: PageContext, o: OverviewOptions): SafeHtml {
  const { project, overview } = o;
  const attempts = overview.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0);
  const failed = overview.deliveryMinutes.reduce((sum, m) => sum + m.failedAttempts, 0);
  const hasJobs = JOB_STATUSES.some((status) => overview.jobsByStatus[status] > 0);
  // A project that never had a job: how to dispatch one, and what will be here then; no rows of zeros.
  const health = hasJobs
    ? html`<p class="muted small" data-testid="as-of">As of ${time(overview.at)}. The last 24 hours are the ${count(DELIVERY_WINDOW_MINUTES)} minutes up to and including this one; the last hour, the ${LATENESS_WINDOW_MINUTES}.</p>
        <div class="grid">${successCard(attempts, failed)}${latenessCard(overview.lateness)}</div>
        ${deliveriesChartCard(overview)}
        ${statusCounts(project, overview.jobsByStatus)}
        ${failuresCard(project, overview.recentFailures)}
        ${busiestKeysCard(project, o.busiestKeys ?? [])}`
    : html`<section class="card" data-testid="overview-empty"><h2>Delivery health</h2>
        <p>No jobs yet. Once there are, this page shows at a glance how their deliveries go: the success rate and attempts per minute over
          the last 24 hours, how late first attempts start, the jobs by status and the last failed attempts with their errors.</p></section>`;
  return layout({
    title: project.name,
    ctx,
    project,
    tab: 'overview',
    body: html`<h1>${project.name}</h1>
      ${notice(o.notice)}
      ${healthBanner(ctx, project, o.health)}
      ${createdKeyCard(o.createdKey)}
      ${hasJobs ? '' : firstJobCard(ctx, { ...o, open: true })}
      ${health}
      ${deliveriesCard(ctx, project, o.health)}
      ${projectFactsCard(project)}`,
  });
}
