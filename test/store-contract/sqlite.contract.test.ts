import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeTempDir } from '../support/temp-dir.js';
import { describeStoreContract } from './store-contract.js';

describeStoreContract('sqlite', async () => {
  const dir = makeTempDir();
  const store = new SqliteStore({ path: join(dir.path, 'contract.db') });
  await store.migrate();
  return {
    store,
    cleanup: async () => {
      await store.close();
      dir.remove();
    },
  };
});
