// The context's own checks, without the loader in front of them: a tool whose
// declared capabilities the loader would refuse (a gate tool with write roots
// and hosts, a read tool with programs) still gets no write, fetch or spawn
// from its context, and nothing happens. The controls show each door does
// open for the class that has it, so each refusal is the context's doing.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createContext } from "../core/context.ts";
import { WardenError } from "../core/errors.ts";
import { initPlatform } from "../core/platform/mod.ts";
import { openRoots, type RootFs } from "../core/doors/roots.ts";
import { Spawner } from "../core/doors/spawn.ts";
import type { HostFacts, RiskClass } from "../core/tool.ts";
import { runtimeName, tempDir } from "./helpers.ts";

describe(`the context refuses what the tool's class lacks, whatever it declared (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let fs: RootFs;
  let spawner: Spawner;
  let origin: string;
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? "");
    res.end("reached");
  });

  before(async () => {
    await initPlatform();
    work = tempDir();
    fs = await openRoots([{ id: "work", path: work.dir }]);
    spawner = new Spawner();
    await spawner.resolve(["sh"]);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    work.remove();
  });

  /** A context for tool `probe` of class `risk` that declared every capability there is. */
  const contextFor = (risk: RiskClass) =>
    createContext(risk, {
      signal: () => new AbortController().signal,
      fs,
      host: {} as HostFacts, // Not read by write, fetch or spawn.
      tool: {
        name: "probe",
        risk,
        capabilities: { spawn: ["sh"], writeRoots: ["work"], netHosts: [origin] },
      },
      deadline: Date.now() + 10_000,
      spawner,
    }) as unknown as {
      // Every class gets the same object; the type of each class hides what it lacks, and a tool can cast.
      fs: { write(root: string, file: string, data: string): Promise<unknown> };
      fetch(url: string): Promise<{ body: string }>;
      spawn(argv: string[]): Promise<{ stdout: string }>;
    };

  const refusal = (capability: string, needs: string, risk: string) => (error: unknown) => {
    assert.ok(error instanceof WardenError, String(error));
    assert.equal(error.code, "capability_denied");
    assert.equal(
      error.message,
      `${capability} needs risk class "${needs}": tool "probe" is "${risk}"; nothing was run`,
    );
    return true;
  };

  for (const risk of ["read", "gate"] as const) {
    it(`${risk}: ctx.fs.write is refused and nothing is written`, async () => {
      const file = `${risk}-write.txt`;
      await assert.rejects(
        contextFor(risk).fs.write("work", file, "written"),
        refusal("ctx.fs.write", "external-side-effect", risk),
      );
      assert.ok(!existsSync(path.join(work.dir, file)));
    });

    it(`${risk}: ctx.fetch is refused and the server hears nothing`, async () => {
      const before = requests.length;
      await assert.rejects(
        contextFor(risk).fetch(`${origin}/${risk}`),
        refusal("ctx.fetch", "external-side-effect", risk),
      );
      assert.equal(requests.length, before);
    });
  }

  for (const risk of ["read", "external-side-effect"] as const) {
    it(`${risk}: ctx.spawn is refused and nothing runs`, async () => {
      await assert.rejects(
        contextFor(risk).spawn(["sh", "-c", "echo ran"]),
        refusal("ctx.spawn", "gate", risk),
      );
    });
  }

  it("controls: each door opens for the class that has it", async () => {
    const external = contextFor("external-side-effect");
    await external.fs.write("work", "external-write.txt", "written");
    assert.equal(readFileSync(path.join(work.dir, "external-write.txt"), "utf8"), "written");
    assert.equal((await external.fetch(`${origin}/external`)).body, "reached");
    assert.equal(requests.at(-1), "/external");
    assert.equal((await contextFor("gate").spawn(["sh", "-c", "echo ran"])).stdout, "ran\n");
  });
});
