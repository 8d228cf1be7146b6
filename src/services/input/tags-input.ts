/**
 * Tags (SPEC section 14): on a dispatch, a batch item or a schedule, a JSON object of at most 10
 * entries, each key 1 to 64 of `A-Z a-z 0-9 _ . : -` and each value a string of 1 to 256
 * characters; anything else is INVALID_TAGS on the field `tags`. In a filter (a list's `?tag=`, a
 * bulk action's `filter.tags`) the same rules make a bad tag INVALID_REQUEST, as any bad filter is.
 */
import { InvalidRequestError, InvalidTagsError, type PunctualError } from '../../errors.js';
import type { JobTagPair } from '../../store/store.js';

export const TAGS_MAX = 10;
export const TAG_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;
export const TAG_VALUE_MAX = 256;

type Refuse = (message: string) => PunctualError;

/** As validate-job-input.ts's isPlainObject, which reads tags through this module. */
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Characters as a person counts them (code points), not UTF-16 units. */
const characters = (text: string) => [...text].length;

function checkTag(key: string, value: unknown, refuse: Refuse, where: string): void {
  if (!TAG_KEY.test(key)) throw refuse(`${where} key ${JSON.stringify(key.slice(0, 80))} must be 1 to 64 characters of A-Z, a-z, 0-9, _ . : -`);
  if (typeof value !== 'string' || characters(value) < 1 || characters(value) > TAG_VALUE_MAX) {
    throw refuse(`${where} value of ${JSON.stringify(key)} must be a string of 1 to ${TAG_VALUE_MAX} characters`);
  }
}

/** What tags must be, said where they are not an object (`where`: `tags`, `filter.tags`); the error handler says it too. */
export const tagsRule = (where: string): string => `${where} must be a JSON object of string values, such as {"order": "123"}; leave it out for none`;

/** An object of tags, checked entry by entry; `where` is how messages name it (`tags`, `filter.tags`). */
function readTagObject(value: unknown, refuse: Refuse, where: string): JobTagPair[] {
  if (!isObject(value)) throw refuse(tagsRule(where));
  const entries = Object.entries(value);
  if (entries.length > TAGS_MAX) throw refuse(`${where} has ${entries.length} entries; at most ${TAGS_MAX} are allowed`);
  for (const [key, tag] of entries) checkTag(key, tag, refuse, where);
  return entries as JobTagPair[];
}

/**
 * The tags of a dispatch body, batch item or schedule body as stored (JSON.stringify of the
 * object, the client's order kept); undefined when absent or empty, so a job without tags stores
 * nothing for them.
 */
export function readTags(body: Record<string, unknown>): string | undefined {
  if (!('tags' in body)) return undefined;
  const tags = readTagObject(body.tags, (message) => new InvalidTagsError(message, { field: 'tags' }), 'tags');
  return tags.length === 0 ? undefined : JSON.stringify(Object.fromEntries(tags));
}

/** A bulk action's `filter.tags`: every tag a job must have. */
export function readFilterTags(value: unknown): JobTagPair[] {
  return readTagObject(value, (message) => new InvalidRequestError(message, { field: 'filter.tags' }), 'filter.tags');
}

/**
 * A list's `?tag=<key>:<value>` (repeatable): the key is what comes before the first `:`, so a
 * key with a `:` of its own cannot be asked for this way (its value can hold any).
 */
export function readTagParams(raw: unknown): JobTagPair[] {
  if (raw === undefined) return [];
  const given = Array.isArray(raw) ? raw : [raw];
  const refuse = (message: string) => new InvalidRequestError(message, { field: 'tag' });
  if (given.length > TAGS_MAX) throw refuse(`tag may be given at most ${TAGS_MAX} times (a job has at most ${TAGS_MAX} tags)`);
  return given.map((text): JobTagPair => {
    const at = typeof text === 'string' ? text.indexOf(':') : -1;
    if (at < 1) throw refuse('tag must be <key>:<value>, such as tag=order:123');
    const pair: JobTagPair = [text.slice(0, at), text.slice(at + 1)];
    checkTag(pair[0], pair[1], refuse, 'tag');
    return pair;
  });
}

