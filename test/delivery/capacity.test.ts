import { describe, expect, it } from 'vitest';
import { Capacity } from '../../src/delivery/capacity.js';
import { claimLimit, leaseMs, projectShare, projectSlots } from '../../src/delivery/capacity-rules.js';
import type { ProjectRow } from '../../src/store/store.js';

const project = (id: string, settings: Partial<ProjectRow> = {}): ProjectRow =>
  ({ id, deliveryConcurrency: 100, deliveryRatePerSecond: null, deliveryTimeoutMs: 30_000, ...settings }) as ProjectRow;
const NOW = 1_000_000;

/** The capacity model's rules (src/delivery/capacity-rules.ts) and a worker's counts they are applied to (src/delivery/capacity.ts). */
describe('the capacity model', () => {
  it("gives a project its concurrency within half of the instance's slots, and claims ahead within that share", () => {
    expect(projectShare(256)).toBe(128);
    expect(projectShare(1)).toBe(1);
    expect(projectSlots(project('p', { deliveryConcurrency: 100 }), 256)).toBe(100);
    expect(projectSlots(project('p', { deliveryConcurrency: 1_000 }), 256)).toBe(128);
    expect(claimLimit(project('p', { deliveryConcurrency: 1 }), 256)).toBe(2);
    expect(claimLimit(project('p', { deliveryConcurrency: 100 }), 256)).toBe(128);
    // A rated project holds a tenth of a second's worth, at least one.
    expect(claimLimit(project('p', { deliveryRatePerSecond: 25 }), 256)).toBe(3);
    expect(claimLimit(project('p', { deliveryRatePerSecond: 0.1 }), 256)).toBe(1);
    expect(leaseMs(project('p', { deliveryTimeoutMs: 1_000 }))).toBe(31_000);
  });

  it('starts no more of a project than its slots, and none while it is held back', () => {
    const capacity = new Capacity(8);
    const hog = project('hog', { deliveryConcurrency: 1_000 });
    capacity.hold(hog.id, 6);
    for (let i = 0; i < 4; i++) {
      expect(capacity.mayStart(hog, NOW)).toBe(true);
      capacity.start(hog.id);
    }
    // Its share of 8 slots is 4: the rest wait, and the other half of the slots stays free for others.
    expect(capacity.mayStart(hog, NOW)).toBe(false);
    capacity.finish(hog.id, NOW);
    expect(capacity.mayStart(hog, NOW)).toBe(true);
    capacity.holdBack(hog.id, NOW + 1_000);
    expect(capacity.mayStart(hog, NOW + 999)).toBe(false);
    expect(capacity.projectsWithoutRoom(NOW + 999)).toEqual(['hog']);
    capacity.endHold(hog.id, NOW + 1_000, NOW + 998);
    expect(capacity.mayStart(hog, NOW + 998)).toBe(true);
  });

  it('lists the projects a claim must step over: held back, or holding all it may hold', () => {
    const capacity = new Capacity(256);
    const narrow = project('narrow', { deliveryConcurrency: 1 });
    capacity.know(narrow);
    capacity.hold(narrow.id, 2);
    capacity.holdBack('backed-off', NOW + 5);
    expect(capacity.projectsWithoutRoom(NOW).sort()).toEqual(['backed-off', 'narrow']);
    expect(capacity.heldByProject()).toEqual({ narrow: 2 });
    expect(capacity.freeSlots()).toBe(254);
  });

  it('steps a claim over a project whose room an enqueue reserved, before any claim loaded its settings, and not once it is given back', () => {
    const capacity = new Capacity(4);
    const p = project('p', { deliveryConcurrency: 2 });
    expect(capacity.reserveStartAtEnqueue(p, 4, NOW)).toBe(2);
    // Left out, so that a job of it claimed meanwhile is not capped to none in the store unnoticed
    // (the claim loop then wakes when the room comes back).
    expect(capacity.projectsWithoutRoom(NOW)).toEqual(['p']);
    capacity.unreserve(p.id, 2, NOW);
    expect(capacity.projectsWithoutRoom(NOW)).toEqual([]);
  });

  it("says which projects a claim may have left due jobs of: those it gave all their room, even if a slot freed since", () => {
    const capacity = new Capacity(256);
    const narrow = project('narrow', { deliveryConcurrency: 1 });
    const wide = project('wide', { deliveryConcurrency: 10 });
    capacity.know(narrow);
    capacity.know(wide);
    // The claim ran while one of narrow's jobs was running: its limit of 2 left room for 1.
    const heldAtClaim = { narrow: 1 };
    // That attempt's answer came in meanwhile: narrow has room again, and jobs may still wait in the store.
    expect(capacity.cutShortBy(new Map([['narrow', 1], ['wide', 3]]), heldAtClaim)).toEqual(['narrow']);
    expect(capacity.cutShortBy(new Map([['wide', 20]]), {})).toEqual(['wide']);
    // A project whose settings are not known yet is assumed cut short.
    expect(capacity.cutShortBy(new Map([['unknown', 1]]), {})).toEqual(['unknown']);
  });

  it('starts jobs as they are created only within free slots, and never ahead of jobs waiting in the store or held here', () => {
    const capacity = new Capacity(4);
    const p = project('p', { deliveryConcurrency: 1 });
    // One slot: the second job waits in the store, and the project is marked as having jobs there.
    expect(capacity.reserveStartAtEnqueue(p, 2, NOW)).toBe(1);
    capacity.startReserved(p.id);
    capacity.finish(p.id, NOW);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    // Until a claim takes every due job it could.
    capacity.noteClaim(true, []);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(1);
    capacity.unreserve(p.id, 1, NOW);
    // A job claimed here and not yet started goes first.
    capacity.hold(p.id, 1);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    capacity.release(p.id, 1, NOW);
    capacity.noteClaim(true, []);
    // A rated project's starts wait for their tokens: never started at creation.
    expect(capacity.reserveStartAtEnqueue(project('rated', { deliveryRatePerSecond: 5 }), 1, NOW)).toBe(0);
    // Another enqueue's reservation only takes room: a second enqueue beside it starts its jobs too.
    const wide = project('wide', { deliveryConcurrency: 2 });
    expect(capacity.reserveStartAtEnqueue(wide, 1, NOW)).toBe(1);
    expect(capacity.reserveStartAtEnqueue(wide, 1, NOW)).toBe(1);
    expect(capacity.heldByProject()).toMatchObject({ wide: 2 });
    // Reserved room is taken room: the project's two slots are full.
    capacity.startReserved(wide.id);
    expect(capacity.mayStart(wide, NOW)).toBe(false);
    expect(capacity.reserveStartAtEnqueue(wide, 1, NOW)).toBe(0);
    capacity.unreserve(wide.id, 1, NOW);
    capacity.finish(wide.id, NOW);
    capacity.noteClaim(true, []);
    // A claim that came back full: jobs of any project may wait.
    capacity.noteClaim(false, []);
    expect(capacity.reserveStartAtEnqueue(project('other'), 1, NOW)).toBe(0);
  });
  it('marks the store backlog for due jobs that may not start at creation, and keeps a mark made while a claim ran (it did not see their jobs)', () => {
    const capacity = new Capacity(4);
    const p = project('p', { deliveryConcurrency: 2 });
    const sentAt = capacity.backlogMarks;
    // While a claim runs: a dispatch of one job due at once that may not start at creation (a keyed
    // one), created QUEUED after the claim in the writer's order.
    expect(capacity.reserveStartAtEnqueue(p, 0, NOW, 1)).toBe(0);
    capacity.noteClaim(true, [], sentAt);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    // A claim sent after the mark takes that job: then the project's jobs start at creation again.
    capacity.noteClaim(true, [], capacity.backlogMarks);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(1);
    // A batch of three due at once whose second may not start at creation: one starts, and the
    // project is marked, so that a later dispatch does not overtake the two in the store.
    capacity.unreserve(p.id, 1, NOW);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW, 3)).toBe(1);
    capacity.unreserve(p.id, 1, NOW);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
  });

  it('judges what it holds by the newest settings: a lowered concurrency holds jobs claimed before it', () => {
    const capacity = new Capacity(256);
    const before = project('p', { deliveryConcurrency: 3 });
    capacity.know(before);
    capacity.hold(before.id, 3);
    capacity.start(before.id);
    expect(capacity.mayStart(before, NOW)).toBe(true);
    capacity.settingsChanged({ ...before, deliveryConcurrency: 1 });
    // The waiting jobs carry the settings they were claimed with; the change decides.
    expect(capacity.mayStart(before, NOW)).toBe(false);
    capacity.finish(before.id, NOW);
    expect(capacity.mayStart(before, NOW)).toBe(true);
    // A project it holds nothing of is not remembered for the change.
    capacity.settingsChanged(project('other', { deliveryConcurrency: 1 }));
    expect(capacity.heldByProject()).toEqual({ p: 2 });
    expect(capacity.reserveClaimStarts(NOW)).toEqual({});
  });

  it("starts nothing in a claim of a project whose job held here is due and waits: that job goes first (the order rule)", () => {
    const capacity = new Capacity(256);
    const p = project('p', { deliveryConcurrency: 3 });
    capacity.know(p);
    capacity.hold(p.id, 1);
    // Held but not yet due (claimed ahead): the claim may start the project's due jobs in the store.
    expect(capacity.reserveClaimStarts(NOW, () => false)).toEqual({ p: 2 });
    capacity.settleClaimStarts({ p: 2 }, new Map(), NOW);
    // Held and due, waiting for a token or the end of a hold: a claim starts none beside it.
    expect(capacity.reserveClaimStarts(NOW, (projectId) => projectId === p.id)).toEqual({});
  });

  it("starts nothing of a project during a key turn, and keeps the answered job's room for claims until its outcome is recorded", () => {
    const capacity = new Capacity(256);
    const p = project('p', { deliveryConcurrency: 1 });
    capacity.know(p);
    capacity.hold(p.id, 2);
    capacity.start(p.id);
    // The keyed job is answered: its slot frees, but the held job waits for the key's next one, and
    // no claim takes the answered job's room (the project still holds its claim limit, 2).
    capacity.keyTurnBegan(p.id);
    capacity.finish(p.id, NOW);
    expect(capacity.mayStart(p, NOW)).toBe(false);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    expect(capacity.heldByProject()).toEqual({ p: 2 });
    expect(capacity.projectsWithoutRoom(NOW)).toEqual(['p']);
    // Recorded: a claim may take the key's next job into that room; still nothing starts.
    capacity.keyTurnRecorded(p.id);
    expect(capacity.projectsWithoutRoom(NOW)).toEqual([]);
    expect(capacity.mayStart(p, NOW)).toBe(false);
    capacity.keyTurnLooked(p.id, NOW);
    expect(capacity.mayStart(p, NOW)).toBe(true);
    // The job dispatched during the turn waits in the store: none created later overtakes it.
    capacity.start(p.id);
    capacity.finish(p.id, NOW);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    capacity.noteClaim(true, []);
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(1);
  });

  it("starts nothing of a project from a failure's answer until its health write answers (a hold at once), nor at enqueue, nor in a claim", () => {
    const capacity = new Capacity(8);
    const p = project('p', { deliveryConcurrency: 2, holdOnFailure: true });
    capacity.know(p);
    capacity.hold(p.id, 1);
    capacity.start(p.id);
    expect(capacity.holdBackForHealthWrite(project('q'))).toBe(false);
    expect(capacity.holdBackForHealthWrite(p)).toBe(true);
    capacity.finish(p.id, NOW);
    expect(capacity.mayStart(p, NOW)).toBe(false);
    expect(capacity.projectsWithoutRoom(NOW)).toEqual(['p']);
    expect(capacity.reserveClaimStarts(NOW)).toEqual({});
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
    capacity.healthWriteEnded(p.id, NOW);
    expect(capacity.mayStart(p, NOW)).toBe(true);
    expect(capacity.projectsWithoutRoom(NOW)).toEqual([]);
    // A job created while it waited is in the store: one created now does not overtake it.
    expect(capacity.reserveStartAtEnqueue(p, 1, NOW)).toBe(0);
  });

  it('keeps a change made here over settings a load read before it', () => {
    const capacity = new Capacity(256);
    const before = project('p', { deliveryConcurrency: 3 });
    capacity.know(before);
    capacity.hold(before.id, 2);
    const loadStarted = capacity.changesMade;
    capacity.settingsChanged({ ...before, deliveryConcurrency: 1 });
    capacity.start(before.id);
    // The load that began before the change answers with the old row: it does not undo the change.
    capacity.know(before, loadStarted);
    expect(capacity.mayStart(before, NOW)).toBe(false);
    // A load begun after it is taken as it comes.
    capacity.know(before, capacity.changesMade);
    expect(capacity.mayStart(before, NOW)).toBe(true);
  });
});
