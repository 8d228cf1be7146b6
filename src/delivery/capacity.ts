/**
 * One worker's counts (what it holds, has reserved and runs, kept in worker-counts.ts; what holds a
 * project back) and the capacity model's rules (capacity-rules.ts) applied to them: the claim loop
 * asks it how much to claim, the attempt runner whether to start, the enqueue path for room to
 * create jobs already started. Pure but for its counters: the clock comes in as `now`, and nothing here sets a timer
 * or touches the store.
 *
 * The rules that depend on what the worker holds (SPEC sections 10, 11 and 13):
 * - **Holds**: a project held back (a receiver's Retry-After, the rate's next token) starts nothing
 *   until the hold ends, and is not claimed meanwhile. Pause and a failing receiver's hold are the
 *   store's: claims step over such a project and its starts are refused there, on every instance;
 *   here it is held back from a failure's answer until the write that may hold it answers
 *   (hold-backs.ts).
 * - **Order**: within a project, attempts start in due order (`dueOrder`, store.ts), and a job
 *   enqueued never overtakes due jobs of its project still waiting in the store, nor, during a key
 *   turn (key-turns.ts), a key's next job given its turn there.
 */
import type { ProjectRow } from '../store/store.js';
import { claimLimit, projectSlots } from './capacity-rules.js';
import { KnownSettings } from './known-settings.js';
import { HoldBacks } from './hold-backs.js';
import { KeyTurns } from './key-turns.js';
import { StoreBacklog } from './store-backlog.js';
import { WorkerCounts, type ProjectCount } from './worker-counts.js';

/** One worker's counts, and the rules applied to them. */
export class Capacity {
  private readonly counts = new WorkerCounts();
  /** What the claim loop's last claims may have left due in the store. */
  private readonly backlog = new StoreBacklog();
  /** What holds projects back: Retry-After, the rate's next token, a health write under way. */
  private readonly holdBacks = new HoldBacks();
  /** Key turns under way: the attempt runner says when they begin, are recorded and end (keyTurn*). */
  private readonly keyTurns = new KeyTurns();
  /** Settings of projects seen lately, kept after their counts go, and the changes made here. */
  private readonly known = new KnownSettings();

  constructor(readonly globalSlots: number) {}

  /** What the project holds in claims' eyes: claimed, reserved, running, and kept for keys' next jobs. */
  private holdingOf(projectId: string, count: ProjectCount): number {
    return count.held + count.reserved + count.running + this.keyTurns.answered(projectId);
  }

  /** Forgets a project with nothing held, running or holding it back. */
  private tidy(projectId: string, now: number): void {
    const count = this.counts.find(projectId);
    if (count && this.holdingOf(projectId, count) === 0 && !this.holdBacks.isHeld(projectId, now) && !this.keyTurns.underWay(projectId)) this.counts.forget(projectId);
  }

  /** How many settings changes were made here so far: taken before a load of projects, for `know`. */
  get changesMade(): number {
    return this.known.changesMade;
  }

  /**
   * The project's settings were loaded (each batch of claimed jobs brings them). A load that began
   * before a change made here (`readAfter`: changesMade then) may have read the settings before it,
   * and does not undo it.
   */
  know(project: ProjectRow, readAfter = Number.POSITIVE_INFINITY): void {
    if (this.known.learn(project, readAfter)) this.counts.of(project.id).settings = project;
  }

  /**
   * For a claim about to run: how many of each known project's due jobs it may start at once (its
   * free slots, none promised to jobs already held here; none while it is held back or rated, or
   * while a job of it held here is due and waits to start: that one goes first, the order rule),
   * now held; settleClaimStarts gives back what the claim did not start. A project not known yet
   * has its jobs claimed DISPATCHED, and started once its settings are loaded.
   */
  reserveClaimStarts(now: number, dueWaiting: (projectId: string) => boolean = () => false): Record<string, number> {
    const reserved: Record<string, number> = {};
    for (const [projectId, settings] of this.known.entries()) {
      if (settings.deliveryRatePerSecond !== null || dueWaiting(projectId)) continue;
      const count = this.counts.find(projectId);
      // Not stopped by a key turn: a claim's starts are decided in the store, against what is
      // claimable when it commits (after the turn's outcome, the key's next job, earliest first).
      if (this.holdBacks.isHeld(projectId, now)) continue;
      const room = Math.min(projectSlots(settings, this.globalSlots) - (count ? count.running + count.reserved + count.held : 0), this.freeSlots());
      if (room <= 0) continue;
      reserved[projectId] = room;
      this.counts.hold(projectId, room);
    }
    return reserved;
  }

  /** The claim is back: what it did not start of what was reserved for it is given back. */
  settleClaimStarts(reserved: Record<string, number>, startedByProject: Map<string, number>, now: number): void {
    for (const [projectId, room] of Object.entries(reserved)) {
      const unused = room - (startedByProject.get(projectId) ?? 0);
      if (unused > 0) this.release(projectId, unused, now);
    }
  }

  /** Jobs the worker may still take on, all projects together. */
  freeSlots(): number {
    return this.globalSlots - this.counts.total - this.keyTurns.answeredAll;
  }

  get running(): number {
    return this.counts.running;
  }

  /** The project's attempts started here and not yet answered. */
  runningOf(projectId: string): number {
    return this.counts.find(projectId)?.running ?? 0;
  }

  /**
   * Room to start up to `wanted` of the project's jobs as they are enqueued (their first attempt
   * STARTED in the creating transaction); how many, now reserved until startReserved or unreserve.
   * None while the project holds claimed jobs not yet started, or due jobs of it may wait in the
   * store (a new job overtakes neither: the order rule; a key turn may leave one there), while it is
   * held back, or when it has a rate (its starts wait for tokens). Other enqueues' reservations only
   * take room: jobs created started beside each other start in creation order. A shortfall marks
   * the project (or, for want of global slots, every project) in the backlog, as do due jobs that
   * may not be created started (`wanted` less than `dueNow`: job-rules.ts, startableAtCreation).
   */
  reserveStartAtEnqueue(project: ProjectRow, wanted: number, now: number, dueNow = wanted): number {
    if (this.backlog.has(project.id) || project.deliveryRatePerSecond !== null) return 0;
    const count = this.counts.of(project.id);
    const keyTurn = this.keyTurns.underWay(project.id);
    const heldBack = this.holdBacks.isHeld(project.id, now);
    // Due jobs are created QUEUED, to wait in the store (all of them, or those of `dueNow` that may
    // not be created started): none created after them may overtake them.
    if (keyTurn || heldBack || wanted < dueNow) this.backlog.add(project.id);
    if (count.held > 0 || heldBack || keyTurn) return 0;
    const room = Math.max(0, Math.min(wanted, projectSlots(project, this.globalSlots) - count.running - count.reserved, this.freeSlots()));
    if (room < wanted) this.backlog.add(this.freeSlots() <= room ? undefined : project.id);
    if (room <= 0) {
      this.tidy(project.id, now);
      return 0;
    }
    this.counts.reserve(project.id, room);
    // Claims step over the project while this room fills it (projectsWithoutRoom needs settings).
    count.settings ??= this.known.get(project.id) ?? project;
    return room;
  }

  /** A job created started under a reservation is handed over: its attempt runs. */
  startReserved(projectId: string): void {
    this.counts.reserve(projectId, -1);
    this.counts.run(projectId, 1);
  }

  /** `n` of the room reserved at enqueue was not used (fewer jobs created started, or none). */
  unreserve(projectId: string, n: number, now: number): void {
    this.counts.reserve(projectId, -n);
    this.tidy(projectId, now);
  }

  /** Read as a claim is sent, for noteClaim (StoreBacklog.nextMark). */
  get backlogMarks(): number {
    return this.backlog.nextMark;
  }

  /** The claim loop's claim is done (StoreBacklog.claimed; `sentAt`: backlogMarks when it was sent). */
  noteClaim(complete: boolean, leftBehind: Iterable<string>, sentAt?: number): void {
    this.backlog.claimed(complete, leftBehind, sentAt);
  }

  /**
   * The projects a claim may have left due jobs of in the store: those it gave all the room its
   * per-project limit allowed (claimLimit less what the worker held when it ran, `heldAtClaim`).
   * Their room may have freed while the claim ran, so the holding counts now cannot tell.
   */
  cutShortBy(claimedByProject: Map<string, number>, heldAtClaim: Record<string, number>): string[] {
    const cut: string[] = [];
    for (const [projectId, claimed] of claimedByProject) {
      const settings = this.counts.find(projectId)?.settings ?? this.known.get(projectId);
      if (!settings || claimed >= claimLimit(settings, this.globalSlots) - (heldAtClaim[projectId] ?? 0)) cut.push(projectId);
    }
    return cut;
  }

  /** Jobs held per project (claimed or running), for the claim's per-project room. */
  heldByProject(): Record<string, number> {
    const held: Record<string, number> = {};
    for (const [projectId, count] of this.counts.entries()) {
      const holding = this.holdingOf(projectId, count);
      if (holding > 0) held[projectId] = holding;
    }
    return held;
  }

  /** Projects a claim must step over: held back, or holding all this worker may hold of them. */
  projectsWithoutRoom(now: number): string[] {
    const full = this.holdBacks.heldAt(now);
    for (const [projectId, count] of this.counts.entries()) {
      if (count.settings && this.holdingOf(projectId, count) >= claimLimit(count.settings, this.globalSlots)) full.add(projectId);
    }
    return [...full];
  }

  /** `n` of the project's jobs are now held (claimed, or room taken for jobs about to be created claimed). */
  hold(projectId: string, n: number): void {
    this.counts.hold(projectId, n);
  }

  /** `n` held jobs were given back (not created after all, released unstarted, or dropped at shutdown). */
  release(projectId: string, n: number, now: number): void {
    this.counts.hold(projectId, -n);
    this.tidy(projectId, now);
  }

  /**
   * A project's settings were changed here (through this instance's API): what it holds or runs
   * is judged by them from now on, and its next claims start by them.
   */
  settingsChanged(project: ProjectRow): void {
    this.known.changed(project);
    const count = this.counts.find(project.id);
    if (count) count.settings = project;
  }

  /**
   * Whether one more attempt of the project may start now: a free slot of its own, and no hold.
   * Its slots are reckoned from the newest settings loaded (`project` is those its job was claimed
   * with, which a lowered deliveryConcurrency may have replaced since).
   */
  mayStart(project: ProjectRow, now: number): boolean {
    const count = this.counts.of(project.id);
    return !this.holdBacks.isHeld(project.id, now) && !this.keyTurns.underWay(project.id) && count.running + count.reserved < projectSlots(count.settings ?? project, this.globalSlots);
  }

  /** A keyed job of the project was answered: its key turn begins (KeyTurns.begin). */
  keyTurnBegan(projectId: string): void {
    this.keyTurns.begin(projectId);
  }

  /** The answered keyed job's outcome is recorded (KeyTurns.recorded). */
  keyTurnRecorded(projectId: string): void {
    this.keyTurns.recorded(projectId);
  }

  /** A key turn is over (KeyTurns.looked). */
  keyTurnLooked(projectId: string, now: number): void {
    this.keyTurns.looked(projectId);
    this.tidy(projectId, now);
  }

  /** A held job's attempt starts. */
  start(projectId: string): void {
    this.counts.hold(projectId, -1);
    this.counts.run(projectId, 1);
  }

  /** A start counted (start) did not happen after all (the rate refused its token): held again. */
  unstart(projectId: string): void {
    this.counts.run(projectId, -1);
    this.counts.hold(projectId, 1);
  }

  /** An attempt's answer is in (or it never left): its slot is free. */
  finish(projectId: string, now: number): void {
    this.counts.run(projectId, -1);
    this.tidy(projectId, now);
  }

  /** Nothing of the project starts before `until`; a later hold wins. Returns whether this one is later. */
  holdBack(projectId: string, until: number): boolean {
    return this.holdBacks.holdUntil(projectId, until);
  }

  /** The hold until `until` ended (HoldBacks.endHold). */
  endHold(projectId: string, until: number, now: number): void {
    this.holdBacks.endHold(projectId, until);
    this.tidy(projectId, now);
  }

  /**
   * A failure of the project that counts toward its health was answered: if it has holdOnFailure
   * (by the newest settings known here), nothing more of it starts until the failure's health write
   * answers (HoldBacks), and `healthWriteEnded` must follow. Returns whether it is held back so.
   */
  holdBackForHealthWrite(project: ProjectRow): boolean {
    if (!(this.known.get(project.id) ?? project).holdOnFailure) return false;
    this.holdBacks.healthWriteBegan(project.id);
    return true;
  }

  /** That failure's health write answered (the project is held in the store, or not). */
  healthWriteEnded(projectId: string, now: number): void {
    this.holdBacks.healthWriteEnded(projectId);
    this.tidy(projectId, now);
  }

  /** Shutdown: every held job is given back at once (the store releases them). */
  releaseAllHeld(): void {
    this.counts.releaseAllHeld();
  }
}
