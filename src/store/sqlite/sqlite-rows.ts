/** Rows of the embedded store to and from the row types of ../store.ts: SQLite has no boolean. */
import type { ScheduleRow } from '../schedule-store.js';
import type { ProjectRow } from '../tenancy-store.js';

/** acceptAny2xx, paused and asyncCompletion come back as 0/1. */
export function toProject(row: unknown): ProjectRow {
  const project = row as Omit<ProjectRow, 'acceptAny2xx' | 'paused' | 'asyncCompletion'> & { acceptAny2xx: number; paused: number; asyncCompletion: number };
  return { ...project, acceptAny2xx: project.acceptAny2xx === 1, paused: project.paused === 1, asyncCompletion: project.asyncCompletion === 1 };
}

export const projectParams = (project: ProjectRow) => ({
  ...project,
  acceptAny2xx: project.acceptAny2xx ? 1 : 0,
  paused: project.paused ? 1 : 0,
  asyncCompletion: project.asyncCompletion ? 1 : 0,
});

/** paused comes back as 0/1. */
export function toSchedule(row: unknown): ScheduleRow {
  const schedule = row as Omit<ScheduleRow, 'paused'> & { paused: number };
  return { ...schedule, paused: schedule.paused === 1 };
}
