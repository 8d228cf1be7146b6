import { createHash } from 'node:crypto';
import { isPlainObject } from './validate-job-input.js';

/** Sorted keys at every depth: two JSON-equal bodies hash the same whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A request body's identity under an Idempotency-Key: the same JSON, whatever its key order, is the same request. */
export const requestHash = (body: unknown): string => createHash('sha256').update(canonicalJson(body)).digest('hex');
