import { afterEach, beforeEach, describe } from 'vitest';
import { PROJECT_DEFAULTS } from '../../src/services/project-settings.js';
import type { JobCreateParams, NewJob, ProjectRow, Store } from '../../src/store/store.js';
import type { ContractContext, ContractDatabase } from './contract-context.js';
import { authCases } from './auth-cases.js';
import { deliveryCases } from './delivery-cases.js';
import { eventCases } from './event-cases.js';
import { filterCases } from './filter-cases.js';
import { healthCases } from './health-cases.js';
import { jobCases } from './job-cases.js';
import { keyCases } from './key-cases.js';
import { overviewCases } from './overview-cases.js';
import { retentionCases } from './retention-cases.js';
import { scheduleCases } from './schedule-cases.js';
import { tenancyCases } from './tenancy-cases.js';

export type { ContractContext, ContractDatabase } from './contract-context.js';

const DAY_MS = 86_400_000;

/**
 * The behaviour every store must have, whatever its engine. A store's test file calls
 * describeStoreContract with a factory for a fresh database; a behaviour change starts here, in
 * the cases of its noun.
 */
export function describeStoreContract(name: string, makeDatabase: () => Promise<ContractDatabase>, enabled = true): void {
  describe.runIf(enabled)(`store contract: ${name}`, () => {
    let database: ContractDatabase;
    let store: Store;
    let seq = 0;
    const T0 = Date.parse('2027-03-10T12:00:00.000Z');

    beforeEach(async () => {
      database = await makeDatabase();
      store = database.openStore();
      await store.migrate();
    });
    afterEach(async () => {
      await store.close();
      await database.drop();
    });

    async function makeProject(teamPlan = 'unlimited'): Promise<ProjectRow> {
      seq += 1;
      const teamId = `team_c${seq}`;
      await store.teamInsert({ id: teamId, name: 'T', plan: teamPlan, createdAt: T0 });
      const project: ProjectRow = {
        id: `prj_c${seq}`,
        teamId,
        name: 'P',
        webhookUrl: 'http://127.0.0.1:1/x',
        ...PROJECT_DEFAULTS,
        createdAt: T0,
      };
      await store.projectInsert({ project, secret: { id: `whs_c${seq}`, projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
      return project;
    }

    const job = (id: string, overrides: Partial<NewJob> = {}): NewJob => ({ id, payload: '{"a":1}', scheduledFor: null, runAt: T0, maxRetries: 3, ...overrides });

    function create(project: ProjectRow, jobs: NewJob[], extra: Partial<JobCreateParams> = {}) {
      return store.jobCreate({
        projectId: project.id,
        teamId: project.teamId,
        now: T0,
        jobs,
        quota: null,
        idempotency: null,
        answer: { kind: 'single', statusCode: 201, body: '{}' },
        ...extra,
      });
    }

    const c: ContractContext = {
      get store() {
        return store;
      },
      get database() {
        return database;
      },
      makeDatabase,
      T0,
      DAY_MS,
      makeProject,
      job,
      create,
    };

    tenancyCases(c);
    jobCases(c);
    filterCases(c);
    deliveryCases(c);
    keyCases(c);
    overviewCases(c);
    retentionCases(c);
    eventCases(c);
    healthCases(c);
    scheduleCases(c);
    authCases(c);
  });
}
