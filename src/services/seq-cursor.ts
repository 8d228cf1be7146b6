/** List cursors are opaque to clients: base64url of the last row's insertion sequence. */
export const encodeSeqCursor = (seq: number): string => Buffer.from(`s${seq}`).toString('base64url');

/** The sequence a cursor this server gave stands for, else null. */
export function decodeSeqCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^s[1-9]\d{0,15}$/.test(text) || encodeSeqCursor(Number(text.slice(1))) !== cursor) return null;
  return Number(text.slice(1));
}
