import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort, waitUntilReady } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = (command: string, args: string[], cwd: string) => execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });

/**
 * What `npm pack` makes, installed as a user installs it in a directory of their own: its bin runs
 * a server, and `punctual/client` (code and types) talks to it. dist/ is the one `npm test` built.
 */
describe('the package as npm pack makes it', () => {
  const dir = makeTempDir('punctual-package-');
  const app = join(dir.path, 'app');

  beforeAll(() => {
    const tarball = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir.path], ROOT).trim().split('\n').pop()!;
    execFileSync('mkdir', [app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'a-user-app', version: '1.0.0', type: 'module', private: true }));
    // From npm's cache where it can (npm ci filled it); install scripts off: the one that matters,
    // better-sqlite3's native build, is taken from this checkout's when the versions match, since
    // compiling it again takes a minute.
    run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', join(dir.path, tarball)], app);
    const version = (path: string) => (JSON.parse(readFileSync(join(path, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
    if (version(app) === version(ROOT)) {
      execFileSync('mkdir', ['-p', join(app, 'node_modules/better-sqlite3/build/Release')]);
      copyFileSync(join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'), join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'));
    } else {
      run('npm', ['rebuild', 'better-sqlite3'], app);
    }
  }, 180_000);
  afterAll(() => dir.remove());

  it('installs the bin, which serves; punctual/client dispatches to it and reads the job back', async () => {
    const port = await freePort();
    const server = spawn(join(app, 'node_modules/.bin/punctual'), ['serve'], {
      cwd: app,
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir.path, 'punctual.db')}`, PORT: String(port), HOST: '127.0.0.1', LOG_FORMAT: 'json', NODE_ENV: 'development' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout.on('data', (chunk) => (output += chunk));
    server.stderr.on('data', (chunk) => (output += chunk));
    try {
      // The first start prints the key once, as the quickstart shows.
      const key = (await eventually(() => output.match(/API key\s+(pk_[A-Za-z0-9]+)/)?.[1], { what: `the API key in ${output}`, withinMs: 20_000 }))!;
      await waitUntilReady(`http://127.0.0.1:${port}`);
      writeFileSync(
        join(app, 'use-client.mjs'),
        `import { createClient, verifyWebhook } from 'punctual/client';
const client = createClient({ baseUrl: process.argv[2], apiKey: process.argv[3] });
const { jobId } = await client.jobs.dispatch({ payload: { hello: 'world' } });
let job = await client.jobs.get(jobId);
for (let i = 0; i < 200 && job.status !== 'COMPLETED'; i++) { await new Promise((r) => setTimeout(r, 25)); job = await client.jobs.get(jobId); }
console.log(JSON.stringify({ status: job.status, verify: typeof verifyWebhook }));`,
      );
      const printed = JSON.parse(run(process.execPath, ['use-client.mjs', `http://127.0.0.1:${port}`, key], app));
      expect(printed).toEqual({ status: 'COMPLETED', verify: 'function' });
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.on('exit', resolve));
    }
  });

  it('ships the client\'s types, resolved through "exports"', () => {
    writeFileSync(
      join(app, 'typed.ts'),
      `import { createClient, PunctualApiError, type Job } from 'punctual/client';
const client = createClient({ baseUrl: 'http://localhost:8080', apiKey: 'pk_x' });
export const job: Promise<Job> = client.jobs.get('job_x');
export const status: Promise<'QUEUED'> = client.jobs.dispatch({ payload: { a: 1 } }).then((answer) => answer.status);
export const error: string = new PunctualApiError(404, null, new Headers()).code;
// @ts-expect-error a payload is a JSON object
client.jobs.dispatch({ payload: 'text' });
`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
        files: ['typed.ts'],
      }),
    );
    // Throws, with tsc's errors, when a type does not resolve or check.
    run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);
  });
});
