import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { PunctualError } from '../errors.js';
import type { Viewer } from '../services/auth/access-service.js';
import type { Services } from '../services/services.js';
import type { ActiveSession } from '../services/auth/session-service.js';
import type { TeamRow } from '../store/store.js';
import type { FormError, PageContext } from './views/components.js';
import type { SafeHtml } from './views/html.js';

export interface DashboardDeps {
  services: Services;
  clock: Clock;
  /** PUNCTUAL_PUBLIC_URL: shown in curl commands; https here makes the session cookie Secure. */
  publicUrl: string;
}

/** The signed-in user of a dashboard request (set by the plugin's onRequest hook). */
interface SignedIn extends ActiveSession {
  viewer: Viewer & { kind: 'user' };
  token: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    signedIn: SignedIn | null;
  }
  interface FastifyContextConfig {
    /** Dashboard routes reachable without a session (login, assets). */
    publicPage?: boolean;
  }
}

export function sendPage(reply: FastifyReply, page: SafeHtml, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page.value);
}

/**
 * After a POST: back to a page with a fixed notice (never text from the request). `query` keeps
 * the page's own parameters (a list's filter, checked before); `count` is a number the notice shows.
 */
export function redirectWithNotice(
  reply: FastifyReply,
  path: string,
  done: NoticeCode | CountedNoticeCode,
  query: Record<string, string> | string = {},
  count?: number,
): FastifyReply {
  const params = new URLSearchParams(query);
  params.set('done', done);
  if (count !== undefined) params.set('count', String(count));
  return reply.redirect(`${path}?${params.toString()}`, 303);
}

const NOTICES = {
  'key-revoked': 'The key is revoked: requests with it now answer 401.',
  'url-saved': 'Webhook URL saved.',
  rotated: 'New secret created. Both secrets sign deliveries until the previous one expires.',
  'settings-saved': 'Delivery settings saved.',
  cancelled: 'Job cancelled. It will not be delivered.',
  rescheduled: 'Job rescheduled.',
  retried: 'Job queued again, to run at once.',
  'test-job-sent': 'Test job queued. This page shows its attempts as they happen: reload it to follow them.',
  'schedule-created': 'Schedule created. Its next runs are below.',
  'schedule-pause': 'Schedule paused: it fires no more until resumed, and the jobs it had created ahead for later instants are cancelled.',
  'schedule-resume': 'Schedule resumed. Fires missed while it was paused are caught up as its catchUp says.',
  'schedule-trigger': 'One extra job created, to run at once.',
  'schedule-delete': 'Schedule deleted. Its jobs still waiting are cancelled.',
  'project-paused': 'Deliveries paused. Dispatches are still accepted: the jobs wait, QUEUED, until you resume.',
  'project-resumed': 'Deliveries resumed. The jobs that waited go out now, earliest due first.',
  'password-changed': 'Password changed. Your other sessions are logged out.',
  'logged-out': 'You are logged out.',
} as const;
type NoticeCode = keyof typeof NOTICES;

const jobsCancelled = (n: number) => `${n.toLocaleString('en-US')} queued ${n === 1 ? 'job' : 'jobs'} cancelled: ${n === 1 ? 'it' : 'they'} will not be delivered.`;
const jobsRescheduled = (n: number) => `${n.toLocaleString('en-US')} queued ${n === 1 ? 'job' : 'jobs'} rescheduled.`;
const jobsQueuedAgain = (n: number) => `${n.toLocaleString('en-US')} failed ${n === 1 ? 'job' : 'jobs'} queued again, each with a fresh retry budget.`;

/** Notices that show a number: `count` in the query, digits only, so nothing typed is ever echoed. */
const COUNTED_NOTICES = {
  'failed-retried': jobsQueuedAgain,
  'failed-retried-more': (n: number) => `${jobsQueuedAgain(n)} More failed jobs match: retry all failed that match again for the next ones.`,
  'bulk-cancelled': (n: number) => jobsCancelled(n),
  'bulk-cancelled-more': (n: number) => `${jobsCancelled(n)} More jobs match: cancel all that match again for the next ones.`,
  'bulk-rescheduled': (n: number) => jobsRescheduled(n),
  'bulk-rescheduled-more': (n: number) => `${jobsRescheduled(n)} More jobs match: reschedule all that match again for the next ones.`,
} as const;
type CountedNoticeCode = keyof typeof COUNTED_NOTICES;

export function noticeFrom(request: FastifyRequest): string | null {
  const query = request.query as Record<string, unknown> | undefined;
  const done = query?.done;
  if (typeof done !== 'string') return null;
  if (Object.hasOwn(NOTICES, done)) return NOTICES[done as NoticeCode];
  const count = query?.count;
  if (Object.hasOwn(COUNTED_NOTICES, done) && typeof count === 'string' && /^\d{1,9}$/.test(count)) {
    return COUNTED_NOTICES[done as CountedNoticeCode](Number(count));
  }
  return null;
}

/** A service's refusal, for showing beside the form; anything that is not a contract error is rethrown. */
export function formError(error: unknown): FormError & { statusCode: number } {
  if (!(error instanceof PunctualError) || error.statusCode >= 500) throw error;
  const field = typeof error.data.field === 'string' ? error.data.field : undefined;
  return { message: error.data.message, statusCode: error.statusCode, ...(field !== undefined && { field }) };
}

export function signedIn(request: FastifyRequest): SignedIn {
  if (!request.signedIn) throw new Error('dashboard route reached without a session');
  return request.signedIn;
}

/** Everything the layout needs; `team` is the team the page is about. */
export async function pageContext(deps: DashboardDeps, request: FastifyRequest, team: TeamRow | null = null): Promise<PageContext> {
  const current = signedIn(request);
  const teams = await deps.services.access.visibleTeams(current.viewer);
  return {
    user: current.user,
    operator: current.viewer.teamIds === 'all',
    teams,
    csrfToken: current.session.csrfToken,
    team: team ?? (teams.length === 1 ? teams[0]! : null),
  };
}

/**
 * A path on this site to return to after logging in; anything else (//evil, https://…) becomes "/".
 * No control characters either: Node refuses them in the Location header.
 */
export function safeNextPath(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[^\s\p{Cc}]*$/u.test(next) ? next : '/';
}
