import { fastifyCookie } from '@fastify/cookie';
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import { NotFoundError, UnauthorizedError } from '../errors.js';
import type { Viewer } from '../services/auth/access-service.js';
import type { AuthenticatedKey } from '../services/auth/auth-service.js';
import type { CallbackGrant, ReportAuth } from '../services/attempt-reports.js';
import type { JobRequestContext } from '../services/jobs-service.js';
import { rateLimitHeaders } from '../services/rate-limit-service.js';
import type { Services } from '../services/services.js';
import { CSRF_HEADER, SAFE_METHODS, SESSION_COOKIE, SessionService } from '../services/auth/session-service.js';
import { sendError } from './error-handler.js';

/**
 * Who may reach a route (SPEC section 8). It follows from the scope a route is registered in, never
 * from the spelling of a request's target: the router decodes `/%61pi/…` and reduces an
 * absolute-form `http://host/api/…` to its path before it picks a route, and the scope's hooks run
 * for whatever the router picked. A route cannot mark itself: the scope's onRoute hook does, and
 * buildApp refuses to start when a route under /api or /manage lacks its scope's mark.
 */
export type RouteAccess = 'apiKey' | 'manage';

/** The path prefix each access belongs to. */
export const ACCESS_PREFIX: Record<RouteAccess, string> = { apiKey: '/api', manage: '/manage' };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the scope (apiScope, manageScope), read by the route table check. */
    access?: RouteAccess;
    /** The async completion report: an attempt's callback token is accepted instead of an API key. */
    acceptsCallbackToken?: boolean;
  }
  interface FastifyRequest {
    /** The API key's project, team and plan, on /api/ routes. */
    principal: AuthenticatedKey | null;
    /** A callback token checked against the job and attempt of the report route it reached. */
    callbackGrant: CallbackGrant | null;
    /** Who is managing, on /manage/v1 and dashboard routes: the admin token or a signed-in user. */
    viewer: Viewer | null;
  }
}

/** Marks every route of the scope with its access, and answers its unmatched paths only after authentication. */
function scopeOf(app: FastifyInstance, access: RouteAccess): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    route.config = { ...route.config, access };
  });
  // A scope's own not-found handler runs after the scope's onRequest hook: an unknown path under
  // /api/ is 401 without a key, as any other (SPEC section 2), and 404 with one.
  app.setNotFoundHandler((request, reply) => sendError(reply, new NotFoundError(`No route ${request.method} ${request.url.split('?')[0]}`)));
}

/**
 * The job API's scope, registered under the prefix /api: every request is authenticated by an API
 * key (or, on the report route alone, its attempt's callback token) and then rate limited, before
 * body size, parsing and validation.
 */
export function apiScope(routes: FastifyPluginAsync<{ services: Services }>[], services: Services): FastifyPluginAsync {
  return async (app) => {
    scopeOf(app, 'apiKey');
    app.addHook('onRequest', async (request, reply) => {
      // An async completion report may carry its attempt's callback token instead of an API key:
      // it is checked here against the job and attempt of the route reached (SPEC section 11).
      const callbackToken = request.routeOptions.config.acceptsCallbackToken ? services.auth.callbackToken(request.headers.authorization) : null;
      if (callbackToken) {
        const { jobId, attemptId } = request.params as { jobId: string; attemptId: string };
        request.callbackGrant = services.reports.checkToken(callbackToken, jobId, attemptId);
        return;
      }
      const principal = await services.auth.authenticateApiKey(request.headers.authorization);
      request.principal = principal;
      // Second in SPEC's order, before the body is even read: a refused request costs no parsing.
      const decision = await services.rateLimits.check(principal.team.id, principal.plan, request.receivedAt);
      if (decision) reply.headers(rateLimitHeaders(decision));
    });
    for (const route of routes) await app.register(route, { services });
  };
}

/**
 * The management API's scope, registered under the prefix /manage: the operator's admin token, or a
 * dashboard session scoped to the user's teams. An Authorization header always means the token (a
 * wrong one is 401 even with a valid cookie). A cookie is sent by browsers on their own, so a
 * state-changing request made with one must also carry the session's CSRF token in X-CSRF-Token,
 * which another site cannot read. Its answers may carry a key or a secret: none is cached.
 */
export function manageScope(routes: FastifyPluginAsync<{ services: Services }>[], services: Services): FastifyPluginAsync {
  return async (app) => {
    scopeOf(app, 'manage');
    app.addHook('onRequest', async (request, reply) => {
      reply.header('cache-control', 'no-store');
      request.viewer = await manageViewer(request, services);
    });
    for (const route of routes) await app.register(route, { services });
  };
}

async function manageViewer(request: FastifyRequest, services: Services): Promise<Viewer> {
  // Read here rather than by @fastify/cookie's hooks, which the dashboard alone registers: the JSON
  // API, the busiest routes, then pays nothing for cookies.
  const cookie = request.headers.cookie ? fastifyCookie.parse(request.headers.cookie)[SESSION_COOKIE] : undefined;
  if (request.headers.authorization !== undefined || !cookie) {
    services.auth.authenticateAdmin(request.headers.authorization);
    return { kind: 'admin' };
  }
  const active = await services.sessions.find(cookie);
  if (!active) throw new UnauthorizedError('This dashboard session has ended: log in again, or send the admin token');
  if (!SAFE_METHODS.has(request.method) && !SessionService.csrfMatches(active.session, request.headers[CSRF_HEADER])) {
    throw new UnauthorizedError(`A request made with a dashboard session must carry the session's CSRF token in ${CSRF_HEADER}`);
  }
  return services.access.viewerFor(active.user);
}

/** The API key's principal of a request in the /api scope; a handler never runs without one. */
export function principalOf(request: FastifyRequest): AuthenticatedKey {
  if (!request.principal) throw new UnauthorizedError('Send an API key as "Authorization: Bearer pk_…"');
  return request.principal;
}

/** What the job and schedule services are told of a request in the /api scope: its principal's project, team and plan. */
export function jobContextOf(request: FastifyRequest): JobRequestContext {
  const principal = principalOf(request);
  return { project: principal.project, team: principal.team, plan: principal.plan, receivedAt: request.receivedAt };
}

/**
 * Who reports an attempt's result (a route with acceptsCallbackToken): the scope's hook checked
 * either a callback token or an API key against this job and attempt.
 */
export function reportAuthOf(request: FastifyRequest): ReportAuth {
  return request.callbackGrant ?? { kind: 'apiKey', projectId: principalOf(request).project.id };
}

/** The viewer of a request in the /manage scope; a handler never runs without one. */
export function viewerOf(request: FastifyRequest): Viewer {
  if (!request.viewer) throw new UnauthorizedError('Send the admin token as "Authorization: Bearer <PUNCTUAL_ADMIN_TOKEN>"');
  return request.viewer;
}

/** A registered route as the route table check and its test see it. */
export interface RouteEntry {
  method: string;
  url: string;
  access: RouteAccess | null;
}

/**
 * Records every route and, once all are registered, refuses to start if a route under /api or
 * /manage was registered outside its scope (it would run with no authentication at all).
 */
export function checkRouteAccess(app: FastifyInstance): RouteEntry[] {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  const table: RouteEntry[] = [];
  app.addHook('onReady', async () => {
    for (const route of routes) {
      const access = route.config?.access ?? null;
      for (const method of [route.method].flat()) table.push({ method, url: route.url!, access });
      const needed = (Object.keys(ACCESS_PREFIX) as RouteAccess[]).find((each) => underPrefix(route.url!, ACCESS_PREFIX[each]));
      if (needed && access !== needed) {
        throw new Error(`Route ${String(route.method)} ${route.url} is under ${ACCESS_PREFIX[needed]} but not registered in its authenticated scope`);
      }
    }
  });
  return table;
}

const underPrefix = (url: string, prefix: string): boolean => url === prefix || url.startsWith(`${prefix}/`);
