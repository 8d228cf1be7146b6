import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { testDatabase } from './make-app.js';
import { makeTempDir } from './temp-dir.js';

/** The built CLI (npm test builds it first), run as a user would run it. */
export const CLI = fileURLToPath(new URL('../../dist/cli/punctual.js', import.meta.url));

export function runCli(args: string[], env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The CLI as a person at a terminal runs it: under util-linux script(1), which gives it a
 * pseudo-terminal for stdout and stderr (both end up in `output`). Null where script(1) is missing.
 */
export function runOnTerminal(args: string[], env: Record<string, string>): { status: number | null; output: string } | null {
  const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, CLI, ...args].map(quote).join(' ');
  const result = spawnSync('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000 });
  if (result.error) return null;
  return { status: result.status, output: result.stdout };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface RunningServer {
  child: ChildProcess;
  output: () => string;
  waitForOutput: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
  /** The exit code, once the process ends by itself. */
  exited: Promise<number | null>;
}

export function startServer(env: Record<string, string>): RunningServer {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => output,
    async waitForOutput(pattern, timeoutMs = 15_000) {
      // Stops early when the process exited: no more output can come.
      const match = await eventually(() => output.match(pattern) ?? (child.exitCode !== null ? 'exited' : null), {
        what: `${pattern} in the output`,
        until: (seen) => seen !== null,
        withinMs: timeoutMs,
        everyMs: 25,
      }).catch(() => null);
      if (match && match !== 'exited') return match;
      throw new Error(`Timed out waiting for ${pattern}; output so far:\n${output}`);
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface FirstStart {
  server: RunningServer;
  base: string;
  key: string;
  adminToken: string;
  projectId: string;
}

/**
 * `punctual serve` on an empty database, as a new user starts it: reads the key, admin token and
 * project it prints once, waits until it is ready, then applies `projectSettings` (a webhook URL,
 * say) through the management API.
 */
export async function startFirstServer(env: Record<string, string>, projectSettings: Record<string, unknown>): Promise<FirstStart> {
  const server = startServer(env);
  const key = (await server.waitForOutput(/API key\s+(pk_[A-Za-z0-9]+)/))[1]!;
  const adminToken = (await server.waitForOutput(/Admin token\s+(adm_[A-Za-z0-9]+)/))[1]!;
  const projectId = (await server.waitForOutput(/Project\s+(prj_[A-Za-z0-9]+)/))[1]!;
  const base = `http://127.0.0.1:${env.PORT}`;
  await waitUntilReady(base);
  const patched = await fetch(`${base}/manage/v1/projects/${projectId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(projectSettings),
  });
  if (patched.status !== 200) throw new Error(`PATCH project answered ${patched.status}: ${await patched.text()}`);
  return { server, base, key, adminToken, projectId };
}

/** Polls GET /readyz until it answers 200 (storage reachable), failing after `timeoutMs`. */
export async function waitUntilReady(base: string, timeoutMs = 20_000): Promise<void> {
  await eventually(() => fetch(`${base}/readyz`).then((r) => r.status, () => 0), { what: `${base} ready`, until: (status) => status === 200, withinMs: timeoutMs, everyMs: 25 });
}

/** A team, a project pointed at `webhookUrl` with deliveryConcurrency 1000, and a key, made with the CLI on env's database. */
export function projectByCli(env: Record<string, string>, webhookUrl: string): { projectId: string; key: string } {
  const json = (args: string[]) => {
    const result = runCli(args, env);
    if (result.status !== 0) throw new Error(`punctual ${args.join(' ')} failed: ${result.stderr}`);
    return JSON.parse(result.stdout) as Record<string, string>;
  };
  const team = json(['teams', 'create', '--name', 'instances']);
  const project = json(['projects', 'create', '--team', team.teamId!, '--name', 'p', '--webhook-url', webhookUrl]);
  json(['projects', 'update', project.projectId!, '--json', '{"deliveryConcurrency": 1000}']);
  return { projectId: project.projectId!, key: json(['keys', 'create', '--project', project.projectId!, '--name', 'k']).key! };
}

/** `punctual serve` on a free port of 127.0.0.1 with env, once it is ready. */
export async function startReadyServer(env: Record<string, string>): Promise<{ server: RunningServer; base: string }> {
  const port = await freePort();
  const server = startServer({ ...env, PORT: String(port), HOST: '127.0.0.1' });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(base);
  } catch (error) {
    await server.stop('SIGKILL');
    throw error;
  }
  return { server, base };
}

/**
 * The multi-instance tests' fixture: one fresh database (on PostgreSQL, a schema) that `punctual
 * serve` processes share, the servers started on it, and their removal. setUp() in beforeAll,
 * tearDown() in afterAll (it stops every server with `stopSignal`).
 */
export function sharedDatabase(stopSignal: NodeJS.Signals = 'SIGTERM') {
  const dir = makeTempDir();
  let database: { url: string; drop: () => Promise<void> } | null = null;
  const servers: RunningServer[] = [];
  return {
    get url(): string {
      if (!database) throw new Error('sharedDatabase: setUp() first');
      return database.url;
    },
    async setUp(): Promise<void> {
      database = await testDatabase(join(dir.path, 'unused.db'));
    },
    /** One more `punctual serve` on the database, once ready. */
    async start(env: Record<string, string>): Promise<{ server: RunningServer; base: string }> {
      const started = await startReadyServer({ DATABASE_URL: this.url, ...env });
      servers.push(started.server);
      return started;
    },
    async tearDown(): Promise<void> {
      for (const server of servers) await server.stop(stopSignal);
      await database?.drop();
      dir.remove();
    },
  };
}
