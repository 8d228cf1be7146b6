/** `npm run generate:client`: writes src/client/api-types.ts from the app's /openapi.json. */
import { writeFileSync } from 'node:fs';
import { CLIENT_TYPES_PATH, clientTypesSource, openApiDocument } from './openapi-document.js';

writeFileSync(CLIENT_TYPES_PATH, await clientTypesSource(await openApiDocument()));
console.log(`wrote ${CLIENT_TYPES_PATH}`);
