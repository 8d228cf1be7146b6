import type { ProjectSummary } from '../../services/manage-service.js';
import type { TeamRow } from '../../store/store.js';
import { errorSummary, field, postForm, time, type FormError, type PageContext } from './components.js';
import { projectStatus, statusBadges, successRate } from './health-views.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

function projectRow(p: ProjectSummary): SafeHtml {
  return html`<tr data-testid="project-${p.project.id}">
    <td data-label="Project"><a href="/projects/${p.project.id}"><strong>${p.project.name}</strong></a></td>
    <td data-label="Status">${statusBadges(projectStatus(p.project, p.health, p.hasJobs))}</td>
    <td data-label="Success, 24 h" class="nowrap">${successRate(p.attempts, p.failedAttempts)}</td>
    <td data-label="Webhook URL" class="clip">${p.project.webhookUrl ?? html`<span class="muted">not set</span>`}</td>
    <td data-label="Created" class="nowrap">${time(p.project.createdAt)}</td>
  </tr>`;
}

export function projectsPage(ctx: PageContext, o: { team: TeamRow; projects: ProjectSummary[]; error?: FormError | null; name?: string; webhookUrl?: string }): SafeHtml {
  return layout({
    title: `${o.team.name}: projects`,
    ctx,
    tab: 'projects',
    body: html`<h1>${o.team.name} <span class="muted small">plan ${o.team.plan}</span></h1>
      <section class="card">
        <h2>Projects</h2>
        ${o.projects.length === 0
          ? html`<p>No projects yet. A project has its own API keys, webhook URL and secrets: create one below.</p>`
          : html`<div class="table-wrap"><table class="table table-cards" aria-label="Projects">
              <thead><tr><th scope="col">Project</th><th scope="col">Status</th><th scope="col">Success, last 24 h</th><th scope="col">Webhook URL</th><th scope="col">Created</th></tr></thead>
              <tbody>${o.projects.map(projectRow)}</tbody>
            </table></div>`}
      </section>
      <section class="card">
        <h2>Create a project</h2>
        ${errorSummary(o.error)}
        ${postForm(
          ctx,
          `/teams/${o.team.id}/projects`,
          html`${field({ name: 'name', label: 'Name', value: o.name ?? '', required: true, error: o.error })}
          ${field({
            name: 'webhookUrl',
            label: 'Webhook URL (optional)',
            type: 'url',
            value: o.webhookUrl ?? '',
            hint: 'Where Punctual POSTs each job. You can set it later.',
            error: o.error,
          })}
          <button type="submit" class="button">Create project</button>`,
        )}
      </section>`,
  });
}

interface UsageView {
  plan: string;
  period: { start: string; end: string };
  jobsCreated: number;
  quota: number | null;
  rateLimit: { requestsPerSecond: number; burst: number | null } | null;
  daily: { date: string; jobsCreated: number }[];
}

interface RateNow {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const CHART = { width: 640, height: 200, top: 16, bottom: 28, left: 40, right: 8 } as const;

/** A bar per day of the month so far, drawn on the server: no script, no external chart library. */
export function dailyChart(daily: UsageView['daily'], daysInMonth: number): SafeHtml {
  const max = Math.max(1, ...daily.map((d) => d.jobsCreated));
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const slot = plotWidth / daysInMonth;
  const total = daily.reduce((sum, d) => sum + d.jobsCreated, 0);
  const bars = daily.map((d, i) => {
    const h = Math.round((d.jobsCreated / max) * plotHeight);
    const x = CHART.left + i * slot + slot * 0.15;
    return html`<rect class="bar" x="${x.toFixed(1)}" y="${CHART.top + plotHeight - h}" width="${(slot * 0.7).toFixed(1)}" height="${h}"><title>${d.date}: ${d.jobsCreated} jobs</title></rect>`;
  });
  const labels = daily
    .filter((_, i) => i === 0 || (i + 1) % 5 === 0)
    .map((d) => {
      const i = Number(d.date.slice(8)) - 1;
      return html`<text class="axis" x="${(CHART.left + i * slot + slot / 2).toFixed(1)}" y="${CHART.height - 8}" text-anchor="middle">${d.date.slice(8)}</text>`;
    });
  return html`<svg class="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-label="Jobs created per day this month: ${total} in ${daily.length} days, at most ${max} in a day">
    <line class="gridline" x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${CHART.top}" y2="${CHART.top}"></line>
    <line class="baseline" x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${CHART.top + plotHeight}" y2="${CHART.top + plotHeight}"></line>
    <text class="axis" x="${CHART.left - 6}" y="${CHART.top + 4}" text-anchor="end">${max}</text>
    <text class="axis" x="${CHART.left - 6}" y="${CHART.top + plotHeight + 4}" text-anchor="end">0</text>
    ${bars}${labels}
  </svg>`;
}

export function usagePage(ctx: PageContext, o: { team: TeamRow; usage: UsageView; rateNow: RateNow | null }): SafeHtml {
  const u = o.usage;
  const daysInMonth = Math.round((Date.parse(u.period.end) - Date.parse(u.period.start)) / 86_400_000);
  const quotaShare = u.quota ? Math.min(100, Math.round((u.jobsCreated / u.quota) * 100)) : null;
  const used = o.rateNow ? o.rateNow.limit - o.rateNow.remaining : 0;
  return layout({
    title: `${o.team.name}: usage`,
    ctx,
    tab: 'usage',
    body: html`<h1>Usage <span class="muted small">${u.period.start.slice(0, 7)} (UTC), plan ${u.plan}</span></h1>
      <div class="grid">
        <section class="card stat">
          <h2>Jobs this month</h2>
          <p class="big" data-testid="jobs-created">${u.jobsCreated.toLocaleString('en-US')}</p>
          ${u.quota === null
            ? html`<p class="muted">No monthly quota on this plan.</p>`
            : html`<p><span data-testid="quota">of ${u.quota.toLocaleString('en-US')}</span> (${quotaShare}%)</p>
                <progress max="${u.quota}" value="${Math.min(u.jobsCreated, u.quota)}" aria-label="Monthly quota used">${quotaShare}%</progress>
                <p class="muted small">Resets ${time(u.period.end)}. Cancelled jobs count.</p>`}
        </section>
        <section class="card stat">
          <h2>Rate limit</h2>
          ${u.rateLimit === null || o.rateNow === null
            ? html`<p class="big">None</p><p class="muted">This plan does not limit the request rate.</p>`
            : html`<p class="big">${u.rateLimit.requestsPerSecond}/s</p>
                <p>bursts of ${u.rateLimit.burst}; right now <strong data-testid="rate-remaining">${o.rateNow.remaining}</strong> of ${o.rateNow.limit} requests left in the burst
                  ${used > 0 ? html`(full again in ${o.rateNow.resetSeconds} s)` : '(full)'}</p>
                <progress max="${o.rateNow.limit}" value="${used}" aria-label="Burst in use">${used}</progress>
                <p class="muted small">As this instance counts it (one count across instances with REDIS_URL).</p>`}
        </section>
      </div>
      <section class="card">
        <h2>Jobs created per day</h2>
        ${dailyChart(u.daily, daysInMonth)}
        <details><summary>As a table</summary>
          <table class="table"><thead><tr><th scope="col">Day (UTC)</th><th scope="col">Jobs created</th></tr></thead>
          <tbody>${u.daily.map((d) => html`<tr><td>${d.date}</td><td>${d.jobsCreated}</td></tr>`)}</tbody></table>
        </details>
      </section>`,
  });
}
