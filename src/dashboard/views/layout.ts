import type { ProjectRow, TeamRow } from '../../store/store.js';
import { csrfField, postForm, type PageContext } from './components.js';
import { html, type Renderable, type SafeHtml } from './html.js';

/** A project's tabs, each at /projects/:projectId plus its path. */
export const PROJECT_TABS = {
  overview: '',
  keys: '/keys',
  webhook: '/webhook',
  settings: '/settings',
  jobs: '/jobs',
  schedules: '/schedules',
  events: '/events',
} as const;
export type ProjectTab = keyof typeof PROJECT_TABS;

interface LayoutOptions {
  title: string;
  /** Null on the login page: no navigation. */
  ctx: PageContext | null;
  /** The project whose tabs are shown. */
  project?: ProjectRow | null;
  /** Which tab is current, for aria-current. */
  tab?: 'projects' | 'usage' | 'account' | ProjectTab;
  /** A page whose table has many columns (the jobs list): the whole width of a large screen. */
  wide?: boolean;
  body: Renderable;
}

function link(href: string, label: string, current: boolean): SafeHtml {
  return html`<a href="${href}"${current ? html` aria-current="page"` : ''}>${label}</a>`;
}

function teamNav(ctx: PageContext, tab: LayoutOptions['tab']): SafeHtml {
  const team = ctx.team;
  return html`<nav class="subnav" aria-label="Team">
    ${team ? link(`/teams/${team.id}`, 'Projects', tab === 'projects') : ''}
    ${team ? link(`/teams/${team.id}/usage`, 'Usage', tab === 'usage') : ''}
    ${link('/account', 'Account', tab === 'account')}
  </nav>`;
}

function projectNav(project: ProjectRow, tab: LayoutOptions['tab']): SafeHtml {
  const base = `/projects/${project.id}`;
  return html`<nav class="tabs" aria-label="Project">
    ${link(base, 'Overview', tab === 'overview')}
    ${link(`${base}/keys`, 'API keys', tab === 'keys')}
    ${link(`${base}/webhook`, 'Webhook', tab === 'webhook')}
    ${link(`${base}/settings`, 'Delivery settings', tab === 'settings')}
    ${link(`${base}/jobs`, 'Jobs', tab === 'jobs')}
    ${link(`${base}/schedules`, 'Schedules', tab === 'schedules')}
    ${link(`${base}/events`, 'Events', tab === 'events')}
  </nav>`;
}

/** On every tab of a paused project (SPEC section 10): what pausing means, and the way back. */
function pausedBanner(ctx: PageContext, project: ProjectRow, tab: LayoutOptions['tab']): SafeHtml {
  const back = tab && Object.hasOwn(PROJECT_TABS, tab) ? tab : 'overview';
  return html`<section class="alert alert-paused" aria-labelledby="paused-title" data-testid="paused-banner">
    <div>
      <h2 id="paused-title">Deliveries paused</h2>
      <p>Jobs are accepted and wait, QUEUED; nothing is sent to the webhook until you resume. Schedules still create their jobs.</p>
    </div>
    ${postForm(ctx, `/projects/${project.id}/resume`, html`<input type="hidden" name="back" value="${back}"><button type="submit" class="button">Resume deliveries</button>`)}
  </section>`;
}

function teamSwitcher(ctx: PageContext): SafeHtml {
  if (ctx.teams.length <= 1) return html`<span class="team-name">${ctx.team?.name ?? ctx.teams[0]?.name ?? ''}</span>`;
  return html`<details class="team-switcher">
    <summary>${ctx.team?.name ?? 'Teams'}</summary>
    <ul>${ctx.teams.map((t: TeamRow) => html`<li>${link(`/teams/${t.id}`, t.name, t.id === ctx.team?.id)} <span class="muted">${t.plan}</span></li>`)}</ul>
  </details>`;
}

/** The one layout: a header with the team and the user, the page's navigation, then the page. */
export function layout(o: LayoutOptions): SafeHtml {
  const ctx = o.ctx;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Punctual</title>
<link rel="stylesheet" href="/assets/dashboard.css">
<script src="/assets/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">Punctual</a>
  ${ctx ? teamSwitcher(ctx) : ''}
  ${ctx
    ? html`<div class="who">
        <span class="email">${ctx.user.email}${ctx.operator ? html` <span class="badge">operator</span>` : ''}</span>
        <form method="post" action="/logout">${csrfField(ctx)}<button type="submit" class="button button-link">Log out</button></form>
      </div>`
    : ''}
</header>
${ctx ? teamNav(ctx, o.tab) : ''}
<main id="main"${o.wide ? html` class="wide"` : ''}>
${o.project ? html`<p class="crumbs"><a href="/teams/${o.project.teamId}">Projects</a> / <span>${o.project.name}</span></p>` : ''}
${o.project ? projectNav(o.project, o.tab) : ''}
${o.project?.paused && ctx ? pausedBanner(ctx, o.project, o.tab) : ''}
${o.body}
</main>
</body>
</html>`;
}
