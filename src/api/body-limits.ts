/** Request body limits (SPEC section 2), enforced by Fastify before a body is parsed. */
export const BODY_LIMIT = 65_536;
export const BATCH_BODY_LIMIT = 2_097_152;
