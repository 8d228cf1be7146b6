import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../support/postgres.js';
import { describeStoreContract } from './store-contract.js';

describeStoreContract(
  'postgres',
  async () => {
    const schema = await makeSchema();
    const store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 5 });
    await store.migrate();
    return {
      store,
      cleanup: async () => {
        await store.close();
        await schema.drop();
      },
    };
  },
  await postgresAvailable(),
);
