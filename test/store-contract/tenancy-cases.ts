/** Contract cases of migrations, settings, teams, projects, API keys and webhook secrets: see store-contract.ts. */
import { expect, it } from 'vitest';
import { ATTEMPT_STORE_METHODS } from '../../src/store/attempt-store.js';
import { AUTH_STORE_METHODS } from '../../src/store/auth-store.js';
import { EVENT_STORE_METHODS } from '../../src/store/event-store.js';
import { JOB_STORE_METHODS } from '../../src/store/job-store.js';
import { OVERVIEW_STORE_METHODS } from '../../src/store/overview-store.js';
import { RETENTION_STORE_METHODS } from '../../src/store/retention-store.js';
import { SCHEDULE_STORE_METHODS } from '../../src/store/schedule-store.js';
import { TENANCY_STORE_METHODS } from '../../src/store/tenancy-store.js';
import type { ContractContext } from './contract-context.js';

export function tenancyCases(contract: ContractContext): void {
  const { T0, makeProject } = contract;
  it("presents every method of every noun's interface as its own (forward-methods.ts)", () => {
    const lists = [TENANCY_STORE_METHODS, AUTH_STORE_METHODS, JOB_STORE_METHODS, ATTEMPT_STORE_METHODS, RETENTION_STORE_METHODS, OVERVIEW_STORE_METHODS, EVENT_STORE_METHODS, SCHEDULE_STORE_METHODS];
    const names: string[] = lists.flat();
    const store = contract.store as unknown as Record<string, unknown>;
    expect(names.filter((name) => typeof store[name] !== 'function')).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it('migrates twice without harm', async () => {
    await contract.store.migrate();
    await contract.store.ping();
  });

  it('migrates a fresh database from three instances at once, applying each migration once', async () => {
    const fresh = await contract.makeDatabase();
    const instances = [fresh.openStore(), fresh.openStore(), fresh.openStore()];
    try {
      // As instances started together do: whoever comes second must find the work done, not redo it or fail.
      await Promise.all(instances.map((instance) => instance.migrate()));
      const rows = await fresh.migrationRows();
      expect(rows.map((row) => row.version)).toEqual(fresh.migrationVersions);
      expect(rows.every((row) => row.name.startsWith(String(row.version).padStart(4, '0')))).toBe(true);
      for (const [i, instance] of instances.entries()) {
        await instance.ping();
        await instance.teamInsert({ id: `team_m${i}`, name: 'T', plan: 'unlimited', createdAt: T0 });
      }
      expect(await instances[0]!.teamCount()).toBe(3);
    } finally {
      for (const instance of instances) await instance.close();
      await fresh.drop();
    }
  });

  it('keeps the first value of a setting', async () => {
    expect(await contract.store.settingGet('k')).toBeNull();
    expect(await contract.store.settingInsertIfAbsent('k', 'one')).toBe('one');
    expect(await contract.store.settingInsertIfAbsent('k', 'two')).toBe('one');
    expect(await contract.store.settingGet('k')).toBe('one');
  });

  it('round-trips teams and projects, and patches projects partially', async () => {
    const project = await makeProject('pro');
    expect(await contract.store.teamGet(project.teamId)).toEqual({ id: project.teamId, name: 'T', plan: 'pro', createdAt: T0 });
    expect(await contract.store.teamUpdate({ teamId: project.teamId, plan: 'free' })).toMatchObject({ name: 'T', plan: 'free' });
    expect(await contract.store.teamUpdate({ teamId: 'team_none', plan: 'free' })).toBeNull();
    expect(await contract.store.projectGet(project.id)).toEqual(project);
    const [a, b] = await Promise.all([
      contract.store.projectUpdate({ projectId: project.id, patch: { deliveryConcurrency: 5 } }),
      contract.store.projectUpdate({ projectId: project.id, patch: { acceptAny2xx: true } }),
    ]);
    expect(a!.deliveryConcurrency).toBe(5);
    expect(b!.acceptAny2xx).toBe(true);
    // Whichever of the two took the row second read the other's field: neither is lost.
    expect([a, b].filter((row) => row!.deliveryConcurrency === 5 && row!.acceptAny2xx === true)).toHaveLength(1);
    expect(await contract.store.projectGet(project.id)).toMatchObject({ deliveryConcurrency: 5, acceptAny2xx: true });
    expect(await contract.store.projectListByTeam(project.teamId)).toHaveLength(1);
    expect(await contract.store.teamCount()).toBeGreaterThan(0);
  });

  it('finds an API key by hash with its project and team; revokes once', async () => {
    const project = await makeProject();
    const hash = Buffer.alloc(32, 7);
    await contract.store.apiKeyInsert({ id: 'key_c1', projectId: project.id, name: 'k', prefix: 'pk_abc', createdAt: T0, lastUsedAt: null, revokedAt: null, hash });
    const principal = await contract.store.apiKeyFindByHash(hash);
    expect(principal!.key).toMatchObject({ id: 'key_c1', revokedAt: null });
    expect(principal!.key.hash.equals(hash)).toBe(true);
    expect(principal!.project).toEqual(project);
    expect(principal!.team.id).toBe(project.teamId);
    expect(await contract.store.apiKeyFindByHash(Buffer.alloc(32, 8))).toBeNull();
    await contract.store.apiKeyTouch({ keyId: 'key_c1', now: T0 + 5 });
    expect((await contract.store.apiKeyGet('key_c1'))!.lastUsedAt).toBe(T0 + 5);
    expect((await contract.store.apiKeyRevoke({ keyId: 'key_c1', now: T0 + 10 }))!.revokedAt).toBe(T0 + 10);
    expect((await contract.store.apiKeyRevoke({ keyId: 'key_c1', now: T0 + 20 }))!.revokedAt).toBe(T0 + 10);
    expect(await contract.store.apiKeyRevoke({ keyId: 'key_none', now: T0 })).toBeNull();
  });

  it('rotates webhook secrets keeping at most two active', async () => {
    const project = await makeProject();
    const rotate = (n: number, now: number) =>
      contract.store.webhookSecretRotate({ projectId: project.id, secret: { id: `whs_r${n}_${project.id}`, projectId: project.id, ciphertext: `sealed-${n}`, createdAt: now, expiresAt: null }, overlapMs: 1000, now });
    await rotate(2, T0 + 1);
    expect((await contract.store.webhookSecretListActive({ projectId: project.id, now: T0 + 1 })).map((s) => [s.ciphertext, s.expiresAt])).toEqual([
      ['sealed-2', null],
      ['sealed-1', T0 + 1001],
    ]);
    await rotate(3, T0 + 2);
    expect((await contract.store.webhookSecretListActive({ projectId: project.id, now: T0 + 2 })).map((s) => s.ciphertext)).toEqual(['sealed-3', 'sealed-2']);
    expect((await contract.store.webhookSecretListActive({ projectId: project.id, now: T0 + 1002 })).map((s) => s.ciphertext)).toEqual(['sealed-3']);
  });
}
