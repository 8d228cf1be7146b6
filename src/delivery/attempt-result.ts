/**
 * What a request's answer amounts to: the attempt's record (success by the project's acceptAny2xx),
 * and whether it says the receiver is down, for its health (SPEC section 13).
 */
import type { AttemptResult, ProjectRow } from '../store/store.js';
import { stopsJob } from './retry-policy.js';
import type { SendResult } from './webhook-client.js';
import { meansReceiverDown } from './webhook-health.js';

function isSuccess(statusCode: number, acceptAny2xx: boolean): boolean {
  return statusCode === 200 || statusCode === 201 || (acceptAny2xx && statusCode >= 200 && statusCode < 300);
}

/** A sent request's result in the terms of an attempt record. */
export function toAttemptResult(sent: SendResult, acceptAny2xx: boolean): AttemptResult {
  if (sent.kind !== 'answered') {
    const outcome = sent.kind === 'aborted' ? 'network_error' : sent.kind;
    return { outcome, statusCode: null, durationMs: sent.durationMs, error: sent.error, responseBody: null };
  }
  const ok = isSuccess(sent.statusCode, acceptAny2xx);
  return {
    outcome: ok ? 'success' : 'http_error',
    statusCode: sent.statusCode,
    durationMs: sent.durationMs,
    error: ok ? null : `HTTP ${sent.statusCode}`,
    responseBody: sent.responseBody,
  };
}

/**
 * Whether an answer counts toward the receiver's run of failures (SPEC section 13): one that means
 * the receiver is down (`meansReceiverDown`), unless the project's stopOn refuses the job with it,
 * and never a request cut short by a shutdown (it says nothing of the receiver) or a 202 taken for
 * asynchronous completion.
 */
export function receiverDownBy(project: ProjectRow, sent: SendResult): boolean {
  if (sent.kind === 'aborted' || (sent.kind === 'answered' && sent.statusCode === 202 && project.asyncCompletion)) return false;
  const result = toAttemptResult(sent, project.acceptAny2xx);
  return !stopsJob(project, result) && meansReceiverDown(result);
}
