/**
 * Test deliveries and the probes of held projects (SPEC sections 7 and 13). A test delivery is a
 * real, signed delivery of `{"test": true}` with no job, built and judged as a job's attempt is; a
 * probe is one with `"probe": true`, sent to a held project's receiver on the schedule the store
 * keeps (30 s after the hold, then doubling to 10 min: webhookProbeClaimDue claims each probe for
 * one instance) or when asked (POST /manage/v1/projects/:id/probe). A probe answered by success
 * ends the hold, and the project's waiting jobs go back to the claims' index, earliest due first.
 * A failed probe changes nothing: the next one is already scheduled, and no job spent an attempt.
 */
import type { Clock } from '../clock.js';
import { newAttemptId, newEventId, newTestJobId } from '../crypto/random-ids.js';
import { releaseProjectJobs } from '../maintenance/project-holds.js';
import type { ProjectRow, Store } from '../store/store.js';
import { toAttemptResult } from './attempt-result.js';
import { webhookBody } from './deliver-attempt.js';
import type { WebhookSender } from './webhook-client.js';

export interface TestDeliveryResult {
  outcome: string;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
}

/** The signed test delivery of SPEC section 7 to the project's webhook URL (which it must have). */
export async function sendTestDelivery(
  deps: { clock: Clock; client: WebhookSender },
  project: ProjectRow & { webhookUrl: string },
  secrets: string[],
  options: { probe: boolean },
): Promise<TestDeliveryResult> {
  const jobId = newTestJobId();
  const sent = await deps.client.deliver({
    url: project.webhookUrl,
    webhookId: jobId,
    secrets,
    bearer: true,
    timestampMs: deps.clock.now(),
    body: webhookBody(jobId, newAttemptId(), 1, '{"test":true}', { probe: options.probe }),
    timeoutMs: project.deliveryTimeoutMs,
  });
  // With async completion a 202 is the answer a receiver should give ("accepted, working on it").
  const accepted = project.asyncCompletion && sent.kind === 'answered' && sent.statusCode === 202;
  const { outcome, statusCode, durationMs, responseBody, error } = toAttemptResult(sent, project.acceptAny2xx || accepted);
  return { outcome, statusCode, durationMs, responseBody, error };
}

/** How long the probe loop sleeps at most: a hold begun on another instance is probed on time within it. */
export const PROBE_LOOK_MS = 5_000;

export class ReceiverProbes {
  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      client: WebhookSender;
      signingSecrets: (projectId: string) => Promise<string[]>;
      /** A hold ended: its jobs are due now (each batch released, and once at the end). */
      onDue: (runAt: number) => void;
      /** webhook.recovered was recorded. */
      onEvent?: () => void;
      onError: (error: unknown) => void;
    },
  ) {}

  /**
   * Probes the project's receiver now; a success ends its hold (`recovered`: this probe ended it).
   * Null when the project has no webhook URL.
   */
  async probe(project: ProjectRow): Promise<(TestDeliveryResult & { recovered: boolean }) | null> {
    const { webhookUrl } = project;
    if (!webhookUrl) return null;
    const secrets = await this.deps.signingSecrets(project.id);
    const result = await sendTestDelivery(this.deps, { ...project, webhookUrl }, secrets, { probe: true });
    if (result.outcome !== 'success') return { ...result, recovered: false };
    const now = this.deps.clock.now();
    const ended = await this.deps.store.webhookHoldEnd({ projectId: project.id, now, eventId: newEventId(now) });
    if (ended) {
      this.deps.onEvent?.();
      await this.release(project.id);
    }
    return { ...result, recovered: ended !== null };
  }

  /** A hold ended (a probe, or holdOnFailure turned off): the jobs that waited go out, earliest due first. */
  async release(projectId: string): Promise<void> {
    await releaseProjectJobs(this.deps.store, projectId, () => this.deps.onDue(this.deps.clock.now()));
    this.deps.onDue(this.deps.clock.now());
  }

  /**
   * One pass of the probe loop: the probes due now that this instance claims, sent together; the
   * time the next one is due (null: none is held).
   */
  async probeDue(): Promise<number | null> {
    const { store, clock } = this.deps;
    const next = await store.webhookProbeNextAt();
    if (next !== null && next <= clock.now()) {
      const claimed = await store.webhookProbeClaimDue({ now: clock.now() });
      const projects = await store.projectGetMany(claimed);
      await Promise.all(projects.map((project) => this.probe(project).catch((error: unknown) => this.deps.onError(error))));
      return store.webhookProbeNextAt();
    }
    return next;
  }
}
