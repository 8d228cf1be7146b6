import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/, in the order data flows through them: a request enters at the top (the CLI,
 * the server, the dashboard, the API) and goes through the services down to the store; a due job
 * is claimed (claims/), run (delivery/) and recorded (store/); maintenance loops work on the store
 * alone. A module imports only from its own layer or from the layers after it (type-only imports
 * included: they tie the modules together just the same), so the folders read as a stack and no
 * change to a later layer needs one before it. A new folder or root file must be placed here before
 * it can be imported from anywhere.
 */
const LAYERS: { layer: string; holds: string[] }[] = [
  // The typed client (punctual/client) runs in users' programs: it needs only the signature check.
  { layer: 'client', holds: ['client/'] },
  { layer: 'cli', holds: ['cli/'] },
  { layer: 'composition', holds: ['runtime.ts', 'server.ts'] },
  { layer: 'engine', holds: ['engine/'] },
  { layer: 'dashboard', holds: ['dashboard/'] },
  { layer: 'api', holds: ['api/'] },
  { layer: 'services', holds: ['services/'] },
  { layer: 'claims', holds: ['claims/'] },
  { layer: 'delivery', holds: ['delivery/'] },
  { layer: 'maintenance', holds: ['maintenance/'] },
  { layer: 'rate-limits', holds: ['rate-limits/'] },
  { layer: 'metrics', holds: ['metrics.ts'] },
  { layer: 'store', holds: ['store/'] },
  { layer: 'threads', holds: ['threads/'] },
  { layer: 'tracing', holds: ['tracing/'] },
  { layer: 'crypto', holds: ['crypto/'] },
  { layer: 'cron', holds: ['cron/'] },
  { layer: 'foundation', holds: ['errors.ts', 'clock.ts', 'timestamp.ts', 'version.ts', 'plans.ts', 'config.ts', 'development-conveniences.ts', 'retention.ts'] },
];

/** Only the SQLite and PostgreSQL folders know their driver; everything else sees store.ts. */
const DRIVER_FOLDERS = ['store/sqlite/', 'store/postgres/'];

/** Fastify's lib/ keeps most files under 450 lines; a longer one holds more than one concern. */
const MAX_LINES = 400;
/** Generated, not written: the client's types, as long as the API is wide (npm run generate:client). */
const GENERATED = ['client/api-types.ts'];

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** Relative imports of a file (static, re-exports and dynamic), as paths under src/ ending in .ts. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)].map((m) => m[1]!);
  return specifiers.map((specifier) => relative(SRC, resolve(SRC, dirname(file), specifier)).replace(/\.js$/, '.ts'));
}

function layerOf(file: string): number {
  return LAYERS.findIndex(({ holds }) => holds.some((place) => (place.endsWith('/') ? file.startsWith(place) : file === place)));
}

const files = sourceFiles(SRC);

describe('the layering of src/', () => {
  it('places every module in a layer', () => {
    expect(files.filter((file) => layerOf(file) === -1)).toEqual([]);
  });

  it('imports only from the same layer or the layers after it', () => {
    const upward = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => layerOf(target) !== -1 && layerOf(target) < layerOf(file))
        .map((target) => `${file} (${LAYERS[layerOf(file)]!.layer}) imports ${target} (${LAYERS[layerOf(target)]?.layer ?? 'no layer'})`),
    );
    expect(upward).toEqual([]);
  });

  it('keeps each store driver behind store/', () => {
    const reaching = files.flatMap((file) => {
      const own = DRIVER_FOLDERS.find((folder) => file.startsWith(folder));
      return importsOf(file)
        .filter((target) => DRIVER_FOLDERS.some((folder) => target.startsWith(folder) && folder !== own) && file !== 'store/open-store.ts')
        .map((target) => `${file} imports ${target}`);
    });
    expect(reaching).toEqual([]);
  });

  it('keeps the client to itself and the signature check, so a program that imports it loads no server', () => {
    const reached = new Set<string>();
    const visit = (file: string): void => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const target of importsOf(file)) if (files.includes(target)) visit(target);
    };
    visit('client/index.ts');
    // signature.ts's one import is a type (the trace context it signs beside), so only it loads.
    expect([...reached].filter((file) => !file.startsWith('client/')).sort()).toEqual(['crypto/random-ids.ts', 'delivery/signature.ts', 'tracing/trace-context.ts']);
  });

  it('keeps OpenTelemetry in one module, which only a dynamic import loads', () => {
    const otel = files.filter((file) => /from\s*'@opentelemetry\//.test(readFileSync(join(SRC, file), 'utf8')));
    expect(otel).toEqual(['tracing/otel-tracer.ts']);
    const staticImporters = files.filter((file) => /\bfrom\s*'\.{1,2}\/[^']*otel-tracer\.js'/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(staticImporters).toEqual([]);
    expect(importsOf('tracing/load-tracer.ts')).toContain('tracing/otel-tracer.ts');
  });

  it('finds the imports it checks (a parser that sees none would pass anything)', () => {
    expect(importsOf('server.ts')).toContain('runtime.ts');
    expect(importsOf('engine/delivery-engine.ts')).toContain('claims/claim-loop.ts');
    expect(layerOf('store/store.ts')).toBeGreaterThan(layerOf('delivery/attempt-runner.ts'));
  });

  it('has no import loop between any two files', () => {
    // Tarjan's strongly connected components over the same graph (type-only imports included):
    // a component of more than one file is a loop, which leaves no file of it to read first.
    const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))]));
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const loops: string[] = [];
    const visit = (file: string): void => {
      index.set(file, index.size);
      low.set(file, index.get(file)!);
      stack.push(file);
      onStack.add(file);
      for (const target of graph.get(file)!) {
        if (!index.has(target)) {
          visit(target);
          low.set(file, Math.min(low.get(file)!, low.get(target)!));
        } else if (onStack.has(target)) {
          low.set(file, Math.min(low.get(file)!, index.get(target)!));
        }
      }
      if (low.get(file) !== index.get(file)) return;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) loops.push(component.sort().join(' <-> '));
    };
    for (const file of files) if (!index.has(file)) visit(file);
    expect(loops).toEqual([]);
  });

  it('keeps every file of src/ to at most 400 lines, one concern each', () => {
    const long = files
      .filter((file) => !GENERATED.includes(file))
      .map((file) => ({ file, lines: readFileSync(join(SRC, file), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });
});
