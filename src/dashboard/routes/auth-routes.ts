import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimitedError, UnauthorizedError } from '../../errors.js';
import { SESSION_COOKIE, SESSION_TTL_MS } from '../../services/auth/session-service.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, safeNextPath, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields } from '../form-body.js';
import { accountPage, loginPage } from '../views/auth-pages.js';

/** Login, logout and the account page. */
export const authRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { users, sessions } = deps.services;
  /**
   * Secure when the public URL says users reach us over https, or when a proxy trusted through
   * PUNCTUAL_TRUST_PROXY says this request came over https (X-Forwarded-Proto): Punctual itself
   * listens on plain HTTP, so request.protocol is https only on a trusted proxy's word.
   */
  const secureCookie = (request: FastifyRequest) => request.protocol === 'https' || deps.publicUrl.startsWith('https:');

  app.get('/login', { config: { publicPage: true } }, async (request, reply) => {
    const next = safeNextPath((request.query as Record<string, unknown>).next);
    if (request.signedIn) return reply.redirect(next, 303);
    return sendPage(reply, loginPage({ next, notice: noticeFrom(request) }));
  });

  app.post('/login', { config: { publicPage: true } }, async (request, reply: FastifyReply) => {
    const form = formFields(request.body);
    const email = form.email ?? '';
    const next = safeNextPath(form.next);
    try {
      const user = await users.authenticate(email, form.password ?? '', request.ip);
      // A new session at every login, and the one this browser had (if any) ends: a session id
      // planted before login is never the one that is signed in (session fixation).
      await sessions.end(request.cookies[SESSION_COOKIE]);
      const { token } = await sessions.start(user.id);
      reply.setCookie(SESSION_COOKIE, token, {
        httpOnly: true,
        sameSite: 'lax',
        secure: secureCookie(request),
        path: '/',
        maxAge: SESSION_TTL_MS / 1000,
      });
      return reply.redirect(next, 303);
    } catch (error) {
      if (error instanceof RateLimitedError) {
        reply.headers(error.headers);
        return sendPage(reply, loginPage({ email, next, error: { message: error.data.message } }), 429);
      }
      if (error instanceof UnauthorizedError) return sendPage(reply, loginPage({ email, next, error: { message: 'Wrong email or password.' } }), 401);
      throw error;
    }
  });

  app.post('/logout', async (request, reply) => {
    await sessions.end(signedIn(request).token);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/login?done=logged-out', 303);
  });

  app.get('/account', async (request, reply) => sendPage(reply, accountPage(await pageContext(deps, request), { notice: noticeFrom(request) })));

  app.post('/account/password', async (request, reply) => {
    const current = signedIn(request);
    const form = formFields(request.body);
    try {
      await users.changePassword(
        current.user,
        { current: form.current, next: form.next, confirm: form.confirm },
        { address: request.ip, keepTokenHash: current.session.tokenHash },
      );
    } catch (error) {
      const refused = formError(error);
      // A throttled check says when to come back, as a throttled login does.
      if (error instanceof RateLimitedError) reply.headers(error.headers);
      return sendPage(reply, accountPage(await pageContext(deps, request), { error: refused }), refused.statusCode);
    }
    return redirectWithNotice(reply, '/account', 'password-changed');
  });
};
