/**
 * Bound parameters written so that SQLite's planner does not look at their values. Where it does,
 * it marks the statement to be prepared again whenever that parameter is bound anew
 * (sqlite3VdbeSetVarmask), and better-sqlite3 binds every parameter at every run: every run then
 * prepared the statement again (the claim: 0.36 ms of its 0.45 ms for 5 jobs,
 * `npm run bench:claim-statement`). The planner looks at a bare parameter
 * - in a LIMIT (sqlite3ExprIsInteger, computeLimitRegisters): `limitBy`;
 * - compared with a column that a partial index's WHERE compares with a literal, to see whether
 *   that index applies (exprCompareVariable; `status = @status` against `WHERE status = 'QUEUED'`):
 *   `opaque`, or an INDEXED BY, which leaves partial indexes out of the plan.
 * An expression is not looked at. test/store/sqlite/sqlite-statements.test.ts holds the store's
 * statements to both rules. (With statistics the planner would also look at parameters in ranges:
 * better-sqlite3's SQLite is built with STAT4, and the store never runs ANALYZE.)
 */
export const limitBy = (parameter: `@${string}`): string => `LIMIT (${parameter} + 0)`;

/** The parameter as an expression (a unary plus: the same value, of the same type). */
export const opaque = (parameter: `@${string}`): string => `+${parameter}`;
