import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testDatabase } from './support/make-app.js';
import { freePort, startServer } from './support/spawn-punctual.js';
import { makeTempDir } from './support/temp-dir.js';

describe('first start on an empty database (real process)', () => {
  const dir = makeTempDir();
  afterAll(() => dir.remove());

  it('creates a team, project and key, prints them once with a curl command that works, and restarts quietly', async () => {
    const port = await freePort();
    const database = await testDatabase(join(dir.path, 'data', 'punctual.db'));
    const env = { DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', PUNCTUAL_SECRET_KEY: 'first-start-test-secret-key-0123456789' };
    const server = startServer(env);
    try {
      await server.waitForOutput(/API docs:/);
      const out = server.output();
      const key = out.match(/API key\s+(pk_[A-Za-z0-9]{32,})/)![1]!;
      expect(out).toMatch(/Webhook secret\s+whsec_[A-Za-z0-9+/]{43}=/);
      const adminToken = out.match(/Admin token\s+(adm_[A-Za-z0-9]+)/)![1]!;
      expect(out).toContain(`Webhook URL      http://localhost:${port}/dev/receiver`);
      expect(out).toContain(`Dashboard        http://localhost:${port}/   log in as admin@localhost`);
      const password = out.match(/Password\s+([A-Za-z0-9]{20})/)![1]!;
      expect(out).toContain(`curl -X POST http://localhost:${port}/api/jobs/dispatch`);
      expect(out).toContain(`-H "Authorization: Bearer ${key}"`);

      // The printed command, as a client would send it.
      const base = `http://127.0.0.1:${port}`;
      const res = await fetch(`${base}/api/jobs/dispatch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { hello: 'world' } }),
      });
      expect(res.status).toBe(201);
      const { jobId } = (await res.json()) as { jobId: string };
      // The first curl ends in a visible delivery at the built-in development receiver.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const seen = (await (await fetch(`${base}/dev/receiver`)).json()) as { deliveries: { body: { jobId: string } }[] };
        if (seen.deliveries.some((d) => d.body.jobId === jobId)) break;
        if (Date.now() > deadline) throw new Error('the first job never reached the dev receiver');
        await new Promise((r) => setTimeout(r, 20));
      }
      // The receiver has the request before Punctual has its answer and commits the outcome
      // (PostgreSQL groups finishes per turn), so the status follows a moment later.
      let status = '';
      while (status !== 'COMPLETED' && Date.now() < deadline) {
        const res = await fetch(`${base}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } });
        status = ((await res.json()) as { status: string }).status;
        if (status !== 'COMPLETED') await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe('COMPLETED');
      const teamId = out.match(/Team\s+(team_[A-Za-z0-9]+)/)![1]!;
      const team = await fetch(`${base}/manage/v1/teams/${teamId}`, { headers: { authorization: `Bearer ${adminToken}` } });
      expect(await team.json()).toMatchObject({ teamId, plan: 'unlimited' });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const openapi = await (await fetch(`${base}/openapi.json`)).json();
      expect(Object.keys(openapi.paths)).toContain('/api/jobs/dispatch');
      expect((await fetch(`${base}/docs/`)).status).toBe(200);
      // The printed login works: the first user is an operator and sees the default team.
      const login = await fetch(`${base}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: 'admin@localhost', password, next: '/' }),
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const home = await fetch(`${base}/`, { redirect: 'manual', headers: { cookie } });
      expect(home.headers.get('location')).toBe(`/teams/${teamId}`);
      // The logs carry no secrets.
      expect(out.split('Punctual is set up')[0]).not.toContain(key);
      expect(out.split('Punctual is set up')[0]).not.toContain(password);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }

    const again = startServer(env);
    try {
      const deadline = Date.now() + 15_000;
      let ready: number | null = null;
      while (ready !== 200 && Date.now() < deadline) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => null);
        if (ready !== 200) await new Promise((r) => setTimeout(r, 25));
      }
      expect(ready).toBe(200);
      expect(again.output()).not.toContain('Punctual is set up');
      expect(again.output()).not.toMatch(/Admin token/);
    } finally {
      await again.stop();
      await database.drop();
    }
  });
});
