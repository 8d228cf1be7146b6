import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { developmentConveniencesNotice } from '../src/development-conveniences.js';
import { eventually } from './support/eventually.js';
import { makeTestApp } from './support/make-app.js';
import { freePort, startServer, waitUntilReady } from './support/spawn-punctual.js';
import { makeTempDir } from './support/temp-dir.js';

/**
 * The development receiver and private webhooks (src/development-conveniences.ts): on by default
 * only on a loopback address outside production, asked for explicitly anywhere else, and named in
 * the start-up log.
 */
describe('the development receiver', () => {
  it('is not mounted off a loopback address: GET and POST /dev/receiver answer 404', async () => {
    const t = await makeTestApp({ env: { HOST: '0.0.0.0' } });
    try {
      for (const method of ['GET', 'POST'] as const) {
        const res = await t.app.inject({ method, url: '/dev/receiver', payload: method === 'POST' ? {} : undefined });
        expect(res.statusCode, method).toBe(404);
        expect(res.json().error).toBe('NOT_FOUND');
      }
    } finally {
      await t.close();
    }
  });

  it('is mounted off loopback when PUNCTUAL_DEV_RECEIVER=true', async () => {
    const t = await makeTestApp({ env: { HOST: '0.0.0.0', PUNCTUAL_DEV_RECEIVER: 'true' } });
    try {
      expect((await t.app.inject({ method: 'GET', url: '/dev/receiver' })).json()).toEqual({ deliveries: [] });
    } finally {
      await t.close();
    }
  });

  it('shows a real delivery without its secret, signature or callbackToken', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const t = await makeTestApp({ clock: systemClock, delivery: true, env: { PUNCTUAL_PUBLIC_URL: base } });
    try {
      await t.app.listen({ host: '127.0.0.1', port });
      const project = await t.makeProject({ webhookUrl: `${base}/dev/receiver`, settings: { asyncCompletion: true } });
      const dispatched = await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { hello: 'world' } } });
      expect(dispatched.statusCode).toBe(201);
      const { jobId } = dispatched.json();
      type Shown = { headers: Record<string, unknown>; body: Record<string, unknown> };
      const [delivery] = await eventually(
        async () => ((await (await fetch(`${base}/dev/receiver`)).json()) as { deliveries: Shown[] }).deliveries,
        { what: 'the delivery at the dev receiver', until: (deliveries) => deliveries.length === 1 },
      );
      expect(delivery!.headers).toMatchObject({ 'webhook-id': jobId, 'webhook-signature': '[redacted]' });
      expect(delivery!.headers).not.toHaveProperty('authorization');
      expect(delivery!.body).toMatchObject({ jobId, attempt: 1, callbackToken: '[redacted]', payload: { hello: 'world' } });
      // Nothing of the three anywhere in what it shows.
      const shown = JSON.stringify(delivery);
      expect(shown).not.toMatch(/v1,[A-Za-z0-9+/=]{20}|pcb_|whsec_/);
    } finally {
      await t.close();
    }
  });
});

describe('the start-up log line on development conveniences', () => {
  const notice = (env: NodeJS.ProcessEnv) => developmentConveniencesNotice(loadConfig(env));

  it('names what is on, and why, on loopback outside production', () => {
    expect(notice({})).toEqual({
      level: 'info',
      fields: { devReceiver: true, privateWebhooks: true },
      message: 'development conveniences on (listening on 127.0.0.1, a loopback address, outside production): the development receiver at /dev/receiver, private webhook addresses',
    });
    expect(notice({ PUNCTUAL_DEV_RECEIVER: 'false' })).toMatchObject({ level: 'info', fields: { devReceiver: false, privateWebhooks: true } });
  });

  it('says they are off, why, and how to turn them on, off loopback outside production', () => {
    expect(notice({ HOST: '0.0.0.0' })).toEqual({
      level: 'info',
      fields: { devReceiver: false, privateWebhooks: false },
      message:
        'development conveniences off, because HOST 0.0.0.0 is not a loopback address: PUNCTUAL_DEV_RECEIVER=true and PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true turn them on',
    });
  });

  it('warns, naming the variable and what it exposes, when one is asked for where it would be off', () => {
    expect(notice({ HOST: '0.0.0.0', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true' })).toEqual({
      level: 'warn',
      fields: { devReceiver: false, privateWebhooks: true },
      message:
        "development conveniences on though HOST 0.0.0.0 is not a loopback address (PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true): webhooks and test deliveries can reach this network's private addresses",
    });
    expect(notice({ NODE_ENV: 'production', PUNCTUAL_DEV_RECEIVER: 'true', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'false' })).toEqual({
      level: 'warn',
      fields: { devReceiver: true, privateWebhooks: false },
      message: 'development conveniences on though NODE_ENV=production (PUNCTUAL_DEV_RECEIVER=true): anyone who reaches this service can read the deliveries at GET /dev/receiver',
    });
  });

  it('says nothing where off is expected: production, or both set to false', () => {
    expect(notice({ NODE_ENV: 'production' })).toBeNull();
    expect(notice({ PUNCTUAL_DEV_RECEIVER: 'false', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'false' })).toBeNull();
  });
});

describe('punctual serve on every address (HOST=0.0.0.0) without NODE_ENV', () => {
  const dir = makeTempDir();
  afterAll(() => dir.remove());

  /** The JSON log lines (standard output is a pipe) whose msg starts with `prefix`. */
  const logLines = (output: string, prefix: string) =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => String(entry.msg).startsWith(prefix));

  it('keeps the development conveniences off unless asked for, and its log says which are on', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // Neither NODE_ENV nor LOG_FORMAT from the test run's own environment.
    const { NODE_ENV: _nodeEnv, LOG_FORMAT: _format, ...inherited } = process.env;
    const env = { ...inherited, DATABASE_URL: `sqlite:${join(dir.path, 'p.db')}`, PORT: String(port), HOST: '0.0.0.0', LOG_LEVEL: 'info' } as Record<string, string>;
    delete env.PUNCTUAL_DEV_RECEIVER;
    delete env.PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS;

    const server = startServer(env);
    try {
      const adminToken = (await server.waitForOutput(/Admin token\s+(adm_[A-Za-z0-9]+)/))[1]!;
      const projectId = (await server.waitForOutput(/Project\s+(prj_[A-Za-z0-9]+)/))[1]!;
      await waitUntilReady(base);
      const [line] = await eventually(() => logLines(server.output(), 'development conveniences'), { what: 'the conveniences line', until: (lines) => lines.length > 0 });
      expect(line).toMatchObject({ level: 30, devReceiver: false, privateWebhooks: false, host: '0.0.0.0' });
      expect(line!.msg).toContain('off, because HOST 0.0.0.0 is not a loopback address');
      // The first project is not pointed at a receiver that is not there.
      expect(server.output()).toContain(`Webhook URL      not set: PATCH /manage/v1/projects/${projectId}`);
      expect((await fetch(`${base}/dev/receiver`)).status).toBe(404);
      // Nor can it be pointed at this machine or its network.
      const patched = await fetch(`${base}/manage/v1/projects/${projectId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ webhookUrl: 'http://127.0.0.1:9/hook' }),
      });
      expect(patched.status).toBe(400);
      expect(((await patched.json()) as { error: string }).error).toBe('INVALID_WEBHOOK_URL');
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }

    const asked = startServer({ ...env, PUNCTUAL_DEV_RECEIVER: 'true', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true' });
    try {
      await waitUntilReady(base);
      const [line] = await eventually(() => logLines(asked.output(), 'development conveniences'), { what: 'the conveniences line', until: (lines) => lines.length > 0 });
      expect(line).toMatchObject({ level: 40, devReceiver: true, privateWebhooks: true, host: '0.0.0.0' });
      expect(line!.msg).toContain('on though HOST 0.0.0.0 is not a loopback address (PUNCTUAL_DEV_RECEIVER=true, PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true)');
      expect((await fetch(`${base}/dev/receiver`)).status).toBe(200);
    } finally {
      expect(await asked.stop('SIGTERM')).toBe(0);
    }
  });
});
