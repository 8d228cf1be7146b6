import { randomBytes } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Unbiased base62 from the CSPRNG (rejection sampling: bytes >= 248 are dropped). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** 22 base62 characters carry 130 random bits, over the 96 the contract asks of a jobId. */
export const newJobId = (): string => `job_${randomBase62(22)}`;
export const newAttemptId = (): string => `att_${randomBase62(22)}`;
export const newTeamId = (): string => `team_${randomBase62(16)}`;
export const newProjectId = (): string => `prj_${randomBase62(16)}`;
export const newKeyId = (): string => `key_${randomBase62(16)}`;
export const newSecretId = (): string => `whs_${randomBase62(16)}`;
export const newTestJobId = (): string => `job_test_${randomBase62(22)}`;
