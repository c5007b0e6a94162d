// What a ledger row says of a call's time: the duration the call took, in
// milliseconds, within what the client measured around it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { connect, fixtureToolsDir, runtimeName, tempDir } from "./helpers.ts";

describe(`ledger rows (${runtimeName})`, () => {
  it("record a call's duration in milliseconds, no shorter than the tool took and no longer than the round trip", async () => {
    const work = tempDir();
    try {
      const ledger = path.join(work.dir, "ledger");
      const session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger } });
      let wallMs: number;
      try {
        const started = performance.now();
        await session.client.callTool({ name: "fixture_sleep", arguments: { ms: 60 } });
        wallMs = performance.now() - started;
      } finally {
        await session.close();
      }
      const rows = readdirSync(ledger).flatMap((file) =>
        readFileSync(path.join(ledger, file), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
      ).filter((row) => row.tool === "fixture_sleep" && row.outcome === "ok");
      assert.equal(rows.length, 1, JSON.stringify(rows));
      const { durationMs } = rows[0];
      assert.ok(durationMs >= 59, `${durationMs} ms recorded for a 60 ms sleep`);
      assert.ok(durationMs <= wallMs, `${durationMs} ms recorded for a call that took ${wallMs} ms end to end`);
    } finally {
      work.remove();
    }
  });
});
