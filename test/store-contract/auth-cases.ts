/** Contract cases of users, memberships and sessions: see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { ContractContext } from './contract-context.js';

export function authCases(contract: ContractContext): void {
  const { T0, makeProject } = contract;
  describe('users, memberships and sessions', () => {
    const user = (id: string, email: string, isOperator = false) => ({
      id,
      email,
      passwordHash: `scrypt$hash-of-${id}`,
      isOperator,
      createdAt: T0,
      updatedAt: T0,
    });

    it('keeps one user per email, and finds users by id and by email', async () => {
      expect(await contract.store.userCount()).toBe(0);
      expect(await contract.store.userInsert(user('usr_a', 'ann@example.com', true))).toBe(true);
      expect(await contract.store.userInsert(user('usr_b', 'ann@example.com'))).toBe(false);
      expect(await contract.store.userCount()).toBe(1);
      expect(await contract.store.userGet('usr_a')).toEqual({ id: 'usr_a', email: 'ann@example.com', isOperator: true, createdAt: T0, updatedAt: T0 });
      expect(await contract.store.userGet('usr_b')).toBeNull();
      expect(await contract.store.userGetByEmail('ANN@example.com')).toMatchObject({ id: 'usr_a', passwordHash: 'scrypt$hash-of-usr_a' });
      expect(await contract.store.userGetByEmail('bob@example.com')).toBeNull();
      expect(await contract.store.userList()).toEqual([await contract.store.userGet('usr_a')]);
      expect(await contract.store.userUpdatePassword({ userId: 'usr_a', passwordHash: 'scrypt$new', now: T0 + 5 })).toBe(true);
      expect(await contract.store.userUpdatePassword({ userId: 'usr_none', passwordHash: 'scrypt$new', now: T0 + 5 })).toBe(false);
      expect(await contract.store.userGetPasswordHash('usr_a')).toBe('scrypt$new');
      expect(await contract.store.userGet('usr_a')).toMatchObject({ updatedAt: T0 + 5 });
    });

    it('lists the teams a user belongs to, and every team', async () => {
      const p1 = await makeProject();
      const p2 = await makeProject();
      await contract.store.userInsert(user('usr_m', 'm@example.com'));
      expect(await contract.store.teamListByUser('usr_m')).toEqual([]);
      await contract.store.teamMembershipInsert({ userId: 'usr_m', teamId: p2.teamId, now: T0 });
      await contract.store.teamMembershipInsert({ userId: 'usr_m', teamId: p2.teamId, now: T0 + 1 });
      expect((await contract.store.teamListByUser('usr_m')).map((t) => t.id)).toEqual([p2.teamId]);
      const all = (await contract.store.teamList()).map((t) => t.id);
      expect(all).toEqual(expect.arrayContaining([p1.teamId, p2.teamId]));
    });

    it('finds a session with its user until it expires, and deletes sessions one by one, by user and when expired', async () => {
      await contract.store.userInsert(user('usr_s', 's@example.com', true));
      await contract.store.userInsert(user('usr_t', 't@example.com'));
      const session = (n: number, userId: string, expiresAt: number) => ({
        tokenHash: Buffer.alloc(32, n),
        userId,
        csrfToken: `csrf-${n}`,
        createdAt: T0,
        expiresAt,
      });
      await contract.store.sessionInsert(session(1, 'usr_s', T0 + 1_000));
      await contract.store.sessionInsert(session(2, 'usr_s', T0 + 1_000));
      await contract.store.sessionInsert(session(3, 'usr_s', T0 + 1_000));
      await contract.store.sessionInsert(session(4, 'usr_t', T0 + 10));
      const found = await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 1), now: T0 });
      expect(found).toEqual({
        session: session(1, 'usr_s', T0 + 1_000),
        user: { id: 'usr_s', email: 's@example.com', isOperator: true, createdAt: T0, updatedAt: T0 },
      });
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 4), now: T0 + 10 })).toBeNull();
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 9), now: T0 })).toBeNull();
      await contract.store.sessionDelete(Buffer.alloc(32, 1));
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 1), now: T0 })).toBeNull();
      await contract.store.sessionDeleteByUser({ userId: 'usr_s', keepTokenHash: Buffer.alloc(32, 2) });
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 2), now: T0 })).not.toBeNull();
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 3), now: T0 })).toBeNull();
      expect(await contract.store.sessionDeleteExpired(T0 + 10)).toBe(1);
      await contract.store.sessionDeleteByUser({ userId: 'usr_s', keepTokenHash: null });
      expect(await contract.store.sessionGet({ tokenHash: Buffer.alloc(32, 2), now: T0 })).toBeNull();
    });
  });
}
