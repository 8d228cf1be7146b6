/** Rows of the embedded store to and from the row types of ../store.ts: SQLite has no boolean. */
import type { ScheduleRow } from '../schedule-store.js';
import type { ProjectRow } from '../tenancy-store.js';

type Flags = 'acceptAny2xx' | 'paused' | 'asyncCompletion' | 'holdOnFailure';

/** acceptAny2xx, paused, asyncCompletion and holdOnFailure come back as 0/1; eventTypes and retryStopOn as JSON. */
export function toProject(row: unknown): ProjectRow {
  const project = row as Omit<ProjectRow, Flags | 'eventTypes' | 'retryStopOn'> & Record<Flags, number> & { eventTypes: string | null; retryStopOn: string };
  return {
    ...project,
    acceptAny2xx: project.acceptAny2xx === 1,
    paused: project.paused === 1,
    asyncCompletion: project.asyncCompletion === 1,
    holdOnFailure: project.holdOnFailure === 1,
    eventTypes: project.eventTypes === null ? null : (JSON.parse(project.eventTypes) as string[]),
    retryStopOn: JSON.parse(project.retryStopOn) as number[],
  };
}

export const projectParams = (project: ProjectRow) => ({
  ...project,
  acceptAny2xx: project.acceptAny2xx ? 1 : 0,
  paused: project.paused ? 1 : 0,
  asyncCompletion: project.asyncCompletion ? 1 : 0,
  holdOnFailure: project.holdOnFailure ? 1 : 0,
  eventTypes: project.eventTypes === null ? null : JSON.stringify(project.eventTypes),
  retryStopOn: JSON.stringify(project.retryStopOn),
});

/** paused comes back as 0/1. */
export function toSchedule(row: unknown): ScheduleRow {
  const schedule = row as Omit<ScheduleRow, 'paused'> & { paused: number };
  return { ...schedule, paused: schedule.paused === 1 };
}
