// ctx.checkManifest opens for the class that spawns and for no other: a check manifest names programs to run, and
// what the operator's trust says about one is not for a read or an external-side-effect tool to ask.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createContext } from "../context.ts";
import { WardenError } from "../errors.ts";
import type { RootFs } from "./roots.ts";
import type { ManifestDoor } from "./manifests.ts";
import { type HostFacts, RISK_CLASSES, type RiskClass } from "../tool.ts";

const runtime = "Deno" in globalThis ? "deno" : "node";

/** A door that records what it was asked and answers trusted. */
function recordingDoor(asked: unknown[]): ManifestDoor {
  return {
    checkManifest: (root, manifest, signature) => {
      asked.push([root, manifest.length, signature?.length ?? null]);
      return Promise.resolve({
        trusted: true,
        status: "trusted",
        digest: "sha256:00",
        signer: { principal: "ada@example.com", fingerprint: "SHA256:x" },
      });
    },
  };
}

function ask(risk: RiskClass, door: ManifestDoor | undefined): Promise<unknown> {
  const ctx = createContext(risk, {
    signal: () => new AbortController().signal,
    fs: { rootIds: ["app"] } as unknown as RootFs, // not read by this door
    host: {} as HostFacts,
    tool: { name: "probe", risk, capabilities: { spawn: [], writeRoots: [], netHosts: [] } },
    deadline: Date.now() + 10_000,
    manifests: door,
  }) as unknown as { checkManifest: ManifestDoor["checkManifest"] };
  return ctx.checkManifest("app", new Uint8Array(3), null);
}

describe(`ctx.checkManifest (${runtime})`, () => {
  for (const risk of RISK_CLASSES) {
    if (risk === "gate") {
      it("gate: asks the host's door with the bytes it is given", async () => {
        const asked: unknown[] = [];
        const answer = await ask(risk, recordingDoor(asked));
        assert.equal((answer as { status: string }).status, "trusted");
        assert.deepEqual(asked, [["app", 3, null]]);
      });
    } else {
      it(`${risk}: is refused, and the door is never asked`, async () => {
        const asked: unknown[] = [];
        await assert.rejects(ask(risk, recordingDoor(asked)), (error: unknown) => {
          assert.ok(error instanceof WardenError);
          assert.equal(error.code, "capability_denied");
          assert.equal(
            error.message,
            `ctx.checkManifest needs risk class "gate": tool "probe" is "${risk}"; nothing was read`,
          );
          return true;
        });
        assert.deepEqual(asked, []);
      });
    }
  }

  it("gate, in a host that offers no door: says so", async () => {
    await assert.rejects(ask("gate", undefined), /^WardenError: ctx\.checkManifest is not available in this host$/);
  });
});
