import type { Clock } from '../clock.js';
import { newAttemptId, newTestJobId } from '../crypto/random-ids.js';
import { toAttemptResult, webhookBody } from '../delivery/deliver-attempt.js';
import type { WebhookSender } from '../delivery/webhook-client.js';
import { NotFoundError, WebhookNotConfiguredError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { SigningSecrets } from './signing-secrets.js';

/**
 * POST /manage/v1/projects/:projectId/test-delivery and the dashboard's button: a real, signed
 * delivery of a sample payload, built and judged as a job's attempt is (the delivery layer's body
 * and result), but with no job, attempt row or retry.
 */
export class TestDeliveries {
  constructor(
    private readonly deps: { store: Store; clock: Clock; webhookClient: WebhookSender; signingSecrets: SigningSecrets },
  ) {}

  /** A real, signed delivery of a sample payload to the project's webhook; no job is created. */
  async send(projectId: string) {
    const project = await this.deps.store.projectGet(projectId);
    if (!project) throw new NotFoundError(`No project ${projectId}`);
    if (!project.webhookUrl) throw new WebhookNotConfiguredError('This project has no webhook URL to test', { field: 'webhookUrl' });
    const secrets = await this.deps.signingSecrets.forProject(projectId);
    const jobId = newTestJobId();
    const body = webhookBody(jobId, newAttemptId(), 1, '{"test":true}');
    const sent = await this.deps.webhookClient.deliver({
      url: project.webhookUrl,
      webhookId: jobId,
      secrets,
      bearer: true,
      timestampMs: this.deps.clock.now(),
      body,
      timeoutMs: project.deliveryTimeoutMs,
    });
    // With async completion a 202 is the answer a receiver should give ("accepted, working on it").
    const accepted = project.asyncCompletion && sent.kind === 'answered' && sent.statusCode === 202;
    const { outcome, statusCode, durationMs, responseBody, error } = toAttemptResult(sent, project.acceptAny2xx || accepted);
    return { outcome, statusCode, durationMs, responseBody, error };
  }
}
