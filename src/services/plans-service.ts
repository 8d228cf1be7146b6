import { DEFAULT_PLAN_NAME, type Plan, type Plans } from '../plans.js';
import type { TeamRow } from '../store/store.js';

/** The code of the process warning about a team whose plan is not configured (see planOf). */
export const UNKNOWN_PLAN_WARNING = 'PUNCTUAL_UNKNOWN_PLAN';

/**
 * The configured plans (PUNCTUAL_PLANS) as the services look them up: a team's plan, and whether a
 * plan name may be given to a team. The rules of a plan (its retries, its limits) are src/plans.ts's.
 */
export class PlansService {
  /** Teams already warned about a plan that is not configured: the plan is read on every request. */
  private readonly warnedOfUnknownPlan = new Set<string>();

  constructor(private readonly plans: Plans) {}

  /** The names a team may be put on. */
  get names(): string[] {
    return Object.keys(this.plans);
  }

  has(name: string): boolean {
    return Object.hasOwn(this.plans, name);
  }

  planOf(team: TeamRow): Plan {
    if (Object.hasOwn(this.plans, team.plan)) return this.plans[team.plan]!;
    // A plan removed from PUNCTUAL_PLANS after teams were put on it. Refusing the team's every
    // request would be an outage for a configuration slip, so it is served on the default plan;
    // but that may lift its limits, so the operator is told, once per team and process.
    if (!this.warnedOfUnknownPlan.has(team.id)) {
      this.warnedOfUnknownPlan.add(team.id);
      process.emitWarning(
        `team ${team.id} is on plan "${team.plan}", which is not among the configured plans (${Object.keys(this.plans).join(', ')}): ` +
          `it gets the limits of plan "${DEFAULT_PLAN_NAME}" until PUNCTUAL_PLANS defines "${team.plan}" again or the team is moved to another plan`,
        { code: UNKNOWN_PLAN_WARNING },
      );
    }
    return this.plans[DEFAULT_PLAN_NAME]!;
  }
}
