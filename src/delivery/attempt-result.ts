/**
 * What a request's answer amounts to: the attempt's record (success by the project's acceptAny2xx),
 * and whether it says the receiver is down, for its health (SPEC section 13).
 */
import type { AttemptResult, ProjectRow } from '../store/store.js';
import { stopsJob } from './retry-policy.js';
import type { SendResult } from './webhook-client.js';

function isSuccess(statusCode: number, acceptAny2xx: boolean): boolean {
  return statusCode === 200 || statusCode === 201 || (acceptAny2xx && statusCode >= 200 && statusCode < 300);
}

/** A 202 to a project with asyncCompletion (SPEC section 11): the receiver took the job, its outcome comes later by a report. */
export function acceptedForLater(project: Pick<ProjectRow, 'asyncCompletion'>, sent: SendResult): sent is Extract<SendResult, { kind: 'answered' }> & { statusCode: 202 } {
  return sent.kind === 'answered' && sent.statusCode === 202 && project.asyncCompletion;
}

/**
 * Whether a failed attempt says the receiver is down (SPEC section 13): no answer (network error,
 * timeout) or a 5xx, 408 or 429. Any other 4xx refuses one job and says nothing of the receiver.
 */
export function meansReceiverDown(result: Pick<AttemptResult, 'outcome' | 'statusCode'>): boolean {
  if (result.outcome === 'network_error' || result.outcome === 'timeout') return true;
  if (result.outcome !== 'http_error' || result.statusCode === null) return false;
  return result.statusCode >= 500 || result.statusCode === 408 || result.statusCode === 429;
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
  if (sent.kind === 'aborted' || acceptedForLater(project, sent)) return false;
  const result = toAttemptResult(sent, project.acceptAny2xx);
  return !stopsJob(project, result) && meansReceiverDown(result);
}
