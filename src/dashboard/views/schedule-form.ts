/**
 * The form that creates a recurring schedule (SPEC section 9), with what it will do before it is
 * saved: the expression in words ("every day at 02:30, Europe/Paris") and its next runs on the
 * clock of its own zone. Without script the Preview button shows them; with it they follow typing.
 */
import type { ProjectRow } from '../../store/store.js';
import { errorSummary, field, postForm, zonedTime, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

export interface ScheduleFormValues {
  name: string;
  cron: string;
  timezone: string;
  payload: string;
  maxRetries: string;
  catchUp: string;
  overlap: string;
  tags: string;
}

export const NEW_SCHEDULE: ScheduleFormValues = { name: '', cron: '', timezone: 'UTC', payload: '{}', maxRetries: '', catchUp: 'latest', overlap: 'allow', tags: '' };

/** What the expression typed does: its words and next runs, or why it cannot run, or nothing typed yet. */
export type SchedulePreview = { runs: string[]; words: string; timezone: string } | { error: string } | null;

const CATCH_UP: [string, string][] = [
  ['latest', 'latest: one job for the most recent instant missed'],
  ['none', 'none: skip the instants missed'],
  ['all', 'all: one job per instant missed (at most 100), oldest first'],
];
const OVERLAP: [string, string][] = [
  ['allow', "allow: fire even while the previous job isn't final"],
  ['skip', 'skip: no job while the previous one is not final (counted, and a schedule.skipped event)'],
];

/** The preview block's contents; also the fragment the form's script fetches as the expression is typed. */
export function schedulePreview(preview: SchedulePreview): SafeHtml {
  if (preview === null) return html`<p class="muted">Type a cron expression to see what it does and its next runs.</p>`;
  if ('error' in preview) return html`<p class="error" data-testid="preview-error">${preview.error}</p>`;
  return html`<p class="cron-words" data-testid="cron-words"><strong>${preview.words}</strong></p>
    <p class="hint">Its next ${preview.runs.length} runs, on the clock of ${preview.timezone} (hover for UTC):</p>
    <ol class="runs" data-testid="preview-runs">${preview.runs.map((run) => html`<li>${zonedTime(run, preview.timezone)}</li>`)}</ol>`;
}

function select(name: string, label: string, value: string, options: [string, string][], hint: string): SafeHtml {
  return html`<div class="field">
    <label for="f-${name}">${label}</label>
    <p class="hint" id="f-${name}-hint">${hint}</p>
    <select id="f-${name}" name="${name}" aria-describedby="f-${name}-hint">
      ${options.map(([option, text]) => html`<option value="${option}"${option === value ? html` selected` : ''}>${text}</option>`)}
    </select>
  </div>`;
}

export function scheduleFormPage(
  ctx: PageContext,
  o: { project: ProjectRow; values: ScheduleFormValues; preview: SchedulePreview; zones: readonly string[]; error?: FormError | null },
): SafeHtml {
  const { project, values: v, error } = o;
  const textareaField = (name: 'payload' | 'tags', label: string, hint: string, rows: number) => {
    const failed = error?.field === name;
    return html`<div class="field${failed ? ' field-error' : ''}">
      <label for="f-${name}">${label}</label>
      <p class="hint" id="f-${name}-hint">${hint}</p>
      ${failed ? html`<p class="error" id="f-${name}-error">${error!.message}</p>` : ''}
      <textarea id="f-${name}" name="${name}" rows="${rows}" spellcheck="false" aria-describedby="f-${name}-hint${failed ? ` f-${name}-error` : ''}"${failed ? html` aria-invalid="true"` : ''}>${v[name]}</textarea>
    </div>`;
  };
  return layout({
    title: `${project.name}: new schedule`,
    ctx,
    project,
    tab: 'schedules',
    body: html`<p class="crumbs"><a href="/projects/${project.id}/schedules">← Schedules</a></p>
      <h1>New schedule</h1>
      ${errorSummary(error)}
      ${project.webhookUrl === null
        ? html`<div class="alert alert-note">This project has no webhook URL: a schedule would be refused (<code>WEBHOOK_NOT_CONFIGURED</code>).
            <a href="/projects/${project.id}/webhook">Set the webhook URL</a> first.</div>`
        : ''}
      ${postForm(
        ctx,
        `/projects/${project.id}/schedules`,
        html`<section class="card">
          <h2>When</h2>
          ${field({ name: 'cron', label: 'Cron expression', value: v.cron, required: true, error, hint: '5 fields: minute hour day-of-month month day-of-week (6 with seconds first), or @hourly, @daily, @weekly, @monthly. "30 2 * * *" is every day at 02:30; "*/15 9-17 * * MON-FRI" every 15 minutes in office hours.', attrs: html`autocomplete="off" spellcheck="false"` })}
          ${field({ name: 'timezone', label: 'Time zone', value: v.timezone, required: true, error, hint: 'An IANA zone name, such as Europe/Paris. Runs are wall-clock times there, daylight saving included.', attrs: html`list="zones" autocomplete="off" spellcheck="false"` })}
          <datalist id="zones">${o.zones.map((zone) => html`<option value="${zone}"></option>`)}</datalist>
          <div class="preview" id="schedule-preview" aria-live="polite" data-live-url="/projects/${project.id}/schedules/preview" data-live-fields="cron timezone">${schedulePreview(o.preview)}</div>
          <button type="submit" name="intent" value="preview" class="button button-secondary" formnovalidate>Preview next runs</button>
        </section>
        <section class="card">
          <h2>What</h2>
          ${field({ name: 'name', label: 'Name (optional)', value: v.name, error, hint: 'For you: the schedules list and the jobs filter show it.' })}
          ${textareaField('payload', 'Payload (JSON object)', 'Each job it creates carries this payload; at most 10,240 bytes.', 4)}
          ${field({ name: 'maxRetries', label: 'Retries per job (optional)', type: 'number', value: v.maxRetries, error, hint: "Empty: the project's retry policy, as a dispatch without maxRetries.", attrs: html`min="0"` })}
          ${textareaField('tags', 'Tags (optional)', 'One key:value per line, such as report:nightly. Its jobs carry them.', 2)}
        </section>
        <section class="card">
          <h2>When runs are missed or overlap</h2>
          ${select('catchUp', 'Missed runs (catchUp)', v.catchUp, CATCH_UP, 'Instants missed while the service was down or the schedule paused.')}
          ${select('overlap', 'Overlap', v.overlap, OVERLAP, "When a run comes while the job of the previous one isn't final yet.")}
        </section>
        <button type="submit" name="intent" value="create" class="button">Create schedule</button>`,
      )}`,
  });
}
