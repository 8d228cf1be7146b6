/**
 * Loaded with `node --import` into the Punctual processes of a PostgreSQL benchmark run
 * (bench/pg-bench.ts): counts the statements each process sends, in total and by SQL text. Every
 * pg query, pooled or not, goes through Client.prototype.query; the wrapper adds one counter
 * increment and one Map update per statement, nothing else. On SIGUSR2 it prints one line,
 * `BENCH_PG_QUERIES {"total", "byText"}`, on stdout.
 */
import pg from 'pg';

const byText = new Map();
let total = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, values, callback) {
  total += 1;
  const text = typeof config === 'string' ? config : config?.text;
  if (typeof text === 'string') byText.set(text, (byText.get(text) ?? 0) + 1);
  return query.call(this, config, values, callback);
};
process.on('SIGUSR2', () => {
  process.stdout.write(`BENCH_PG_QUERIES ${JSON.stringify({ total, byText: Object.fromEntries(byText) })}\n`);
});
