import { JOB_STATUSES, type ProjectRow } from '../../store/store.js';
import { duration, errorSummary, notice, postForm, statusBadge, time, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { bulkBox, filterQuery, type BulkOffer, type JobFilter } from './job-bulk-box.js';
import { sendJobBox, type SendJobValues } from './job-send-box.js';
import { layout } from './layout.js';

export type { BulkOffer, JobFilter } from './job-bulk-box.js';

/** A schedule as the jobs list's filter offers it: by name. */
export interface ScheduleChoice {
  scheduleId: string;
  name: string | null;
  cron: string;
}

/** How many characters of a job's payload (as JSON) the list shows, on one line; its page has it whole. */
const PAYLOAD_PREVIEW_CHARS = 80;

function payloadPreview(payload: unknown): SafeHtml {
  const text = JSON.stringify(payload);
  const shown = text.length <= PAYLOAD_PREVIEW_CHARS ? text : `${text.slice(0, PAYLOAD_PREVIEW_CHARS - 1)}…`;
  return html`<code class="one-line payload-preview" title="${text.length <= 1000 ? text : `${text.slice(0, 999)}…`}">${shown}</code>`;
}

/** An error on one line, cut with an ellipsis; the whole text is its title, and on the job's page. */
function oneLine(text: string | null): SafeHtml {
  if (text === null) return html``;
  return html`<span class="one-line" title="${text}">${text}</span>`;
}

const scheduleLabel = (s: ScheduleChoice) => (s.name ? `${s.name} (${s.cron})` : `${s.cron} · ${s.scheduleId}`);

/** The job service's status body (SPEC section 2), as the templates read it. */
export interface JobView {
  jobId: string;
  status: string;
  scheduledFor: string | null;
  maxRetries: number;
  attemptCount: number;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt?: string;
  failedAt?: string;
  cancelledAt?: string;
  lastError: string | null;
  /** Set on a job a schedule created. */
  scheduleId?: string;
  /** Its tags (SPEC section 14); {} for none. */
  tags: Record<string, string>;
  /** Its concurrencyKey (SPEC section 15); absent for none. */
  concurrencyKey?: string;
  payload: unknown;
}

export interface AttemptView {
  attemptId: string;
  attemptNumber: number;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  statusCode: number | null;
  durationMs: number | null;
  error: string | null;
  responseBody: string | null;
  /** Async completion (SPEC section 11): when the receiver answered 202, and last reported on it ("running" included). */
  acceptedAt: string | null;
  reportedAt: string | null;
  /** While the attempt waits for the receiver's report: the deadline (epoch ms), after which it ends as `timeout`; null otherwise. */
  reportBy: number | null;
}

/** A job's tags as `key:value` chips; nothing for none. */
function tagChips(tags: Record<string, string>): SafeHtml {
  const entries = Object.entries(tags);
  if (entries.length === 0) return html``;
  return html`<ul class="tags" aria-label="Tags">${entries.map(([key, value]) => html`<li><code>${key}:${value}</code></li>`)}</ul>`;
}

const withQuery = (query: string) => (query ? `?${query}` : '');

export function jobsPage(
  ctx: PageContext,
  o: {
    project: ProjectRow;
    jobs: JobView[];
    nextCursor: string | null;
    paged: boolean;
    filter: JobFilter;
    error?: FormError | null;
    /** The bulk actions the filter allows, with their dry runs (job-bulk-box.ts). */
    offers?: BulkOffer[];
    /** The project's schedules, to filter by one by name. */
    schedules?: ScheduleChoice[];
    /** "Send a test job": what was typed and why it was refused. */
    send?: { values: SendJobValues; error: FormError } | null;
    notice?: string | null;
  },
): SafeHtml {
  const { project, filter } = o;
  const schedules = o.schedules ?? [];
  // A schedule deleted since (its jobs keep its id) is still offered, by id.
  const scheduleOptions = filter.scheduleId && !schedules.some((s) => s.scheduleId === filter.scheduleId)
    ? [...schedules, { scheduleId: filter.scheduleId, name: null, cron: 'a schedule no longer here' }]
    : schedules;
  const chosenSchedule = scheduleOptions.find((s) => s.scheduleId === filter.scheduleId);
  // The tags column only where a job of the page has some, or the filter asks for them.
  const tagged = filter.tags.length > 0 || o.jobs.some((j) => Object.keys(j.tags).length > 0);
  // Likewise the key column: only where a job of the page has a concurrencyKey.
  const keyed = o.jobs.some((j) => j.concurrencyKey !== undefined);
  const base = `/projects/${project.id}/jobs`;
  const input = (name: Exclude<keyof JobFilter, 'tags'>, label: string, type: string, hint: string) => html`<div class="field">
      <label for="f-${name}">${label}</label>
      <input id="f-${name}" name="${name}" type="${type}" value="${filter[name]}" aria-describedby="f-${name}-hint"${o.error?.field === name ? html` aria-invalid="true"` : ''}${
        type === 'text' ? html` inputmode="numeric" autocomplete="off" placeholder="YYYY-MM-DD HH:MM"` : ''
      }>
      <p class="hint" id="f-${name}-hint">${hint}</p>
    </div>`;
  // One input per tag of the filter, and an empty one to add a tag with.
  const tagInputs = [...filter.tags, ''].map(
    (tag, i) => html`<div class="field">
      <label for="f-tag-${i}">${i === 0 ? 'Tag' : 'And tag'}</label>
      <input id="f-tag-${i}" name="tag" type="search" value="${tag}" placeholder="key:value" aria-describedby="f-tag-hint"${o.error?.field === 'tag' ? html` aria-invalid="true"` : ''}>
      ${i === filter.tags.length ? html`<p class="hint" id="f-tag-hint">key:value, e.g. order:123. Jobs with every tag given.</p>` : ''}
    </div>`,
  );
  const filtered = Boolean(filter.status || filter.tags.length > 0 || filter.from || filter.to || filter.dueFrom || filter.dueTo || filter.scheduleId || filter.concurrencyKey || filter.jobId);
  return layout({
    title: `${project.name}: jobs`,
    ctx,
    project,
    tab: 'jobs',
    wide: true,
    body: html`<h1>Jobs</h1>
      ${notice(o.notice)}
      <form method="get" action="${base}" class="card filters" aria-label="Filter jobs">
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" name="status">
            <option value="">Any status</option>
            ${JOB_STATUSES.map((s) => html`<option value="${s}"${filter.status === s ? html` selected` : ''}>${s}</option>`)}
          </select>
        </div>
        ${tagInputs}
        ${input('from', 'Created from (UTC)', 'text', 'Inclusive. Such as 2027-01-05 09:30, or a date alone.')}
        ${input('to', 'Created before (UTC)', 'text', 'Exclusive.')}
        ${input('dueFrom', 'Due from (UTC)', 'text', 'Inclusive: QUEUED jobs whose next attempt is due then.')}
        ${input('dueTo', 'Due before (UTC)', 'text', 'Exclusive.')}
        <div class="field">
          <label for="f-scheduleId">Schedule</label>
          <select id="f-scheduleId" name="scheduleId" aria-describedby="f-scheduleId-hint">
            <option value="">Any, or none</option>
            ${scheduleOptions.map((s) => html`<option value="${s.scheduleId}"${filter.scheduleId === s.scheduleId ? html` selected` : ''}>${scheduleLabel(s)}</option>`)}
          </select>
          <p class="hint" id="f-scheduleId-hint">${scheduleOptions.length === 0 ? 'This project has no schedules.' : "The jobs a schedule created."}</p>
        </div>
        ${input('concurrencyKey', 'Key', 'search', 'A concurrencyKey: its jobs alone.')}
        ${input('jobId', 'Find a job by id', 'search', 'job_…: goes straight to that job.')}
        <div class="filter-actions">
          <button type="submit" class="button">Filter</button>
          ${filtered ? html`<a href="${base}" class="button button-secondary">Clear</a>` : ''}
        </div>
      </form>
      ${errorSummary(o.error)}
      ${filter.scheduleId
        ? html`<p>Jobs of <a href="/projects/${project.id}/schedules#${filter.scheduleId}">${chosenSchedule?.name ? html`schedule <strong>${chosenSchedule.name}</strong>` : html`schedule <code>${filter.scheduleId}</code>`}</a>.</p>`
        : ''}
      <div class="list-actions">
        ${sendJobBox(ctx, project, { values: o.send?.values ?? null, error: o.send?.error ?? null })}
        ${bulkBox(ctx, base, filter, o.offers ?? [], project.paused)}
      </div>
      ${o.jobs.length === 0
        ? html`<section class="card empty"><p>${filtered || o.paged ? 'No jobs match these filters.' : html`No jobs yet. Send a test job above, or dispatch one with the curl command on the <a href="/projects/${project.id}/keys">API keys</a> tab.`}</p></section>`
        : html`<div class="table-wrap"><table class="table table-cards" aria-label="Jobs, newest first">
            <thead><tr><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Payload</th><th scope="col">Created (UTC)</th><th scope="col">Scheduled for (UTC)</th>${
              tagged ? html`<th scope="col">Tags</th>` : ''
            }${keyed ? html`<th scope="col">Key</th>` : ''}<th scope="col">Attempts</th><th scope="col">Last error</th></tr></thead>
            <tbody>${o.jobs.map(
              (j) => html`<tr>
                <td data-label="Job"><a href="${base}/${j.jobId}"><code class="job-id">${j.jobId}</code></a></td>
                <td data-label="Status">${statusBadge(j.status)}</td>
                <td data-label="Payload">${payloadPreview(j.payload)}</td>
                <td data-label="Created (UTC)">${time(j.createdAt, false, false)}</td>
                <td data-label="Scheduled for (UTC)">${j.scheduledFor ? time(j.scheduledFor, false, false) : html`<span class="muted">at once</span>`}</td>
                ${tagged ? html`<td data-label="Tags">${tagChips(j.tags)}</td>` : ''}
                ${keyed ? html`<td data-label="Key">${j.concurrencyKey !== undefined ? html`<code class="concurrency-key">${j.concurrencyKey}</code>` : ''}</td>` : ''}
                <td data-label="Attempts">${j.attemptCount}</td>
                <td data-label="Last error">${oneLine(j.lastError)}</td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      <nav class="pager" aria-label="Pages">
        ${o.paged ? html`<a href="${base}${withQuery(filterQuery(filter))}">← Newest</a>` : ''}
        ${o.nextCursor ? html`<a href="${base}${withQuery(filterQuery(filter, o.nextCursor))}" rel="next">Older jobs →</a>` : ''}
      </nav>`,
  });
}

interface TimelineEntry {
  at: string;
  label: string;
  detail?: SafeHtml | string;
}

/**
 * The states a job went through, rebuilt from its timestamps and attempts (the store keeps no
 * separate history): queued, each attempt sent and answered, then where it ended or waits.
 */
function timeline(job: JobView, attempts: AttemptView[]): TimelineEntry[] {
  const entries: TimelineEntry[] = [{ at: job.createdAt, label: 'QUEUED', detail: job.scheduledFor ? html`to run at ${time(job.scheduledFor)}` : 'to run at once' }];
  for (const a of attempts) {
    entries.push({ at: a.startedAt, label: 'STARTED', detail: `attempt ${a.attemptNumber} sent` });
    if (a.acceptedAt) entries.push({ at: a.acceptedAt, label: 'accepted', detail: `attempt ${a.attemptNumber}: HTTP 202, the receiver reports the result` });
    // A "running" report (a final one is the attempt's end, below).
    if (a.reportedAt && a.outcome === null) entries.push({ at: a.reportedAt, label: 'still running', detail: `reported by the receiver on attempt ${a.attemptNumber}` });
    if (a.finishedAt) {
      entries.push({
        at: a.finishedAt,
        label: a.outcome === 'success' ? 'COMPLETED' : 'attempt failed',
        detail: `${a.outcome}${a.statusCode !== null ? ` (HTTP ${a.statusCode})` : ''}`,
      });
    }
  }
  if (job.failedAt) entries.push({ at: job.failedAt, label: 'FAILED', detail: 'no retries left' });
  if (job.cancelledAt) entries.push({ at: job.cancelledAt, label: 'CANCELLED' });
  if (job.status === 'QUEUED' && job.nextAttemptAt && (attempts.length > 0 || job.scheduledFor)) {
    entries.push({ at: job.nextAttemptAt, label: 'next attempt due', detail: 'waiting' });
  }
  // A retry of a FAILED job and duplicate COMPLETED marks collapse into the order of time.
  return entries
    .filter((e, i, all) => !(e.label === 'COMPLETED' && all.findIndex((x) => x.label === 'COMPLETED') !== i))
    .sort((a, b) => a.at.localeCompare(b.at));
}

/**
 * A STARTED job whose attempt the receiver accepted with 202 (SPEC section 11): since when it
 * waits for the report, the last "running" report, and when it times out. `now` tells a deadline
 * just passed (the lease rescue ends the attempt as timeout on its next pass).
 */
function awaitingReport(job: JobView, attempts: AttemptView[], now: number): SafeHtml {
  const waiting = job.status === 'STARTED' ? attempts.find((a) => a.reportBy !== null) : undefined;
  if (!waiting || waiting.reportBy === null) return html``;
  const overdue = waiting.reportBy <= now;
  return html`<section class="alert alert-note" aria-labelledby="awaiting-title" data-testid="awaiting-report">
    <h2 id="awaiting-title">Waiting for the receiver's report</h2>
    <p>Attempt ${waiting.attemptNumber} was accepted (HTTP 202): the receiver reports its result with the attempt's <code>callbackToken</code>.</p>
    <dl class="facts">
      <dt>Accepted</dt><dd>${waiting.acceptedAt ? time(waiting.acceptedAt) : html`<span class="muted">—</span>`}</dd>
      ${waiting.reportedAt ? html`<dt>Last report</dt><dd>${time(waiting.reportedAt)} (still running)</dd>` : ''}
      <dt>${overdue ? 'Timed out at' : 'Times out at'}</dt><dd>${time(waiting.reportBy)}${
        overdue ? ' (no report came: the attempt is about to end as timeout)' : ' (then the attempt ends as timeout and is retried as the retry policy says)'
      }</dd>
    </dl>
  </section>`;
}

export function jobPage(
  ctx: PageContext,
  o: {
    project: ProjectRow;
    job: JobView;
    /** The W3C trace id its deliveries continue (their traceparent), to look the job up in a tracing backend. */
    traceId?: string | null;
    attempts: AttemptView[];
    now: number;
    error?: FormError | null;
    notice?: string | null;
    rescheduleValue?: string;
  },
): SafeHtml {
  const { project, job } = o;
  const base = `/projects/${project.id}/jobs/${job.jobId}`;
  const queued = job.status === 'QUEUED';
  const awaiting = job.status === 'STARTED' && o.attempts.some((a) => a.reportBy !== null);
  // The attempts table shows when the receiver accepted and reported only for a job that has any.
  const asyncColumns = o.attempts.some((a) => a.acceptedAt !== null || a.reportedAt !== null);
  return layout({
    title: `Job ${job.jobId}`,
    ctx,
    project,
    tab: 'jobs',
    body: html`<p class="crumbs"><a href="/projects/${project.id}/jobs">← All jobs</a></p>
      <h1 class="job-title"><code>${job.jobId}</code> ${statusBadge(job.status)}</h1>
      ${notice(o.notice)}
      ${errorSummary(o.error)}
      ${awaitingReport(job, o.attempts, o.now)}
      <div class="grid">
        <section class="card">
          <h2>Schedule</h2>
          <dl class="facts">
            <dt>Created</dt><dd>${time(job.createdAt)}</dd>
            <dt>Scheduled for</dt><dd>${job.scheduledFor ? time(job.scheduledFor) : 'at once'}</dd>
            ${job.scheduleId
              ? html`<dt>Created by</dt><dd><a href="/projects/${project.id}/schedules#${job.scheduleId}">schedule <code>${job.scheduleId}</code></a>
                  (<a href="/projects/${project.id}/jobs?scheduleId=${encodeURIComponent(job.scheduleId)}">its jobs</a>)</dd>`
              : ''}
            <dt>Next attempt</dt><dd>${job.nextAttemptAt ? time(job.nextAttemptAt) : html`<span class="muted">none</span>`}</dd>
            <dt>Tags</dt><dd>${Object.keys(job.tags).length > 0
              ? html`${tagChips(job.tags)} <a href="/projects/${project.id}/jobs?${filterQuery({ status: '', tags: Object.entries(job.tags).map(([k, v]) => `${k}:${v}`), from: '', to: '', dueFrom: '', dueTo: '', scheduleId: '', concurrencyKey: '', jobId: '' })}">jobs with the same tags</a>`
              : html`<span class="muted">none</span>`}</dd>
            ${job.concurrencyKey !== undefined
              ? html`<dt>Concurrency key</dt><dd><code class="concurrency-key">${job.concurrencyKey}</code>
                  (<a href="/projects/${project.id}/jobs?concurrencyKey=${encodeURIComponent(job.concurrencyKey)}">its jobs</a>)</dd>`
              : ''}
            <dt>Attempts</dt><dd>${job.attemptCount} (at most ${job.maxRetries} ${job.maxRetries === 1 ? 'retry' : 'retries'} after the first)</dd>
            ${job.completedAt ? html`<dt>Completed</dt><dd>${time(job.completedAt)}</dd>` : ''}
            ${job.failedAt ? html`<dt>Failed</dt><dd>${time(job.failedAt)}</dd>` : ''}
            ${job.cancelledAt ? html`<dt>Cancelled</dt><dd>${time(job.cancelledAt)}</dd>` : ''}
            ${job.lastError ? html`<dt>Last error</dt><dd>${job.lastError}</dd>` : ''}
            ${o.traceId ? html`<dt>Trace</dt><dd><code title="The trace id its deliveries carry in traceparent">${o.traceId}</code></dd>` : ''}
          </dl>
        </section>
        <section class="card">
          <h2>Actions</h2>
          ${queued
            ? html`${postForm(
                ctx,
                `${base}/reschedule`,
                html`<div class="field${o.error?.field === 'scheduledFor' ? ' field-error' : ''}">
                  <label for="f-scheduledFor">Run at (UTC)</label>
                  <input id="f-scheduledFor" name="scheduledFor" type="text" inputmode="numeric" autocomplete="off" placeholder="YYYY-MM-DD HH:MM" value="${o.rescheduleValue ?? ''}" aria-describedby="f-scheduledFor-hint">
                  <p class="hint" id="f-scheduledFor-hint">In UTC, such as 2027-01-05 09:30. Leave empty to run it at once.</p>
                </div>
                <button type="submit" class="button">Reschedule</button>`,
              )}
              <details class="confirm">
                <summary class="button button-danger">Cancel job…</summary>
                <div class="confirm-box">
                  <p>Cancel this job? It will never be delivered. This cannot be undone.</p>
                  ${postForm(ctx, `${base}/cancel`, html`<button type="submit" class="button button-danger">Cancel job</button>`)}
                </div>
              </details>`
            : job.status === 'FAILED'
              ? postForm(ctx, `${base}/retry`, html`<p>Queue it again to run at once, with a fresh retry budget.</p><button type="submit" class="button">Retry job</button>`)
              : html`<p class="muted">No actions: ${job.status === 'COMPLETED' || job.status === 'CANCELLED' ? 'this job is final.' : awaiting ? "the receiver accepted it and reports the result." : 'a delivery is in progress.'}</p>`}
        </section>
      </div>
      <section class="card">
        <h2>Payload</h2>
        <pre class="code">${JSON.stringify(job.payload, null, 2)}</pre>
      </section>
      <section class="card">
        <h2>Timeline</h2>
        <ol class="timeline">${timeline(job, o.attempts).map(
          (e) => html`<li><span class="when">${time(e.at, true)}</span> <strong>${e.label}</strong> ${e.detail ? html`<span class="muted">${e.detail}</span>` : ''}</li>`,
        )}</ol>
      </section>
      <section class="card">
        <h2>Attempts</h2>
        ${o.attempts.length === 0
          ? html`<p class="muted">No attempt yet.</p>`
          : html`<div class="table-wrap"><table class="table table-cards" aria-label="Attempts, oldest first">
              <thead><tr><th scope="col">#</th><th scope="col">Started</th>${asyncColumns ? html`<th scope="col">Accepted</th><th scope="col">Reported</th>` : ''}<th scope="col">Outcome</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Error</th><th scope="col">Response body</th></tr></thead>
              <tbody>${o.attempts.map(
                (a) => html`<tr class="attempt">
                  <td data-label="#">${a.attemptNumber}</td>
                  <td data-label="Started">${time(a.startedAt, true)}</td>
                  ${asyncColumns
                    ? html`<td data-label="Accepted">${a.acceptedAt ? time(a.acceptedAt, true) : html`<span class="muted">—</span>`}</td>
                      <td data-label="Reported">${a.reportedAt ? time(a.reportedAt, true) : html`<span class="muted">—</span>`}</td>`
                    : ''}
                  <td data-label="Outcome">${a.outcome
                    ? html`<span class="badge badge-${a.outcome === 'success' ? 'completed' : 'failed'}">${a.outcome}</span>`
                    : html`<span class="muted">${a.reportBy !== null ? "waiting for the receiver's report" : 'in flight'}</span>`}</td>
                  <td data-label="Status">${a.statusCode ?? '—'}</td>
                  <td data-label="Duration">${duration(a.durationMs)}</td>
                  <td data-label="Error">${a.error ?? ''}</td>
                  <td data-label="Response body"><pre class="code small">${a.responseBody ?? ''}</pre></td>
                </tr>`,
              )}</tbody>
            </table></div>`}
      </section>`,
  });
}
