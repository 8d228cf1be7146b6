import { readFileSync } from 'node:fs';

/** SPEC.md section 6. A plan's limits; null means "no limit". */
export interface Plan {
  requestsPerSecond: number | null;
  burst: number | null;
  jobsPerMonth: number | null;
  maxRetriesCap: number;
}

export type Plans = Readonly<Record<string, Plan>>;

/**
 * The retries a job gets (SPEC section 6): its own maxRetries, else its project's default, else
 * the plan's cap; never above the cap. Events use it with no job of their own.
 */
export function effectiveMaxRetries(asked: number | null, projectDefault: number | null, plan: Pick<Plan, 'maxRetriesCap'>): number {
  return Math.min(asked ?? projectDefault ?? plan.maxRetriesCap, plan.maxRetriesCap);
}

/** The contract caps retries at 3 whatever a plan says. */
const MAX_RETRIES_CEILING = 3;

export const DEFAULT_PLANS: Plans = {
  free: { requestsPerSecond: 10, burst: 20, jobsPerMonth: 1_000, maxRetriesCap: 1 },
  pro: { requestsPerSecond: 100, burst: 200, jobsPerMonth: 100_000, maxRetriesCap: 3 },
  scale: { requestsPerSecond: 1_000, burst: 2_000, jobsPerMonth: 10_000_000, maxRetriesCap: 3 },
  unlimited: { requestsPerSecond: null, burst: null, jobsPerMonth: null, maxRetriesCap: 3 },
};

export const DEFAULT_PLAN_NAME = 'unlimited';

export class PlanFileError extends Error {}

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The rate-limit pair of a plan: both null (no limit), or a rate above 0 and a burst of at least
 * one. A bucket that can never hold a whole token refuses every request with a Retry-After that
 * never comes true, and a rate of 0 never refills: both are mistakes, stopped at start.
 */
function checkRateLimit(where: string, requestsPerSecond: unknown, burst: unknown): void {
  if (requestsPerSecond === null && burst === null) return;
  if (requestsPerSecond === null || burst === null) {
    throw new PlanFileError(`${where}: "requestsPerSecond" and "burst" must both be null (no rate limit) or both be numbers`);
  }
  if (!isFiniteNumber(requestsPerSecond) || requestsPerSecond <= 0) {
    throw new PlanFileError(`${where}: "requestsPerSecond" must be a number above 0 (got ${JSON.stringify(requestsPerSecond)}); use null for both fields for no rate limit`);
  }
  if (!isFiniteNumber(burst) || burst < 1) {
    throw new PlanFileError(
      `${where}: "burst" must be a number of at least 1 (got ${JSON.stringify(burst)}): a bucket that never holds a whole token refuses every request`,
    );
  }
}

/** Validates one plan from a PUNCTUAL_PLANS file; throws with a sentence that names the field. */
function parsePlan(name: string, raw: unknown): Plan {
  const where = `plan "${name}"`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new PlanFileError(`${where} must be an object`);
  const plan = raw as Record<string, unknown>;
  for (const field of ['requestsPerSecond', 'burst', 'jobsPerMonth', 'maxRetriesCap']) {
    if (!(field in plan)) throw new PlanFileError(`${where} is missing "${field}" (all four fields are required)`);
  }
  const { requestsPerSecond, burst, jobsPerMonth, maxRetriesCap } = plan;
  checkRateLimit(where, requestsPerSecond, burst);
  if (jobsPerMonth !== null && !(Number.isInteger(jobsPerMonth) && (jobsPerMonth as number) >= 0)) {
    throw new PlanFileError(`${where}: "jobsPerMonth" must be null or an integer >= 0`);
  }
  if (!Number.isInteger(maxRetriesCap) || (maxRetriesCap as number) < 0 || (maxRetriesCap as number) > MAX_RETRIES_CEILING) {
    throw new PlanFileError(`${where}: "maxRetriesCap" must be an integer from 0 to ${MAX_RETRIES_CEILING}`);
  }
  return {
    requestsPerSecond: requestsPerSecond as number | null,
    burst: burst as number | null,
    jobsPerMonth: jobsPerMonth as number | null,
    maxRetriesCap: maxRetriesCap as number,
  };
}

/** The default plans, plus (replacing same-named defaults) those of the file at `path`. */
export function loadPlans(path: string | undefined): Plans {
  if (!path) return DEFAULT_PLANS;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new PlanFileError(`PUNCTUAL_PLANS: cannot read ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new PlanFileError(`PUNCTUAL_PLANS: ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new PlanFileError(`PUNCTUAL_PLANS: ${path} must hold a JSON object of plans by name`);
  }
  const plans: Record<string, Plan> = { ...DEFAULT_PLANS };
  for (const [name, value] of Object.entries(raw)) {
    try {
      plans[name] = parsePlan(name, value);
    } catch (err) {
      throw new PlanFileError(`PUNCTUAL_PLANS: ${path}: ${(err as Error).message}`);
    }
  }
  return plans;
}
