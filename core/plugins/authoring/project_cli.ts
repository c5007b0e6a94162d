// `warden project <status|accept>`: what the project's `.warden` holds, whether
// the user accepted its trust files as they are, and the acceptance itself.
import path from "node:path";
import type { Config } from "../../config.ts";
import { problem, received, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { acceptanceOf, acceptProject, PROJECT_TRUST_FILES, readProjectTrust } from "../trust/project.ts";

const USAGE = `Usage:
  warden project status [--json]   the project's .warden: its trust files, their digests, whether you accepted them
  warden project accept            accept the project's allowed_signers and plugins.lock.json as they are now
                                   (after reviewing them: "git log -p -- .warden/")
`;

function out(text: string): void {
  platform().writeStdout(text.endsWith("\n") ? text : text + "\n");
}

/** The project's state as `warden project status` and `warden doctor` show it. */
export async function projectStatus(config: Config) {
  const project = await readProjectTrust(config.projectDir);
  const acceptance = await acceptanceOf(project, config.acceptedProjectsFile);
  const plugins = await platform().fs.readDir(path.join(config.projectDir, "plugins")).then(
    (entries) => entries.filter((e) => e.kind === "directory" && !e.name.startsWith(".")).map((e) => e.name).sort(),
    () => [] as string[],
  );
  return {
    dir: config.projectDir,
    realDir: project.realDir,
    state: acceptance.state,
    acceptedAt: acceptance.acceptedAt,
    changed: acceptance.changed,
    plugins,
    files: PROJECT_TRUST_FILES.map((name) => ({
      name,
      digest: project.digests[name],
      accepted: acceptance.recorded?.[name] ?? null,
    })),
  };
}

/** `warden project <status|accept>`. */
export async function projectCommand(config: Config, args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "status") {
    const status = await projectStatus(config);
    if (rest.includes("--json")) {
      out(JSON.stringify(status, null, 2));
      return 0;
    }
    const lines = [
      `project     ${status.dir}`,
      `state       ${status.state}${status.acceptedAt ? ` (accepted ${status.acceptedAt})` : ""}`,
      `plugins     ${status.plugins.join(", ") || "-"}`,
      ...status.files.map((file) =>
        `${file.name.padEnd(18)} ${file.digest ?? "absent"}${
          status.state === "changed" && status.changed.includes(file.name)
            ? ` (accepted: ${file.accepted ?? "absent"})`
            : ""
        }`
      ),
    ];
    if (status.state !== "accepted") {
      lines.push(
        `next        review .warden/allowed_signers and .warden/plugins.lock.json ("git log -p -- .warden/"), then run "warden project accept"`,
      );
    }
    out(lines.join("\n"));
    return 0;
  }
  if (sub === "accept") {
    if (rest.length > 0) {
      throw new WardenError(
        "config_invalid",
        problem("Invalid command line", `unexpected ${received(rest[0])}`, 'run "warden project help"'),
      );
    }
    const project = await acceptProject(config.projectDir, config.acceptedProjectsFile);
    out(
      `Accepted ${project.realDir}: ${
        PROJECT_TRUST_FILES.map((name) => `${name} ${project.digests[name] ?? "absent"}`).join(", ")
      }; its plugins load at the next start, until these files change.`,
    );
    return 0;
  }
  if (sub === undefined || sub === "help" || sub === "--help") {
    out(USAGE);
    return 0;
  }
  throw new WardenError(
    "config_invalid",
    problem("Invalid command line", `unknown project command ${received(sub)}`, 'run "warden project help"'),
  );
}
