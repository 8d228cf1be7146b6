import type { Clock } from '../clock.js';
import { ReceiverProbes, sendTestDelivery, type TestDeliveryResult } from '../delivery/receiver-probes.js';
import type { WebhookSender } from '../delivery/webhook-client.js';
import { NotFoundError, WebhookNotConfiguredError } from '../errors.js';
import type { ProjectRow, Store } from '../store/store.js';
import type { SigningSecrets } from './signing-secrets.js';

/**
 * POST /manage/v1/projects/:projectId/test-delivery and /probe, and the dashboard's buttons: a real,
 * signed delivery of a sample payload, built and judged as a job's attempt is (the delivery layer's
 * body and result), but with no job, attempt row or retry. A probe (SPEC section 13) says
 * `"probe": true`, and its success ends the project's hold.
 */
export class TestDeliveries {
  readonly probes: ReceiverProbes;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      webhookClient: WebhookSender;
      signingSecrets: SigningSecrets;
      /** A hold ended: its jobs are due now. */
      onJobDue: (runAt: number) => void;
      onError: (error: unknown) => void;
    },
  ) {
    this.probes = new ReceiverProbes({
      store: deps.store,
      clock: deps.clock,
      client: deps.webhookClient,
      signingSecrets: (projectId) => deps.signingSecrets.forProject(projectId),
      onDue: deps.onJobDue,
      onError: deps.onError,
    });
  }

  private async requireWebhook(projectId: string): Promise<ProjectRow & { webhookUrl: string }> {
    const project = await this.deps.store.projectGet(projectId);
    if (!project) throw new NotFoundError(`No project ${projectId}`);
    const { webhookUrl } = project;
    if (!webhookUrl) throw new WebhookNotConfiguredError('This project has no webhook URL to test', { field: 'webhookUrl' });
    return { ...project, webhookUrl };
  }

  /** A real, signed delivery of a sample payload to the project's webhook; no job is created. */
  async send(projectId: string): Promise<TestDeliveryResult> {
    const project = await this.requireWebhook(projectId);
    const secrets = await this.deps.signingSecrets.forProject(projectId);
    return sendTestDelivery({ clock: this.deps.clock, client: this.deps.webhookClient }, project, secrets, { probe: false });
  }

  /** A probe now (SPEC section 13): a test delivery with "probe": true whose success ends a hold. */
  async probe(projectId: string): Promise<TestDeliveryResult> {
    const project = await this.requireWebhook(projectId);
    const { outcome, statusCode, durationMs, responseBody, error } = (await this.probes.probe(project))!;
    return { outcome, statusCode, durationMs, responseBody, error };
  }
}
