/**
 * How long the store keeps what it keeps (SPEC section 12), and the instants before which things go.
 * The store deletes; the retention pruner (maintenance/retention-pruner.ts) decides when and what.
 */
import { utcDay } from './timestamp.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A project's `retentionDays`, and PUNCTUAL_RETENTION_DAYS's bounds. */
export const RETENTION_DAYS_RANGE = [1, 3_650] as const;
export const DEFAULT_RETENTION_DAYS = 30;
/** PUNCTUAL_RETENTION_DAYS may be a fraction of a day, down to this (86.4 s). */
export const MIN_SERVER_RETENTION_DAYS = 0.001;
/** An Idempotency-Key replays its answer this long; after that it is a new key and the row can go. */
export const IDEMPOTENCY_KEY_TTL_MS = DAY_MS;
/** Daily usage rows (the quota and the usage chart) are kept this many days. */
export const USAGE_KEEP_DAYS = 400;
/** Events (SPEC section 10) are kept this long after they occurred, delivered or not. */
export const EVENTS_KEEP_MS = 30 * DAY_MS;
/**
 * The project overview's rows per minute (0011_project_overview.sql) are kept this long: its
 * longest window is 24 hours, and an hour more lets a pass come late without a gap in the chart.
 */
export const OVERVIEW_KEEP_MS = 25 * 60 * 60 * 1000;

/** What retention deletes at `now`: final jobs per project, idempotency keys, usage days, events. */
export interface PruneCutoffs {
  /** Per project: its jobs that became final at or before `finalBy` go, with their attempts. */
  projects: { projectId: string; finalBy: number }[];
  /** Keys created at or before this no longer replay. */
  idempotencyCreatedBy: number;
  /** Usage days before this one (YYYY-MM-DD, UTC). */
  usageBeforeDay: string;
  /** Events that occurred at or before this. */
  eventsOccurredBy: number;
}

export function pruneCutoffs(params: { now: number; defaultRetentionDays: number; projects: { projectId: string; retentionDays: number | null }[] }): PruneCutoffs {
  const { now, defaultRetentionDays } = params;
  return {
    // Whole milliseconds: the server's default may be a fraction of a day.
    projects: params.projects.map(({ projectId, retentionDays }) => ({ projectId, finalBy: Math.floor(now - (retentionDays ?? defaultRetentionDays) * DAY_MS) })),
    idempotencyCreatedBy: now - IDEMPOTENCY_KEY_TTL_MS,
    usageBeforeDay: utcDay(now - USAGE_KEEP_DAYS * DAY_MS),
    eventsOccurredBy: now - EVENTS_KEEP_MS,
  };
}
