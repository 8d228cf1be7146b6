import type { ProjectRow } from '../../store/store.js';
import { emptyState, statusBadge, time, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

/** The event service's view (SPEC section 10), as the templates read it. */
export interface EventView {
  eventId: string;
  type: string;
  occurredAt: string;
  data: Record<string, unknown>;
  status: string;
  attemptCount: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  deliveredAt: string | null;
}

/** A field of an event's data when it is a string (the data is JSON: read it as such, never trust its shape). */
const text = (data: Record<string, unknown>, name: string): string | null => (typeof data[name] === 'string' ? (data[name] as string) : null);
const count = (data: Record<string, unknown>, name: string): number | null => (typeof data[name] === 'number' ? (data[name] as number) : null);
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What happened, in a sentence, with links to the job or schedule it is about. */
function summary(project: ProjectRow, event: EventView): SafeHtml {
  const d = event.data;
  const jobs = `/projects/${project.id}/jobs`;
  const scheduleLink = (scheduleId: string) => html`<a href="/projects/${project.id}/schedules#${scheduleId}">schedule <code>${scheduleId}</code></a>`;
  switch (event.type) {
    case 'job.failed': {
      const jobId = text(d, 'jobId');
      const attempts = count(d, 'attemptCount');
      const scheduleId = text(d, 'scheduleId');
      const lastError = text(d, 'lastError');
      return html`Job ${jobId ? html`<a href="${jobs}/${encodeURIComponent(jobId)}"><code>${jobId}</code></a>` : '?'} failed${
        attempts !== null ? ` after ${plural(attempts, 'attempt', 'attempts')}` : ''
      }${scheduleId ? html` (created by ${scheduleLink(scheduleId)})` : ''}${lastError ? html`: <span class="muted">${lastError}</span>` : ''}`;
    }
    case 'webhook.failing': {
      const failures = count(d, 'consecutiveFailures');
      const since = text(d, 'since');
      const lastError = text(d, 'lastError');
      return html`${failures !== null ? plural(failures, 'attempt', 'attempts') : 'Attempts'} in a row failed${since ? html` since ${time(since)}` : ''}${
        lastError ? html`: <span class="muted">${lastError}</span>` : ''
      }`;
    }
    case 'webhook.held': {
      const failures = count(d, 'consecutiveFailures');
      const lastError = text(d, 'lastError');
      return html`Held: ${failures !== null ? plural(failures, 'attempt', 'attempts') : 'attempts'} in a row failed; no new attempt starts until a probe succeeds${
        lastError ? html`: <span class="muted">${lastError}</span>` : ''
      }`;
    }
    case 'webhook.recovered': {
      const since = text(d, 'failingSince');
      const heldFor = count(d, 'heldFor');
      return html`Deliveries succeed again${since ? html` (failing since ${time(since)})` : ''}${heldFor !== null ? `; held for ${Math.round(heldFor / 1000)} s, the waiting jobs now go out` : ''}`;
    }
    case 'job.completed': {
      const jobId = text(d, 'jobId');
      const attempts = count(d, 'attemptCount');
      return html`Job ${jobId ? html`<a href="${jobs}/${encodeURIComponent(jobId)}"><code>${jobId}</code></a>` : '?'} completed${attempts !== null ? ` after ${plural(attempts, 'attempt', 'attempts')}` : ''}`;
    }
    case 'schedule.skipped': {
      const scheduleId = text(d, 'scheduleId');
      const fireAt = text(d, 'fireAt');
      return html`${scheduleId ? scheduleLink(scheduleId) : 'A schedule'} skipped its fire${fireAt ? html` at ${time(fireAt)}` : ''}: its previous job was still running (overlap: skip)`;
    }
    default:
      return html`<span class="muted">${JSON.stringify(d)}</span>`;
  }
}

function delivery(event: EventView): SafeHtml {
  if (event.status === 'NOT_SENT') return html`<span class="muted">not sent</span>`;
  if (event.status === 'DELIVERED') return html`${statusBadge(event.status)} <span class="muted">${time(event.deliveredAt)}</span>`;
  if (event.status === 'PENDING' && event.nextAttemptAt) {
    return html`${statusBadge(event.status)} <span class="muted">${event.attemptCount > 0 ? 'next attempt' : 'due'} ${time(event.nextAttemptAt)}</span>`;
  }
  return statusBadge(event.status);
}

/** A project's recent events, newest first, with how their delivery to the Events URL stands. */
export function eventsPage(ctx: PageContext, o: { project: ProjectRow; events: EventView[]; nextCursor: string | null; paged: boolean }): SafeHtml {
  const { project } = o;
  const base = `/projects/${project.id}/events`;
  const settings = `/projects/${project.id}/settings`;
  const noUrl = project.eventsUrl === null;
  return layout({
    title: `${project.name}: events`,
    ctx,
    project,
    tab: 'events',
    body: html`<h1>Events</h1>
      ${noUrl
        ? o.events.length === 0 && !o.paged
          ? emptyState(
              'No events yet',
              html`<p>Events (a job failing for good, the webhook failing, held and recovering, a schedule skipping a fire) are listed here as they happen.
                Set an Events URL in <a href="${settings}">Delivery settings</a> and Punctual also POSTs each one there, signed as deliveries.</p>`,
            )
          : html`<p class="alert alert-note">No Events URL is set: events are listed here but not sent. <a href="${settings}">Set one in Delivery settings</a>.</p>`
        : html`<p>Sent to <code>${project.eventsUrl}</code> as ${project.eventsFormat === 'slack' ? 'Slack-compatible text' : 'JSON'}
            (<a href="${settings}">change</a>)${project.eventTypes ? html`: ${project.eventTypes.join(', ')} only` : ''}. Kept 30 days.</p>`}
      ${o.events.length === 0
        ? noUrl && !o.paged
          ? ''
          : html`<section class="card empty"><p>${o.paged ? 'No older events.' : 'No events yet. They appear here when a job fails for good, the webhook keeps failing or recovers, or a schedule skips a fire.'}</p></section>`
        : html`<div class="table-wrap"><table class="table table-cards events" aria-label="Events, newest first">
            <thead><tr><th scope="col">Event</th><th scope="col">Occurred</th><th scope="col">What happened</th><th scope="col">Delivery</th><th scope="col">Attempts</th><th scope="col">Last error</th></tr></thead>
            <tbody>${o.events.map(
              (e) => html`<tr class="event" id="${e.eventId}">
                <td data-label="Event"><div><strong>${e.type}</strong><br><code class="small">${e.eventId}</code></div></td>
                <td data-label="Occurred">${time(e.occurredAt)}</td>
                <td data-label="What happened" class="clip"><div>${summary(project, e)}</div></td>
                <td data-label="Delivery"><div>${delivery(e)}</div></td>
                <td data-label="Attempts">${e.attemptCount}</td>
                <td data-label="Last error" class="clip">${e.lastError ?? ''}</td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      <nav class="pager" aria-label="Pages">
        ${o.paged ? html`<a href="${base}">← Newest</a>` : ''}
        ${o.nextCursor ? html`<a href="${base}?cursor=${encodeURIComponent(o.nextCursor)}" rel="next">Older events →</a>` : ''}
      </nav>`,
  });
}
