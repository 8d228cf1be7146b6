import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_PATH, clientTypesSource, openApiDocument } from '../../scripts/openapi-document.js';

/** The client's committed types are what openapi-typescript makes of the app's /openapi.json today. */
describe('src/client/api-types.ts', () => {
  it('matches /openapi.json (npm run generate:client writes it again)', async () => {
    const committed = readFileSync(new URL(`../../${CLIENT_TYPES_PATH}`, import.meta.url), 'utf8');
    const generated = await clientTypesSource(await openApiDocument());
    expect(committed.length).toBeGreaterThan(1000);
    expect(committed === generated, 'src/client/api-types.ts differs from /openapi.json: run npm run generate:client').toBe(true);
  });
});
