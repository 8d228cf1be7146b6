import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CLASSES } from '../src/errors.js';

/** The contract as the team keeps it, beside the repository; the repository carries a copy for its users. */
const TEAM_SPEC = new URL('../../shared/SPEC.md', import.meta.url);

/** errors.ts and SPEC.md section 5 name the same codes with the same statuses. */
describe('error table', () => {
  const spec = readFileSync(new URL('../SPEC.md', import.meta.url), 'utf8');

  it.runIf(existsSync(TEAM_SPEC))("the repository's SPEC.md is the team's contract, unchanged", () => {
    expect(spec).toBe(readFileSync(TEAM_SPEC, 'utf8'));
  });

  const section = spec.slice(spec.indexOf('## 5. Errors'), spec.indexOf('## 6.'));
  const rows = [...section.matchAll(/^\| ([A-Z_]+) \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);

  it('has one class per SPEC code, with its status', () => {
    expect(rows.length).toBeGreaterThan(10);
    const ours = ERROR_CLASSES.map((ErrorClass) => {
      const e = new ErrorClass('x');
      return [e.code, e.statusCode];
    });
    expect(ours.sort()).toEqual(rows.sort());
  });
});
