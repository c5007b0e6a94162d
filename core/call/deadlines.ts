// The process-wide deadline timer: every running call's deadline in one set,
// one timer armed for the earliest, and the host stopping them all at once.
/** A running call the deadline sweep, or the host stopping, may abort. */
export interface PendingCall {
  readonly deadline: number;
  readonly expire: () => void;
  readonly stop: (why: string) => void;
}

/**
 * Every running call's deadline, checked by one timer armed for the earliest:
 * a call that ends before the earliest deadline touches no timer at all (a
 * timer per call was a large share of a trivial call).
 */
const pending = new Set<PendingCall>();
let armedFor = Infinity;
let armed: ReturnType<typeof setTimeout> | undefined;

function sweep(): void {
  armed = undefined;
  armedFor = Infinity;
  const now = Date.now();
  for (const call of pending) {
    if (call.deadline <= now) {
      pending.delete(call);
      call.expire();
    }
  }
  let next = Infinity;
  for (const call of pending) next = Math.min(next, call.deadline);
  if (next !== Infinity) arm(next);
}

function arm(deadline: number): void {
  if (deadline >= armedFor) return;
  if (armed !== undefined) clearTimeout(armed);
  armedFor = deadline;
  armed = setTimeout(sweep, Math.max(0, deadline - Date.now()));
  // A pending deadline must not keep the process alive on its own.
  (armed as { unref?: () => void }).unref?.();
}

/** Watches `call` until forgetDeadline: its `expire` runs once its deadline has passed. */
export function watchDeadline(call: PendingCall): void {
  pending.add(call);
  arm(call.deadline);
}

/** The call ended: its deadline no longer matters. */
export function forgetDeadline(call: PendingCall): void {
  pending.delete(call);
}

/** Calls `stop(why)` of every call watched now. */
export function stopWatched(why: string): void {
  for (const call of [...pending]) call.stop(why);
}
