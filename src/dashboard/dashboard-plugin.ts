import { readFileSync } from 'node:fs';
import fastifyCookie from '@fastify/cookie';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, NotFoundError, PunctualError } from '../errors.js';
import { SAFE_METHODS, SESSION_COOKIE, SessionService } from '../services/auth/session-service.js';
import { formFields, installFormBodyParser } from './form-body.js';
import { pageContext, sendPage, type DashboardDeps } from './dashboard-context.js';
import { authRoutes } from './routes/auth-routes.js';
import { eventRoutes } from './routes/event-routes.js';
import { jobRoutes } from './routes/job-routes.js';
import { projectRoutes } from './routes/project-routes.js';
import { scheduleRoutes } from './routes/schedule-routes.js';
import { teamRoutes } from './routes/team-routes.js';
import { errorPage } from './views/auth-pages.js';

const ASSETS = {
  'dashboard.css': { type: 'text/css; charset=utf-8', text: readFileSync(new URL('./assets/dashboard.css', import.meta.url), 'utf8') },
  'dashboard.js': { type: 'text/javascript; charset=utf-8', text: readFileSync(new URL('./assets/dashboard.js', import.meta.url), 'utf8') },
} as const;

/**
 * Pages are served with no-store (they show keys and secrets) and a strict CSP: only this
 * origin's stylesheet and script, no inline script or style, no framing, forms post here only.
 */
const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** Whether any value of a parsed query string or form (strings, or arrays of them) contains U+0000. */
function holdsNul(fields: unknown): boolean {
  if (!fields || typeof fields !== 'object') return false;
  return Object.values(fields).some((value) => [value].flat().some((item) => typeof item === 'string' && item.includes('\u0000')));
}

/**
 * A POST from another site: its Origin (or Sec-Fetch-Site) says so, whatever cookie came with it.
 * This site is the host the request was addressed to (request.host: the Host header, or a trusted
 * proxy's X-Forwarded-Host) or PUNCTUAL_PUBLIC_URL's origin, since a proxy may rewrite Host to
 * the upstream's name while the browser's Origin keeps the public one.
 */
function crossSite(request: FastifyRequest, publicOrigin: string): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true;
  const origin = request.headers.origin;
  if (origin === undefined || origin === 'null') return origin === 'null';
  try {
    const from = new URL(origin);
    if (from.origin === publicOrigin) return false;
    // Read the host with the origin's scheme, so default ports compare equal (localhost:80 = localhost).
    return from.host !== new URL(`${from.protocol}//${request.host}`).host;
  } catch {
    return true;
  }
}

/**
 * The web dashboard at `/` (SPEC section 7): server-rendered pages over the same services as
 * /manage/v1. Registered as its own plugin so the form-body parser, the session hook and the
 * HTML error pages apply to its routes only; the JSON API keeps its parsers and error shape.
 */
export const dashboardRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  // Cookies parsed and set for the dashboard's routes only: its hooks would run on every API answer otherwise.
  await app.register(fastifyCookie);
  installFormBodyParser(app);
  const publicOrigin = new URL(deps.publicUrl).origin;
  app.decorateRequest('signedIn', null);
  // Pages are not part of the HTTP API: keep them out of /openapi.json.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.headers(PAGE_HEADERS);
    const token = request.cookies[SESSION_COOKIE];
    const active = await deps.services.sessions.find(token);
    if (active) {
      const viewer = await deps.services.access.viewerFor(active.user);
      request.signedIn = { ...active, viewer: viewer as typeof viewer & { kind: 'user' }, token: token! };
    }
  });

  // Every state-changing form carries the session's synchronizer token (a hidden _csrf field),
  // and no POST is taken from another site, the login form included (login CSRF).
  app.addHook('preHandler', async (request, reply) => {
    const isPublic = request.routeOptions.config.publicPage === true;
    if (!request.signedIn && !isPublic) {
      const next = SAFE_METHODS.has(request.method) ? `?next=${encodeURIComponent(request.url)}` : '';
      return reply.redirect(`/login${next}`, 303);
    }
    if (SAFE_METHODS.has(request.method)) return;
    const forged = crossSite(request, publicOrigin) || (!isPublic && !SessionService.csrfMatches(request.signedIn!.session, formFields(request.body)._csrf));
    if (forged) {
      const ctx = request.signedIn ? await pageContext(deps, request) : null;
      const page = errorPage(ctx, {
        status: 403,
        title: 'This form could not be accepted',
        message: 'It is out of date or did not come from this dashboard (its security token is missing or wrong). Go back, reload the page and try again.',
      });
      return sendPage(reply, page, 403);
    }
  });

  // No id, filter or field of the dashboard holds U+0000, and PostgreSQL refuses it in a query
  // parameter where SQLite would just find nothing: such a value is refused here, before any
  // service sees it, so both stores answer alike (public pages check their few fields themselves).
  app.addHook('preHandler', async (request) => {
    if (request.routeOptions.config.publicPage === true) return;
    if (holdsNul(request.query)) throw new NotFoundError('No such page');
    if (holdsNul(formFields(request.body))) throw new InvalidRequestError('A form field holds the character U+0000, which no field accepts');
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const known = error instanceof PunctualError ? error : null;
    // UNAVAILABLE (storage away, too many sign-ins at once) is a moment to wait, not a fault to log.
    const busy = known?.statusCode === 503;
    if ((!known || known.statusCode >= 500) && !busy) request.log.error({ err: error }, 'dashboard error');
    const status = known?.statusCode ?? (error.statusCode && error.statusCode < 500 ? error.statusCode : 500);
    const ctx = request.signedIn ? await pageContext(deps, request).catch(() => null) : null;
    const page =
      status === 404
        ? errorPage(ctx, { status, title: 'Not found', message: 'There is nothing here, or it belongs to a team you are not in.' })
        : status < 500
          ? errorPage(ctx, { status, title: 'That request could not be read', message: known?.data.message ?? 'Reload the page and try again.' })
          : busy
            ? errorPage(ctx, { status, title: 'Busy for a moment', message: known!.data.message })
            : errorPage(ctx, { status, title: 'Something went wrong', message: `Something failed on our side; request id ${request.id} identifies it in the logs.` });
    if (known) reply.headers(known.headers);
    return sendPage(reply, page, status);
  });

  for (const [name, asset] of Object.entries(ASSETS)) {
    app.get(`/assets/${name}`, { config: { publicPage: true } }, async (_request, reply: FastifyReply) =>
      reply.header('cache-control', 'public, max-age=300').type(asset.type).send(asset.text),
    );
  }

  await app.register(authRoutes, deps);
  await app.register(teamRoutes, deps);
  await app.register(projectRoutes, deps);
  await app.register(scheduleRoutes, deps);
  await app.register(jobRoutes, deps);
  await app.register(eventRoutes, deps);
};
