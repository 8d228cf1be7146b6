import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../scripts/openapi-document.js';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { usageText } from '../../src/cli/usage.js';
import { ERROR_CLASSES } from '../../src/errors.js';
import { Metrics } from '../../src/metrics.js';
import { anchors, codeBlocks, docFiles, read, ROOT, tableColumn } from './markdown.js';

/** Each reference in docs/reference/ says what the code does: these compare them with the source. */
describe('the references, against the code', () => {
  it('configuration.md documents every variable the code reads, and no other', () => {
    const sources = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
      );
    const readByCode = new Set<string>();
    for (const file of sources('src')) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const [, name] of text.matchAll(/\benv(?:\.|\[')([A-Z][A-Z0-9_]+)/g)) readByCode.add(name!);
    }
    // config.ts names the variables it reads through a list (the OTLP endpoints, the conveniences).
    for (const [, name] of readFileSync(join(ROOT, 'src/config.ts'), 'utf8').matchAll(/'((?:PUNCTUAL|OTEL)_[A-Z0-9_]+)'/g)) readByCode.add(name!);
    expect(readByCode.size).toBeGreaterThan(25);

    const doc = read('docs/reference/configuration.md');
    const table = tableColumn(doc, /^\| variable \| default \| meaning \|$/);
    const documented = table.map(([name]) => name!.replace(/`/g, ''));
    const tableText = table.flat().join(' ');
    expect([...readByCode].filter((name) => !tableText.includes(`\`${name}\``))).toEqual([]);
    // Read by a library Punctual loads rather than by its own code.
    const byLibraries = ['OTEL_SERVICE_NAME'];
    expect(documented.filter((name) => !readByCode.has(name) && !byLibraries.includes(name))).toEqual([]);
  });

  it('metrics.md lists every metric of the registry, with its type and help text', async () => {
    const metrics = new Metrics({ jobCountByStatus: async () => ({ QUEUED: 0, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 }), jobCountKeysWaiting: async () => 0, storeSize: async () => ({ databaseBytes: 0, walBytes: null }), webhookHealthCounts: async () => ({ failing: 0, held: 0 }) });
    // prom-client's own process metrics are named, not listed, in the reference.
    const ours = (await metrics.registry.getMetricsAsJSON())
      .filter((metric) => !/^punctual_(process|nodejs)_/.test(metric.name))
      .map((metric) => {
        const labels = (metrics.registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
        return [`\`${metric.name}${labels.length ? `{${labels.join(',')}}` : ''}\``, String(metric.type), metric.help];
      });
    const rows = tableColumn(read('docs/reference/metrics.md'), /^\| metric \| type \| help text \| what it counts \|$/).map((row) => row.slice(0, 3));
    expect(ours.length).toBeGreaterThan(15);
    expect(rows.sort()).toEqual(ours.sort());
  });

  it('errors.md has every code of src/errors.ts with its status, and no other', () => {
    const rows = tableColumn(read('docs/reference/errors.md'), /^\| code \| HTTP \| when \|$/).map(([code, status]) => [code!.replace(/`/g, ''), Number(status)]);
    const ours = ERROR_CLASSES.map((ErrorClass) => {
      const error = new ErrorClass('');
      return [error.code, error.statusCode];
    });
    expect(rows.sort()).toEqual(ours.sort());
  });

  it("cli.md shows `punctual --help` as the CLI prints it", () => {
    const help = codeBlocks(read('docs/reference/cli.md')).find((block) => block.info === 'text' && block.code.startsWith('Usage: punctual'));
    expect(help?.code).toBe(usageText(COMMANDS));
  });

  it('the API references list every route of /openapi.json, and no other', async () => {
    const document = (await openApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const served = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    const documented = ['docs/reference/job-api.md', 'docs/reference/management-api.md'].flatMap((file) =>
      tableColumn(read(file), /^\| route \| what it does \|$/).map(([route]) => route!.replace(/`/g, '')),
    );
    expect(served.length).toBeGreaterThan(35);
    expect(documented.sort()).toEqual(served.sort());
  });
});

describe('the docs', () => {
  it('README.md stays a front door: at most 300 lines, with the commands CI checks for', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('npm test');
    expect(readme).toContain('npm start');
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of docFiles()) {
      // Links outside code blocks: [text](target), targets relative to the file.
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const linked = path ? normalize(join(dirname(file), path)) : file;
        if (!existsSync(join(ROOT, linked))) {
          broken.push(`${file}: ${target} (no ${linked})`);
        } else if (anchor && linked.endsWith('.md') && !anchors(read(linked)).has(anchor)) {
          broken.push(`${file}: ${target} (no heading #${anchor} in ${relative('.', linked)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

