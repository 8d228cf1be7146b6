import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { CLI, freePort, startFirstServer, type FirstStart } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';
import { codeBlocks, docFiles, read, ROOT, type CodeBlock } from './markdown.js';

/**
 * Every example the docs mark to run (```sh run, and the README's ```js receiver and ```js
 * client) is run, in document order, against one real `punctual serve` started as the quickstart
 * starts it, and must succeed: curl fails on any 4xx or 5xx here. The values the docs show come
 * from that first start (its key, token, project, team, secret); ids an example's answer shows
 * (a jobId, a nextCursor) stand for the ones the real answer gave; and the docs' times, written
 * around DOC_NOW, are moved to now, so that "next month" stays next month.
 */
const DOC_NOW = Date.parse('2026-11-25T00:00:00Z');
const TIMESTAMP = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g;
/** Pairs an example's shown answer with the real one by these fields. */
const LEARNED = /"(\w*Id|nextCursor)"\s*:\s*"([^"]+)"/g;

const PRELUDE = `set -euo pipefail
curl() { command curl --silent --show-error --fail-with-body "$@"; echo; }
npx() { if [ "$1" = punctual ]; then shift; node "$PUNCTUAL_CLI" "$@"; else command npx "$@"; fi; }
`;

describe("the docs' examples, against a running server", () => {
  const dir = makeTempDir();
  const artifacts = join(ROOT, 'test-artifacts', 'docs');
  const env: Record<string, string> = { HOST: '127.0.0.1', LOG_FORMAT: 'json', DATABASE_URL: `sqlite:${join(dir.path, 'docs.db')}` };
  let started: FirstStart;
  let receiver: ChildProcess | null = null;
  let receiverOutput = '';
  const substitutions = new Map<string, string>();

  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    env.PORT = String(await freePort());
    started = await startFirstServer(env, {});
    const printed = (pattern: RegExp) => started.server.output().match(pattern)![1]!;
    const receiverPort = await freePort();
    const job = await fetch(`${started.base}/api/jobs/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${started.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { for: 'the docs' }, scheduledFor: new Date(Date.now() + 86_400_000).toISOString() }),
    });
    Object.assign(env, {
      PUNCTUAL: started.base,
      API_KEY: started.key,
      ADMIN_TOKEN: started.adminToken,
      PROJECT_ID: started.projectId,
      TEAM_ID: printed(/Team\s+(team_\w+)/),
      WEBHOOK_SECRET: printed(/Webhook secret\s+(whsec_\S+)/),
      JOB_ID: ((await job.json()) as { jobId: string }).jobId,
      PUNCTUAL_CLI: CLI,
    });
    // The README's first-start message, as printed on the machine that wrote it.
    for (const [shown, real] of [
      ['http://localhost:8080', started.base],
      ['pk_wTgmv1oLMexCMguUrAaVZI15PvCdvwNXKNHuNvd8', env.API_KEY!],
      ['adm_rtflD8I2IfDciGSg7XK5sbF7L4mwScslVFjXRttD', env.ADMIN_TOKEN!],
      ['prj_yTKKINZ10YMxJaec', env.PROJECT_ID!],
      ['team_szRoKgWEJXWor0mI', env.TEAM_ID!],
      ['http://127.0.0.1:3000/', `http://127.0.0.1:${receiverPort}/`],
      ['listen(3000)', `listen(${receiverPort})`],
    ]) {
      substitutions.set(shown!, real!);
    }
  });
  afterAll(async () => {
    receiver?.kill();
    await started?.server.stop();
    dir.remove();
  });

  const prepare = (code: string): string => {
    let text = code;
    for (const [shown, real] of substitutions) text = text.split(shown).join(real);
    return text.replace(TIMESTAMP, (time) => new Date(Date.parse(time) - DOC_NOW + Date.now()).toISOString());
  };

  /** What an example's shown answer calls an id, the real answer's id is called from now on. */
  const learn = (shown: string, real: string) => {
    const byField = (text: string) => {
      const values = new Map<string, string[]>();
      for (const [, field, value] of text.matchAll(LEARNED)) values.set(field!, [...(values.get(field!) ?? []), value!]);
      return values;
    };
    const realValues = byField(real);
    for (const [field, values] of byField(shown)) {
      values.forEach((value, i) => {
        const actual = realValues.get(field)?.[i];
        if (actual && actual !== value && !substitutions.has(value)) substitutions.set(value, actual);
      });
    }
  };

  const runShell = (block: CodeBlock, file: string, next: CodeBlock | undefined) => {
    const result = spawnSync('bash', ['-c', PRELUDE + prepare(block.code)], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 150_000 });
    expect(result.status, `${file}:${block.line} failed:\n${prepare(block.code)}\n${result.stdout}\n${result.stderr}`).toBe(0);
    if (next && next.line <= block.line + block.code.split('\n').length + 3 && /^(json|http)$/.test(next.info)) learn(next.code, result.stdout);
  };

  const runNode = (block: CodeBlock, file: string): string => {
    // Inside the repository, so that `punctual/client` resolves to this package itself (dist/).
    const path = join(artifacts, `${file.replace(/\W/g, '-')}-${block.line}.mjs`);
    writeFileSync(path, prepare(block.code));
    return path;
  };

  const runnable = docFiles().filter((file) => codeBlocks(read(file)).some((block) => /^(sh run|js receiver|js client)$/.test(block.info)));

  it('finds the examples to run', () => {
    expect(runnable).toContain('README.md');
    expect(runnable.length).toBeGreaterThan(5);
  });

  for (const file of runnable) {
    it(`runs ${file}`, async () => {
      const blocks = codeBlocks(read(file));
      for (const [i, block] of blocks.entries()) {
        if (block.info === 'sh run') runShell(block, file, blocks[i + 1]);
        if (block.info === 'js receiver') {
          const path = runNode(block, file);
          receiver = spawn(process.execPath, [path], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
          receiver.stdout!.on('data', (chunk) => (receiverOutput += chunk));
          receiver.stderr!.on('data', (chunk) => (receiverOutput += chunk));
          const port = Number(substitutions.get('listen(3000)')!.match(/\d+/)![0]);
          await eventually(() => new Promise<boolean>((resolve) => connect(port, '127.0.0.1').on('connect', function (this: { end(): void }) { this.end(); resolve(true); }).on('error', () => resolve(false))), {
            what: `${file}:${block.line}'s receiver listening`,
          });
        }
        if (block.info === 'js client') {
          const result = spawnSync(process.execPath, [runNode(block, file)], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 150_000 });
          expect(result.status, `${file}:${block.line} failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
        }
      }
      if (file === 'README.md') {
        // The end-to-end example's receiver verified the signature of the job it was sent.
        await eventually(() => receiverOutput, { what: 'the receiver printing the verified delivery', until: (output) => /job job_\S+ attempt 1 \{ orderId: 1234 \}/.test(output) });
      }
      // A file runs each of its commands as a process of its own (cli.md sixteen, each an npx start): a bound on a
      // hang, not on speed, so it leaves room for a loaded machine.
    }, 180_000);
  }
});
