import type { SessionRow, UserRow } from './auth-store.js';

/** The session-with-user row of either store (SessionGet in both queries/auth.ts) as the contract's types. */
export function sessionFromRow(row: Record<string, unknown>): { session: SessionRow; user: UserRow } {
  return {
    session: {
      tokenHash: Buffer.from(row.tokenHash as Uint8Array),
      userId: row.userId as string,
      csrfToken: row.csrfToken as string,
      createdAt: Number(row.createdAt),
      expiresAt: Number(row.expiresAt),
    },
    user: {
      id: row.userId as string,
      email: row.email as string,
      // SQLite answers 0/1, PostgreSQL a boolean.
      isOperator: row.isOperator === true || row.isOperator === 1,
      createdAt: Number(row.userCreatedAt),
      updatedAt: Number(row.userUpdatedAt),
    },
  };
}

/** SQLite has no boolean: is_operator comes back as 0/1. */
export function userFromRow<T extends { isOperator: unknown }>(row: T): T & { isOperator: boolean } {
  return { ...row, isOperator: row.isOperator === true || row.isOperator === 1 };
}
