// Preloaded into a spawned `punctual serve` (NODE_OPTIONS=--import): as the process exits, says on
// stderr whether the OpenTelemetry SDK was ever loaded. Its packages are CommonJS, so every module
// loaded from them is in require's cache, however it was imported.
import { createRequire } from 'node:module';
import { sep } from 'node:path';

const require = createRequire(import.meta.url);
const SDK = `${sep}@opentelemetry${sep}sdk-trace-base${sep}`;

process.on('exit', () => {
  const loaded = Object.keys(require.cache).some((path) => path.includes(SDK));
  process.stderr.write(`opentelemetry sdk loaded: ${loaded}\n`);
});
