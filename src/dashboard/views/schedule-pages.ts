import type { ProjectRow } from '../../store/store.js';
import { emptyState, errorSummary, notice, postForm, time, zonedTime, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

/** The schedule service's view (SPEC section 9), as the templates read it. */
export interface ScheduleView {
  scheduleId: string;
  name: string | null;
  cron: string;
  timezone: string;
  catchUp: string;
  overlap: string;
  paused: boolean;
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastJobId: string | null;
  skippedCount: number;
}

function scheduleRow(ctx: PageContext, project: ProjectRow, s: ScheduleView, words: string, nextRuns: string[]): SafeHtml {
  const base = `/projects/${project.id}/schedules/${s.scheduleId}`;
  return html`<tr id="${s.scheduleId}">
    <td data-label="Schedule"><strong>${s.name ?? s.scheduleId}</strong><br><code>${s.cron}</code><br><span class="cron-words">${words}</span></td>
    <td data-label="Next runs">${s.paused
      ? html`<span class="muted">paused</span>`
      : nextRuns.length > 0
        ? html`<ol class="runs">${nextRuns.map((run) => html`<li>${zonedTime(run, s.timezone)}</li>`)}</ol>`
        : html`<span class="muted">none</span>`}</td>
    <td data-label="Last job">${s.lastJobId
      ? html`<a href="/projects/${project.id}/jobs/${s.lastJobId}"><code>${s.lastJobId}</code></a><br>${time(s.lastRunAt)}`
      : html`<span class="muted">none yet</span>`}${s.skippedCount > 0 ? html`<br><span class="muted">${s.skippedCount} skipped (overlap)</span>` : ''}</td>
    <td data-label="Actions"><div class="actions row-actions">
      <a class="button button-small button-secondary" href="/projects/${project.id}/jobs?scheduleId=${encodeURIComponent(s.scheduleId)}" aria-label="Jobs of ${s.name ?? s.scheduleId}">Jobs</a>
      ${postForm(ctx, `${base}/${s.paused ? 'resume' : 'pause'}`, html`<button type="submit" class="button button-small">${s.paused ? 'Resume' : 'Pause'}</button>`)}
      ${postForm(ctx, `${base}/trigger`, html`<button type="submit" class="button button-small">Run now</button>`)}
      <details class="confirm">
        <summary class="button button-small button-danger">Delete…</summary>
        <div class="confirm-box">
          <p>Delete <strong>${s.name ?? s.scheduleId}</strong>? It fires no more, and its jobs still waiting are cancelled. This cannot be undone.</p>
          ${postForm(ctx, `${base}/delete`, html`<button type="submit" class="button button-danger">Delete schedule</button>`)}
        </div>
      </details>
    </div></td>
  </tr>`;
}

/** A project's recurring schedules with their next five runs and last job; pause, resume, run now, delete. */
export function schedulesPage(
  ctx: PageContext,
  o: { project: ProjectRow; schedules: { schedule: ScheduleView; words: string; nextRuns: string[] }[]; notice?: string | null; error?: FormError | null },
): SafeHtml {
  const { project } = o;
  return layout({
    title: `${project.name}: schedules`,
    ctx,
    project,
    tab: 'schedules',
    body: html`<div class="page-head"><h1>Schedules</h1><a class="button" href="/projects/${project.id}/schedules/new">New schedule</a></div>
      ${notice(o.notice)}
      ${errorSummary(o.error)}
      ${o.schedules.length === 0
        ? emptyState(
            'No schedules yet',
            html`<p>A schedule creates a job at each time its cron expression says, in its own time zone.
              <a href="/projects/${project.id}/schedules/new">Create one</a>: the form shows its next runs before you save it.
              (The API's <code>POST /api/schedules</code> does the same.)</p>`,
          )
        : html`<div class="table-wrap"><table class="table table-cards" aria-label="Schedules">
            <thead><tr><th scope="col">Schedule</th><th scope="col">Next runs, on its clock</th><th scope="col">Last job</th><th scope="col">Actions</th></tr></thead>
            <tbody>${o.schedules.map(({ schedule, words, nextRuns }) => scheduleRow(ctx, project, schedule, words, nextRuns))}</tbody>
          </table></div>`}`,
  });
}
