import { before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { initPlatform, platform } from "./platform/mod.ts";
import { parseConfig } from "./config.ts";

before(async () => {
  await initPlatform();
});

const envOf = (vars: Record<string, string>) => (name: string) => vars[name];

test("parseConfig: path defaults under the user's directories and the first root, each with its source", () => {
  const { config } = parseConfig(
    ["--root", "app=/work/app", "--ledger", "/var/ledger"],
    envOf({ HOME: "/home/a", WARDEN_JOBS_DIR: "/var/jobs" }),
    "linux",
  );
  assert.deepEqual(
    [config.pluginsDir, config.allowedSignersFile, config.lockFile, config.projectDir, config.acceptedProjectsFile],
    [
      "/home/a/.config/warden/plugins",
      "/home/a/.config/warden/allowed_signers",
      "/home/a/.config/warden/plugins.lock.json",
      "/work/app/.warden",
      "/home/a/.local/state/warden/accepted_projects.json",
    ],
  );
  assert.deepEqual(config.sources, {
    pluginsDir: "user config",
    allowedSignersFile: "user config",
    revokedKeysFile: "user config",
    lockFile: "user config",
    projectDir: "project",
    ledgerDir: "--ledger",
    jobsDir: "WARDEN_JOBS_DIR",
  });
  assert.equal(config.ledgerDir, "/var/ledger");
  assert.equal(config.jobsDir, "/var/jobs");
  const named = parseConfig(["--project-dir", "shared"], envOf({ HOME: "/h" }), "linux").config;
  assert.equal(named.projectDir, path.join(platform().cwd(), "shared"));
  assert.equal(named.sources.projectDir, "--project-dir");
});

test("parseConfig: without HOME, a default under a user directory throws when read, and only then", () => {
  const { config } = parseConfig(["--ledger", "/l"], envOf({}), "linux");
  assert.equal(config.ledgerDir, "/l");
  assert.equal(config.projectDir, path.join(platform().cwd(), ".warden"));
  assert.throws(
    () => config.pluginsDir,
    /^WardenError: Cannot find the user config directory: HOME \(or XDG_CONFIG_HOME\) is not set; /,
  );
  assert.throws(
    () => config.jobsDir,
    /Cannot find the user state directory: HOME \(or XDG_STATE_HOME\) is not set; set HOME or XDG_STATE_HOME, or name the files with --ledger and --jobs-dir/,
  );
  assert.throws(() => config.acceptedProjectsFile, /user state directory/);
  assert.ok(Object.isFrozen(config));
});
