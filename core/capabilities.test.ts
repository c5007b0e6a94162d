// The capability table against everything that reads it: for every risk class
// and every capability, the context opens the door or refuses it, the loader
// and the manifest check accept the declaration or refuse it with the table's
// words, and the catalog publishes the hints the table earns. The context
// types of core/tool.ts are checked against the table when this file is type
// checked (deno check), so a type that drifts from the table fails too.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as v from "valibot";
import {
  CAPABILITIES,
  capabilitiesOf,
  type Capability,
  CAPABILITY_NAMES,
  classesWords,
  HINTS,
  holds,
  ruleOf,
} from "./capabilities.ts";
import { canonicalJson } from "./canonical_json.ts";
import { describeTool } from "./catalog.ts";
import { createContext } from "./context.ts";
import type { RootFs } from "./doors/roots.ts";
import { WardenError } from "./errors.ts";
import { checkTool } from "./loader.ts";
import { isManifestProblem, readManifest } from "./plugins/trust/manifest.ts";
import { type ContextByRisk, defineTool, type HostFacts, RISK_CLASSES, type RiskClass } from "./tool.ts";

const runtime = "Deno" in globalThis ? "deno" : "node";

describe(`the capability table (${runtime})`, () => {
  it("gives each class what the README's risk classes promise: read everywhere, spawn to gate, write and fetch to external-side-effect", () => {
    assert.deepEqual(Object.fromEntries(RISK_CLASSES.map((risk) => [risk, capabilitiesOf(risk)])), {
      read: ["read"],
      gate: ["read", "spawn"],
      "external-side-effect": ["read", "write", "fetch"],
    });
  });

  it("names each capability once: its door, where a tool and a manifest declare it", () => {
    assert.deepEqual(CAPABILITY_NAMES, ["read", "spawn", "write", "fetch"]);
    assert.deepEqual(CAPABILITY_NAMES.map((c) => ruleOf(c).door), ["ctx.fs", "ctx.spawn", "ctx.fs.write", "ctx.fetch"]);
    assert.deepEqual(CAPABILITY_NAMES.map((c) => ruleOf(c).toolKey), [undefined, "spawn", "writeRoots", "netHosts"]);
    // The signed manifest format calls spawn's list argv.
    assert.deepEqual(CAPABILITY_NAMES.map((c) => ruleOf(c).manifestKey), [
      "readRoots",
      "argv",
      "writeRoots",
      "netHosts",
    ]);
  });

  it("is frozen: no module can widen a class at run time", () => {
    assert.throws(() => (CAPABILITIES.spawn.classes as unknown as RiskClass[]).push("read"), TypeError);
    assert.throws(() => {
      (CAPABILITIES as unknown as Record<string, unknown>).spawn = { classes: RISK_CLASSES };
    }, TypeError);
    assert.equal(holds("read", "spawn"), false);
  });

  it("words the classes of a capability as messages name them", () => {
    assert.equal(classesWords("spawn"), '"gate"');
    assert.equal(classesWords("read"), '"read" or "gate" or "external-side-effect"');
  });
});

describe(`the annotations follow the table (${runtime})`, () => {
  it("earns each class the hints schema/catalog.json publishes", () => {
    assert.deepEqual(HINTS, {
      read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      gate: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      "external-side-effect": {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    });
  });

  for (const risk of RISK_CLASSES) {
    it(`${risk}: a descriptor carries the class's hints, derived from what the class holds`, () => {
      const held = capabilitiesOf(risk).map(ruleOf);
      const { annotations } = describeTool({
        name: "probe",
        title: "Probe",
        description: "D.",
        risk,
        inputSchema: { type: "object" },
      });
      assert.deepEqual(annotations, {
        title: "Probe",
        readOnlyHint: !held.some((rule) => rule.changesState),
        destructiveHint: held.some((rule) => rule.changesState),
        idempotentHint: !held.some((rule) => rule.changesState),
        openWorldHint: held.some((rule) => rule.openWorld),
      });
    });
  }
});

/** A RootFs that answers every read with the file's name, so a read that got through is seen. */
const stubFs: RootFs = {
  rootIds: ["work"],
  readText: (_root, file) => Promise.resolve(`text of ${file}`),
  readBytes: () => Promise.resolve(new Uint8Array()),
  stat: () => Promise.reject(new Error("not in this stub")),
  stats: () => Promise.resolve([]),
  list: () => Promise.resolve([]),
  glob: () => Promise.resolve([]),
};

/** Uses `capability` through the context of a tool of class `risk` that declared nothing it could reach. */
function use(risk: RiskClass, capability: Capability): Promise<unknown> {
  const ctx = createContext(risk, {
    signal: () => new AbortController().signal,
    fs: stubFs,
    host: {} as HostFacts, // not read by any door
    tool: { name: "probe", risk, capabilities: { spawn: [], writeRoots: [], netHosts: [] } },
    deadline: Date.now() + 10_000,
  }) as unknown as {
    // Every class gets the same object; the type of each class hides what it lacks, and a tool can cast.
    fs: {
      readText(root: string, file: string): Promise<string>;
      write(root: string, file: string, data: string): Promise<unknown>;
    };
    fetch(url: string): Promise<unknown>;
    spawn(argv: string[]): Promise<unknown>;
  };
  switch (capability) {
    case "read":
      return ctx.fs.readText("work", "a.txt");
    case "spawn":
      return ctx.spawn(["git", "status"]);
    case "write":
      return ctx.fs.write("work", "a.txt", "written");
    case "fetch":
      return ctx.fetch("https://example.com/");
  }
}

describe(`the context opens exactly the doors of its class (${runtime})`, () => {
  for (const risk of RISK_CLASSES) {
    for (const capability of CAPABILITY_NAMES) {
      const refusal = `${ruleOf(capability).door} needs risk class ${
        classesWords(capability)
      }: tool "probe" is "${risk}"; nothing was run`;
      if (holds(risk, capability)) {
        it(`${risk}: ${ruleOf(capability).door} opens (what stops it next is the tool's own declaration)`, async () => {
          const outcome = await use(risk, capability).then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          if ("value" in outcome) {
            assert.equal(outcome.value, "text of a.txt");
          } else {
            assert.ok(outcome.error instanceof WardenError, String(outcome.error));
            assert.notEqual(outcome.error.message, refusal);
            assert.doesNotMatch(outcome.error.message, / needs risk class /);
          }
        });
      } else {
        it(`${risk}: ${ruleOf(capability).door} is refused with the table's words`, async () => {
          await assert.rejects(use(risk, capability), (error: unknown) => {
            assert.ok(error instanceof WardenError, String(error));
            assert.equal(error.code, "capability_denied");
            assert.equal(error.message, refusal);
            return true;
          });
        });
      }
    }
  }
});

/** A value each declaration accepts, so that only the class can make the loader or the manifest check refuse it. */
const DECLARED: Record<Capability, string> = {
  read: "*",
  spawn: "git",
  write: "work",
  fetch: "https://example.com",
};

describe(`the loader checks a tool's declarations against the table (${runtime})`, () => {
  for (const risk of RISK_CLASSES) {
    for (const capability of CAPABILITY_NAMES) {
      const key = ruleOf(capability).toolKey;
      if (!key) continue; // reading needs no declaration
      it(`${risk}: capabilities.${key} is ${holds(risk, capability) ? "accepted" : "refused"}`, () => {
        const checked = checkTool(
          "probe.ts",
          defineTool({
            name: "probe",
            title: "Probe",
            description: "D.",
            risk,
            input: v.strictObject({}),
            capabilities: { [key]: [DECLARED[capability]] },
            handler: () => "",
          }),
        );
        if (holds(risk, capability)) {
          assert.ok(!Array.isArray(checked), String(checked));
        } else {
          const classes = classesWords(capability);
          assert.deepEqual(checked, [
            `probe.ts: capability ${key} needs risk class ${classes}, the tool is "${risk}"; declare risk: ${classes} or drop ${key}`,
          ]);
        }
      });
    }
  }
});

/** The bytes of a canonical manifest of class `risk` whose capabilities are `capabilities`. */
function manifestBytes(risk: RiskClass, capabilities: Record<string, string[]>): Uint8Array {
  return new TextEncoder().encode(canonicalJson({
    schemaVersion: 1,
    id: "probe",
    version: "1.0.0",
    description: "D.",
    author: "A",
    risk,
    entry: { path: "plugin.js", sha256: "0".repeat(64) },
    capabilities,
    tools: [{ name: "echo", title: "Echo", description: "D.", inputSchema: { type: "object" } }],
  }));
}

describe(`the manifest check holds a plugin to the table (${runtime})`, () => {
  for (const risk of RISK_CLASSES) {
    for (const capability of CAPABILITY_NAMES) {
      const key = ruleOf(capability).manifestKey;
      it(`${risk}: capabilities.${key} is ${holds(risk, capability) ? "accepted" : "refused"}`, () => {
        const read = capability === "read" ? [DECLARED.read] : [];
        const manifest = readManifest(manifestBytes(risk, { readRoots: read, [key]: [DECLARED[capability]] }), "probe");
        if (holds(risk, capability)) {
          assert.ok(!isManifestProblem(manifest), JSON.stringify(manifest));
          assert.equal(manifest.risk, risk);
        } else {
          assert.deepEqual(manifest, {
            status: "invalid-manifest",
            reason: `capability ${key} is not available to risk class "${risk}"`,
          });
        }
      });
    }
  }
});

// The context types against the table, at compile time: deno check fails on this file if, for a class, a door is in
// its context type and not in the table, or the other way round.
type Has<T, K extends PropertyKey> = K extends keyof T ? true : false;
type InTable<C extends Capability, R extends RiskClass> = R extends (typeof CAPABILITIES)[C]["classes"][number] ? true
  : false;
type TypedDoors<R extends RiskClass> = {
  read: Has<ContextByRisk[R]["fs"], "readText">;
  spawn: Has<ContextByRisk[R], "spawn">;
  write: Has<ContextByRisk[R]["fs"], "write">;
  fetch: Has<ContextByRisk[R], "fetch">;
};
type TableDoors<R extends RiskClass> = { [C in Capability]: InTable<C, R> };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const typesFollowTheTable: { [R in RiskClass]: Same<TypedDoors<R>, TableDoors<R>> } = {
  read: true,
  gate: true,
  "external-side-effect": true,
};
void typesFollowTheTable;
