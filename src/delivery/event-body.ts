/** The body of an event POSTed to a project's eventsUrl (SPEC section 10): JSON, or one readable line for Slack. */
import type { EventRow } from '../store/event-store.js';
import type { ProjectRow } from '../store/store.js';
import { formatTimestamp } from '../timestamp.js';

export function eventBody(event: EventRow, project: Pick<ProjectRow, 'name' | 'eventsFormat'>): string {
  const data = JSON.parse(event.data) as Record<string, unknown>;
  if (project.eventsFormat === 'slack') return JSON.stringify({ text: slackText(event, data, project.name) });
  return JSON.stringify({ eventId: event.id, type: event.type, occurredAt: formatTimestamp(event.occurredAt), projectId: event.projectId, data });
}

/** Slack's mrkdwn reads &, < and > as markup: a project's name or an error text is shown as written. */
const escapeSlack = (text: unknown): string => String(text).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function slackText(event: EventRow, data: Record<string, unknown>, projectName: string): string {
  const project = `[Punctual] ${escapeSlack(projectName)}`;
  switch (event.type) {
    case 'job.failed': {
      const attempts = Number(data.attemptCount);
      const schedule = data.scheduleId ? ` (schedule ${escapeSlack(data.scheduleId)})` : '';
      return `${project}: job ${escapeSlack(data.jobId)} failed after ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}${schedule}: ${escapeSlack(data.lastError)}`;
    }
    case 'webhook.failing':
      return `${project}: the webhook is failing: ${escapeSlack(data.consecutiveFailures)} attempts in a row failed since ${escapeSlack(data.since)}; last error: ${escapeSlack(data.lastError)}`;
    case 'webhook.held':
      return `${project}: the webhook is failing and its jobs are held: ${escapeSlack(data.consecutiveFailures)} attempts in a row failed since ${escapeSlack(data.since)}; last error: ${escapeSlack(data.lastError)}. Punctual probes it and resumes by itself`;
    case 'webhook.recovered': {
      const held = typeof data.heldFor === 'number' ? `; its jobs were held for ${Math.round(data.heldFor / 1000)} s and now go out` : '';
      return `${project}: the webhook recovered (it had been failing since ${escapeSlack(data.failingSince)})${held}`;
    }
    case 'job.completed': {
      const attempts = Number(data.attemptCount);
      return `${project}: job ${escapeSlack(data.jobId)} completed after ${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`;
    }
    case 'schedule.skipped':
      return `${project}: schedule ${escapeSlack(data.scheduleId)} skipped its run at ${escapeSlack(data.fireAt)}: its previous job had not finished`;
  }
}
