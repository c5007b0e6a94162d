import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { forgetDeadline, type PendingCall, stopWatched, watchDeadline } from "./deadlines.ts";

/** A call whose expire and stop are recorded, and whose expiry can be awaited. */
function call(inMs: number) {
  const events: string[] = [];
  let expired!: () => void;
  const whenExpired = new Promise<void>((resolve) => (expired = resolve));
  const pending: PendingCall = {
    deadline: Date.now() + inMs,
    expire: () => {
      events.push("expire");
      expired();
    },
    stop: (why) => events.push(`stop: ${why}`),
  };
  return { pending, events, whenExpired };
}

/**
 * Waits for `promise` with the process held open: the deadline timer is unref'd (a pending deadline must not keep a
 * process alive), so on its own it would let the test runner end before it fires.
 */
async function held<T>(promise: Promise<T>): Promise<T> {
  const keep = setInterval(() => {}, 60_000);
  try {
    return await promise;
  } finally {
    clearInterval(keep);
  }
}

describe("the deadline timer", () => {
  it("expires a call once its deadline has passed, once, and then no longer holds it", async () => {
    const a = call(5);
    watchDeadline(a.pending);
    await held(a.whenExpired);
    assert.ok(Date.now() >= a.pending.deadline);
    stopWatched("stopping");
    assert.deepEqual(a.events, ["expire"]);
  });

  it("expires the earliest deadline first, whatever order the calls came in", async () => {
    const late = call(60_000);
    const early = call(10);
    watchDeadline(late.pending);
    watchDeadline(early.pending);
    try {
      await held(early.whenExpired);
      assert.deepEqual(early.events, ["expire"]);
      assert.deepEqual(late.events, []);
    } finally {
      forgetDeadline(late.pending);
    }
  });

  it("re-arms for the next deadline after a sweep", async () => {
    const first = call(5);
    const second = call(30);
    watchDeadline(first.pending);
    watchDeadline(second.pending);
    await held(first.whenExpired);
    await held(second.whenExpired);
    assert.deepEqual([first.events, second.events], [["expire"], ["expire"]]);
  });

  it("never expires a call that was forgotten", async () => {
    const forgotten = call(5);
    const watched = call(25);
    watchDeadline(forgotten.pending);
    forgetDeadline(forgotten.pending);
    watchDeadline(watched.pending);
    await held(watched.whenExpired);
    assert.deepEqual(forgotten.events, []);
  });

  it("stops every call watched, with the reason, and none that was forgotten", () => {
    const a = call(60_000);
    const b = call(60_000);
    const gone = call(60_000);
    watchDeadline(a.pending);
    watchDeadline(b.pending);
    watchDeadline(gone.pending);
    forgetDeadline(gone.pending);
    try {
      stopWatched("the host is stopping");
      assert.deepEqual([a.events, b.events, gone.events], [
        ["stop: the host is stopping"],
        ["stop: the host is stopping"],
        [],
      ]);
    } finally {
      forgetDeadline(a.pending);
      forgetDeadline(b.pending);
    }
  });
});
