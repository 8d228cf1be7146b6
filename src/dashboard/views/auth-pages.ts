import { errorSummary, field, notice, postForm, type FormError, type PageContext } from './components.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';

export function loginPage(o: { email?: string; error?: FormError | null; next?: string; notice?: string | null }): SafeHtml {
  return layout({
    title: 'Log in',
    ctx: null,
    body: html`<section class="card narrow">
      <h1>Log in to Punctual</h1>
      ${notice(o.notice)}
      ${o.error ? html`<div class="alert alert-error" role="alert">${o.error.message}</div>` : ''}
      <form method="post" action="/login">
        <input type="hidden" name="next" value="${o.next ?? '/'}">
        ${field({ name: 'email', label: 'Email', type: 'email', value: o.email ?? '', required: true, autocomplete: 'username' })}
        ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' })}
        <button type="submit" class="button">Log in</button>
      </form>
      <p class="hint">The first user and its password were printed once when Punctual first started. An operator can add users with
        <code>punctual users create</code> or reset a password with <code>punctual users reset-password</code>.</p>
    </section>`,
  });
}

export function accountPage(ctx: PageContext, o: { error?: FormError | null; notice?: string | null }): SafeHtml {
  return layout({
    title: 'Account',
    ctx,
    tab: 'account',
    body: html`<h1>Account</h1>
      <section class="card">
        <dl class="facts">
          <dt>Email</dt><dd>${ctx.user.email}</dd>
          <dt>Teams</dt><dd>${ctx.operator ? 'Every team (operator)' : ctx.teams.map((t, i) => html`${i ? ', ' : ''}<a href="/teams/${t.id}">${t.name}</a>`)}</dd>
        </dl>
      </section>
      <section class="card">
        <h2>Change password</h2>
        ${notice(o.notice)}
        ${errorSummary(o.error)}
        ${postForm(
          ctx,
          '/account/password',
          html`${field({ name: 'current', label: 'Current password', type: 'password', required: true, autocomplete: 'current-password', error: o.error })}
          ${field({ name: 'next', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', hint: 'At least 10 characters.', error: o.error })}
          ${field({ name: 'confirm', label: 'New password again', type: 'password', required: true, autocomplete: 'new-password', error: o.error })}
          <p class="hint">Your other sessions (other browsers) are logged out; this one stays.</p>
          <button type="submit" class="button">Change password</button>`,
        )}
      </section>`,
  });
}

export function errorPage(ctx: PageContext | null, o: { status: number; title: string; message: string }): SafeHtml {
  return layout({
    title: o.title,
    ctx,
    body: html`<section class="card narrow">
      <h1>${o.title}</h1>
      <p>${o.message}</p>
      <p><a href="/">Back to the dashboard</a></p>
    </section>`,
  });
}
