import { expect } from 'vitest';

/** Every answer must be the contract's error shape: never Fastify's default body, never a stack. */
export function expectContractError(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expectContractErrorShape(res);
  expect(JSON.parse(res.body).error).toBe(code);
}

/** SPEC section 5's shape, whatever the code: `{"error", "data": {"message", …}}` as JSON, nothing internal. */
export function expectContractErrorShape(res: { headers: Record<string, unknown>; body: string }) {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(res.body);
  expect(Object.keys(body).sort()).toEqual(['data', 'error']);
  expect(body.error).toMatch(/^[A-Z_]+$/);
  expect(body.data.message).toEqual(expect.any(String));
  expect(res.body).not.toMatch(/statusCode|stack|at .*\.js/);
}
