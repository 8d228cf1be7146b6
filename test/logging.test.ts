import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { eventually } from './support/eventually.js';
import { CLI, freePort, waitUntilReady } from './support/spawn-punctual.js';
import { makeTempDir } from './support/temp-dir.js';
import { buildApp } from '../src/api/build-app.js';
import { makeTestApp } from './support/make-app.js';

describe('LOG_FORMAT', () => {
  it('is pretty on a terminal outside production and JSON otherwise, unless LOG_FORMAT says', () => {
    const terminal = true;
    expect(loadConfig({}, !terminal).logFormat).toBe('json');
    expect(loadConfig({}, terminal).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'production' }, terminal).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'json' }, terminal).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }, !terminal).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'Pretty', NODE_ENV: 'production' }, !terminal).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(ConfigError);
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow('LOG_FORMAT must be json or pretty, got "xml"');
  });
});

/**
 * `punctual serve` as a person starts it: in a pseudo-terminal (util-linux's `script`, so that
 * standard output really is a terminal), or with standard output a pipe as under a log collector.
 * One dispatch with the key printed at first start, then SIGTERM; returns all it printed, to its exit.
 */
async function serveAndDispatch(how: 'terminal' | 'pipe', env: Record<string, string>): Promise<string> {
  const dir = makeTempDir();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Neither LOG_FORMAT nor NODE_ENV from the test run's own environment: only what the case gives.
  const { LOG_FORMAT: _format, NODE_ENV: _nodeEnv, ...inherited } = process.env;
  const serveEnv = { ...inherited, DATABASE_URL: `sqlite:${join(dir.path, 'p.db')}`, PORT: String(port), HOST: '127.0.0.1', ...env };
  const command = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} serve`;
  // detached: its own process group. Under `script` the server is in a session of its own and ends
  // with SIGHUP when `script` ends; through a pipe it is the group's leader and gets SIGTERM.
  const child =
    how === 'terminal'
      ? spawn('script', ['-qfec', command, '/dev/null'], { env: serveEnv, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
      : spawn(process.execPath, [CLI, 'serve'], { env: serveEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    await waitUntilReady(base);
    const key = await eventually(() => /pk_[A-Za-z0-9]+/.exec(output)?.[0], { what: 'the API key printed', until: (k) => k !== undefined });
    const res = await fetch(`${base}/api/jobs/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { hello: 'world' }, scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }),
    });
    expect(res.status).toBe(201);
    // Its request line carries the request id the answer gave (the first-start box names the route too).
    const requestId = res.headers.get('x-request-id')!;
    await eventually(() => output, { what: 'the request line', until: (text) => text.includes(requestId) });
    expect(output).toContain(key!);
    expect(output.split(key!).length, 'the key only in the first-start box, never in a log line').toBe(3);
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
    dir.remove();
  }
  return output;
}

/** Terminal output without its colours and carriage returns. */
const plain = (text: string) => stripVTControlCharacters(text).replace(/\r/g, '');

describe('punctual serve logs', () => {
  it('prints readable lines on a terminal: time, level, and the request in one line', { timeout: 30_000 }, async () => {
    const output = plain(await serveAndDispatch('terminal', {}));
    expect(output).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request POST \/api\/jobs\/dispatch → 201 [\d.]+ ms \([A-Za-z0-9]{8}-[0-9a-z]+\)$/m);
    expect(output).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/m);
    expect(output).not.toMatch(/^\{"level"/m);
  });

  it('prints JSON lines when standard output is not a terminal', { timeout: 30_000 }, async () => {
    const output = await serveAndDispatch('pipe', {});
    const lines = output.split('\n').filter((line) => line.startsWith('{'));
    const request = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.url === '/api/jobs/dispatch');
    expect(request).toMatchObject({ level: 30, msg: 'request', method: 'POST', statusCode: 201, reqId: expect.any(String), ms: expect.any(Number) });
    expect(output).not.toContain('INFO: request');
    // The lines of the shutdown, gathered until the app closed and written before the process ended.
    const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).toContain('shutting down: no new requests or claims; finishing deliveries in flight');
    expect(messages).toContain('delivery stopped');
  });

  it('prints JSON lines on a terminal with LOG_FORMAT=json, and readable ones off a terminal with LOG_FORMAT=pretty', { timeout: 60_000 }, async () => {
    const json = plain(await serveAndDispatch('terminal', { LOG_FORMAT: 'json' }));
    expect(json).toMatch(/^\{"level":30,.*"msg":"request"/m);
    expect(json).not.toContain('INFO: request');
    const pretty = await serveAndDispatch('pipe', { LOG_FORMAT: 'pretty' });
    // No colours off a terminal.
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request POST \/api\/jobs\/dispatch → 201 [\d.]+ ms/m);
    expect(pretty).toBe(stripVTControlCharacters(pretty));
    // The fields of other lines follow, one per line.
    expect(pretty).toMatch(/INFO: shutting down: no new requests or claims; finishing deliveries in flight\n {4}signal: "SIGTERM"/);
  });
});

describe('the default JSON logger', () => {
  it('goes with its app: a closed app leaves no flush timer behind, and adds no exit listener', async () => {
    const t = await makeTestApp();
    const intervals = vi.spyOn(globalThis, 'setInterval');
    const cleared = vi.spyOn(globalThis, 'clearInterval');
    try {
      const config = loadConfig({ LOG_FORMAT: 'json', LOG_LEVEL: 'warn' }, false);
      const open = async () => {
        const app = await buildApp({ config, store: t.store, clock: t.clock, services: t.services, metrics: t.runtime.metrics });
        await app.ready();
        return app;
      };
      await (await open()).close();
      const exitListeners = process.listenerCount('exit');
      const apps = await Promise.all(Array.from({ length: 5 }, open));
      const made = intervals.mock.results.map((result) => result.value as NodeJS.Timeout);
      expect(made.length).toBeGreaterThanOrEqual(6);
      for (const app of apps) await app.close();
      const gone = new Set(cleared.mock.calls.map(([timer]) => timer));
      expect(made.filter((timer) => !gone.has(timer))).toEqual([]);
      expect(process.listenerCount('exit')).toBe(exitListeners);
    } finally {
      intervals.mockRestore();
      cleared.mockRestore();
      await t.close();
    }
  });
});
