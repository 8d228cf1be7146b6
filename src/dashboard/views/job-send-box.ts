/**
 * "Send a test job" on the jobs page: a real dispatch (counted like any), with the payload and time
 * typed, through the same service as POST /api/jobs/dispatch; its page opens next. Without a
 * webhook URL it says where to set one instead.
 */
import type { ProjectRow } from '../../store/store.js';
import { postForm, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';

/** What the form held when the service refused it, to show it again beside the reason. */
export interface SendJobValues {
  payload: string;
  scheduledFor: string;
}

export const DEFAULT_TEST_PAYLOAD = '{"test": true}';

/** The fields of the form a refusal may name (others are shown above the list). */
export const SEND_JOB_FIELDS = ['payload', 'scheduledFor', 'send'];

export function sendJobBox(ctx: PageContext, project: ProjectRow, o: { values?: SendJobValues | null; error?: FormError | null }): SafeHtml {
  const error = o.error && SEND_JOB_FIELDS.includes(o.error.field ?? '') ? o.error : null;
  const v = o.values ?? { payload: DEFAULT_TEST_PAYLOAD, scheduledFor: '' };
  const failed = (name: string) => error?.field === name;
  const fieldError = (name: string) => (failed(name) ? html`<p class="error" id="f-send-${name}-error">${error!.message}</p>` : '');
  const described = (name: string) => `f-send-${name}-hint${failed(name) ? ` f-send-${name}-error` : ''}`;
  return html`<details class="send-job"${error ? html` open` : ''}>
    <summary class="button button-secondary">Send a test job…</summary>
    <div class="card send-job-box" data-testid="send-job">
      ${project.webhookUrl === null
        ? html`<p>This project has no webhook URL, so a job would be refused (<code>WEBHOOK_NOT_CONFIGURED</code>).
            <a href="/projects/${project.id}/webhook">Set the webhook URL</a> first.</p>`
        : postForm(
            ctx,
            `/projects/${project.id}/jobs/send`,
            html`<p>Queues a real job, exactly as <code>POST /api/jobs/dispatch</code> would, and opens its page: it is POSTed to
                <code>${project.webhookUrl}</code>, retried as the project's retry policy says, and counts toward the month's jobs.</p>
              ${error && error.field === 'send' ? html`<div class="alert alert-error" role="alert">${error.message}</div>` : ''}
              <div class="field${failed('payload') ? ' field-error' : ''}">
                <label for="f-send-payload">Payload (JSON object)</label>
                <p class="hint" id="f-send-payload-hint">What your receiver gets as <code>payload</code>; at most 10,240 bytes.</p>
                ${fieldError('payload')}
                <textarea id="f-send-payload" name="payload" rows="4" spellcheck="false" aria-describedby="${described('payload')}"${failed('payload') ? html` aria-invalid="true"` : ''}>${v.payload}</textarea>
              </div>
              <div class="field${failed('scheduledFor') ? ' field-error' : ''}">
                <label for="f-send-scheduledFor">Run at (UTC)</label>
                <p class="hint" id="f-send-scheduledFor-hint">Such as 2027-01-05 09:30. Leave empty to run it at once.</p>
                ${fieldError('scheduledFor')}
                <input id="f-send-scheduledFor" name="scheduledFor" type="text" inputmode="numeric" autocomplete="off" placeholder="YYYY-MM-DD HH:MM" value="${v.scheduledFor}" aria-describedby="${described('scheduledFor')}"${failed('scheduledFor') ? html` aria-invalid="true"` : ''}>
              </div>
              <button type="submit" class="button">Send the job</button>`,
          )}
    </div>
  </details>`;
}
