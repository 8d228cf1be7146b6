/** `punctual/client`: the typed client of the HTTP API, and the receiver's signature check. */
export { createClient, PunctualApiError } from './client.js';
export type { Attempt, ClientOptions, DispatchAnswer, DispatchBody, Job, PunctualClient, QueryOf, ReportBody, RequestBody, ResponseBody, Schedule, ScheduleBody, paths } from './client.js';
export { DEFAULT_TOLERANCE_SECONDS, verifyWebhook, WebhookVerificationError } from './webhooks.js';
export type { Delivery, PunctualEvent, VerifyOptions } from './webhooks.js';
