import { createHash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from './random-ids.js';

/** `pk_` + 40 base62 characters (238 bits). Only the SHA-256 is stored; the text is shown once. */
export function generateApiKey(): { key: string; hash: Buffer; prefix: string } {
  const key = `pk_${randomBase62(40)}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 11) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Shape check before any lookup, so junk never reaches the store. */
export function looksLikeApiKey(text: string): boolean {
  return /^pk_[A-Za-z0-9]{32,128}$/.test(text);
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
