// The command `warden command --node-permission` prints, run: with the default layout (plugins/ beside
// plugins.lock.json) and roots whose names begin with another's, node 20's permission model must still let warden
// list each of them, so a pinned plugin loads; and a plugins directory the model does not let warden list is an
// error that says so, not a server without its plugins. Node only: deno's flags are tested in confinement.test.ts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { childEnv, connect, onDeno, repoRoot, runWarden, tempDir, textOf } from "./helpers.ts";

/** The example plugin, signed by the test key, trusted and pinned in a lock file beside the plugins directory. */
async function pinnedExample(work: string): Promise<Record<string, string>> {
  const plugins = path.join(work, "plugins");
  cpSync(path.join(repoRoot, "plugins", "licenses"), path.join(plugins, "licenses"), { recursive: true });
  const env = {
    WARDEN_PLUGINS_DIR: plugins,
    WARDEN_PLUGINS_LOCK: path.join(work, "plugins.lock.json"),
    WARDEN_ALLOWED_SIGNERS: path.join(repoRoot, "test/fixtures/trust/allowed_signers"),
  };
  const trust = await runWarden(["plugin", "trust", path.join(plugins, "licenses")], { env });
  assert.equal(trust.code, 0, trust.stderr);
  return env;
}

/** Two roots, `app` and `app2`, whose paths begin alike, each with one marker. */
function prefixRoots(work: string): string[] {
  for (const name of ["app", "app2"]) {
    mkdirSync(path.join(work, name));
    writeFileSync(path.join(work, name, "a.ts"), `// TODO: in ${name}\n`);
  }
  return ["--root", `app=${path.join(work, "app")}`, "--root", `app2=${path.join(work, "app2")}`];
}

async function printed(args: string[], env: Record<string, string>): Promise<{ command: string; args: string[] }> {
  const out = await runWarden(["command", "--node-permission", "--json", ...args], { env });
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

if (!onDeno) {
  describe("node's permission model, as `warden command --node-permission` prints it (node)", () => {
    it("loads a pinned plugin beside its lock file and reads roots whose names begin alike", async () => {
      const work = tempDir();
      try {
        const env = await pinnedExample(work.dir);
        const roots = prefixRoots(work.dir);
        const { command, args } = await printed(roots, env);
        assert.ok(args[0] === "--experimental-permission" || args[0] === "--permission", args.join(" "));
        const session = await connect({ env, wrap: () => ({ command, args }) });
        try {
          const listed = await session.client.callTool({ name: "extension_list", arguments: {} });
          assert.deepEqual((listed.structuredContent as { totals: unknown }).totals, { verified: 1 }, textOf(listed));
          const licenses = await session.client.callTool({ name: "licenses_list", arguments: {} });
          assert.equal(licenses.isError, undefined, textOf(licenses));
          for (const root of ["app", "app2"]) {
            const debt = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: root } });
            assert.equal(debt.isError, undefined, textOf(debt));
            assert.match(textOf(debt), new RegExp(`in ${root}\\b`), `${root} is read`);
          }
          const facts = await session.client.callTool({ name: "host_context", arguments: {} });
          assert.equal((facts.structuredContent as { confinement: { inForce: boolean } }).confinement.inForce, true);
        } finally {
          await session.close();
        }
      } finally {
        work.remove();
      }
    });

    it("refuses to start, naming the plugins directory, when the model does not let warden list it", async () => {
      const work = tempDir();
      try {
        const env = await pinnedExample(work.dir);
        const { command, args } = await printed([], env);
        const plugins = env.WARDEN_PLUGINS_DIR;
        const without = args.filter((a) => !(a.startsWith("--allow-fs-read=") && a.includes(`${plugins}`)));
        assert.equal(without.length, args.length - 1, "one grant covered the plugins directory");
        // The lock file lost its grant with it (one wildcard): grant it alone, as an operator might.
        const narrowed = [...without.slice(0, 1), `--allow-fs-read=${env.WARDEN_PLUGINS_LOCK}`, ...without.slice(1)];
        const ran = spawnSync(command, narrowed, {
          cwd: repoRoot,
          env: childEnv(env),
          input: "",
          encoding: "utf8",
          timeout: 30_000,
        });
        assert.equal(ran.status, 2, ran.stderr);
        const failed = ran.stderr.split("\n").filter(Boolean).map((line) => {
          try {
            return JSON.parse(line);
          } catch {
            return {};
          }
        }).find((line) => line.event === "startup_failed");
        assert.match(
          failed?.error ?? ran.stderr,
          new RegExp(`^Cannot list the plugins directory ${plugins.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
        );
      } finally {
        work.remove();
      }
    });
  });
}
