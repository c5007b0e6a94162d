// `warden doctor [--json]`: every path setting with its value, where it came
// from and whether it is usable; the runtime, deno for plugins, bubblewrap,
// git, confinement, the project's acceptance and the install directory. Exit
// 0 when nothing is wrong, 1 otherwise, each problem with its fix. It prints
// the settings' own paths and nothing else of the environment.
import path from "node:path";
import { type Config, hostAndPort, isLoopback, PATH_SETTINGS, type PathSetting } from "./config.ts";
import { messageOf } from "./errors.ts";
import { selectionMode } from "./call/projects.ts";
import { platform } from "./platform/mod.ts";
import type { Confinement } from "./platform/confinement.ts";
import type { Spawner } from "./doors/spawn.ts";
import type { PluginRecord } from "./tool.ts";
import { readTokens } from "./transport/tokens.ts";

/** One line of the report. */
export interface DoctorCheck {
  /** The setting's flag, or what is checked: runtime, deno, bubblewrap, git, confinement, project, install. */
  readonly name: string;
  readonly ok: boolean;
  /** The path or the version checked; null when it cannot be known. */
  readonly value: string | null;
  /** For a setting: its flag, its variable, or the default it took (`project`, `user config`, `user state`). */
  readonly source: string | null;
  readonly detail: string;
  readonly fix: string | null;
}

/** What the doctor looks at, found by main. */
export interface DoctorInput {
  readonly config: Config;
  /** Where warden is installed: read at run time, never written. */
  readonly installDir: string;
  readonly spawner: Spawner;
  /** What the runtime holds this process to; throws when the needs cannot be known (a path it cannot place). */
  readonly confinement: () => Promise<Confinement>;
  /** The plugins of both scopes as checked now; throws when the checks cannot run (a malformed trust file, say). */
  readonly plugins: () => Promise<readonly PluginRecord[]>;
  /** The project's status (core/plugins/authoring/project_cli.ts), or the error that stopped reading it. */
  readonly project: () => Promise<{ state: string; changed: readonly string[]; plugins: readonly string[] }>;
}

/** What the doctor looked at, said with every report. */
const SCOPE =
  "checked the settings, files and programs of this machine as a server would start with them; no running server or connection was inspected.";

/** Settings warden writes under. */
const WRITTEN: readonly PathSetting[] = ["ledgerDir", "jobsDir"];

const isUnder = (file: string, dir: string) =>
  file === dir || file.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

async function kindOf(file: string): Promise<"directory" | "file" | "absent" | "other"> {
  const found = await platform().fs.stat(file).catch(() => null);
  return found === null ? "absent" : found.isDirectory ? "directory" : found.isFile ? "file" : "other";
}

/** Whether warden can write in `dir` (created if missing, as the server does): a probe file written and removed. */
async function writable(dir: string): Promise<string | null> {
  try {
    await platform().fs.mkdir(dir);
    const probe = path.join(dir, `.doctor-${platform().pid()}.tmp`);
    await platform().fs.writeFileAtomic(probe, "");
    await platform().fs.remove(probe);
    return null;
  } catch (error) {
    return messageOf(error).split("\n")[0];
  }
}

async function settingCheck(input: DoctorInput, key: PathSetting): Promise<DoctorCheck> {
  const { config } = input;
  const flag = PATH_SETTINGS[key];
  const source = config.sources[key];
  let value: string;
  try {
    value = config[key];
  } catch (error) {
    return { name: flag, ok: false, value: null, source, detail: messageOf(error), fix: null };
  }
  const check = (ok: boolean, detail: string, fix: string | null = null) => ({
    name: flag,
    ok,
    value,
    source,
    detail,
    fix,
  });
  const kind = await kindOf(value);
  if (WRITTEN.includes(key)) {
    if (isUnder(value, input.installDir)) {
      return check(
        false,
        "inside the install directory, which a package update replaces",
        `move it (README: "Moving a clone's state") and drop ${flag}, or name a directory outside ${input.installDir}`,
      );
    }
    const refused = await writable(value);
    return refused === null
      ? check(true, "writable")
      : check(false, `not writable: ${refused}`, `make it writable, or name another with ${flag}`);
  }
  const wantsDir = key === "pluginsDir" || key === "projectDir";
  if (kind === "absent") {
    const what: Record<string, string> = {
      pluginsDir: "absent: the user has no plugins",
      projectDir: "absent: the project has no plugins or trust files of its own",
      allowedSignersFile: "absent: no key is trusted",
      revokedKeysFile: "absent: no key is revoked",
      lockFile: "absent: nothing is pinned",
      tokensFile: "absent: no bearer token (serve --http then answers on loopback only)",
    };
    // A directory a flag or a variable names must be there: nothing loads from it otherwise.
    const named = key === "pluginsDir" && config.pluginsDirFrom !== null;
    return named
      ? check(false, "not a directory, so no plugin loads", "create it, or fix the setting")
      : check(true, what[key]);
  }
  if (wantsDir !== (kind === "directory")) {
    return check(
      false,
      `${kind === "directory" ? "a directory" : "not a directory"}, where warden reads a ${
        wantsDir ? "directory" : "file"
      }`,
      "fix the setting",
    );
  }
  if (key === "tokensFile") {
    try {
      const tokens = await readTokens(value);
      const principals = new Set(tokens.map((token) => token.principal)).size;
      return check(true, `${tokens.length} token(s) of ${principals} principal(s)`);
    } catch (error) {
      return check(
        false,
        messageOf(error).split("\n")[0],
        'fix the line, or make the file anew with "warden token add"',
      );
    }
  }
  return check(true, "exists");
}

/** What `serve --http` would do with these settings: where it listens, and whether it would start. */
async function httpCheck(config: Config): Promise<Omit<DoctorCheck, "name" | "source">> {
  const { host, port } = config.http;
  const value = hostAndPort(host, port);
  let tokens: number;
  try {
    tokens = (await readTokens(config.tokensFile)).length;
  } catch {
    // Its own line (--tokens) says what is wrong with the file.
    return { ok: false, value, detail: "the tokens file does not parse, so serve --http would not start", fix: null };
  }
  const issuer = config.http.authorization?.issuer;
  if (tokens > 0) {
    const also = issuer ? ` or an access token of ${issuer}` : "";
    return { ok: true, value, detail: `every request needs one of ${tokens} token(s)${also}`, fix: null };
  }
  if (issuer) return { ok: true, value, detail: `every request needs an access token of ${issuer}`, fix: null };
  return isLoopback(host)
    ? { ok: true, value, detail: "loopback, no tokens: every call is the operator's (--principal)", fix: null }
    : {
      ok: false,
      value,
      detail: "not loopback and no tokens: serve --http refuses to start",
      fix: 'make a token with "warden token add <principal>", name an --authorization-server, or bind --host 127.0.0.1',
    };
}

/** The roots, each a project: every one a directory this process can read, and how a call that names none is settled. */
async function projectsCheck(
  config: Config,
): Promise<{ ok: boolean; value: string; detail: string; fix: string | null }> {
  const { openRoots } = await import("./doors/roots.ts");
  const broken: string[] = [];
  for (const root of config.roots) {
    try {
      await openRoots([root]);
    } catch (error) {
      broken.push(messageOf(error));
    }
  }
  const ids = config.roots.map((root) => root.id);
  const mode = selectionMode(ids, config.strictProjectSelection);
  const settled = mode === "strict"
    ? "a call must name its project (--strict-project-selection)"
    : mode === "default"
    ? `a call that names none reads ${ids[0]}`
    : "the one project";
  const detail = config.clientRoots
    ? `${settled}; over stdio the client's roots replace them when it offers roots (--client-roots)`
    : settled;
  return broken.length > 0
    ? { ok: false, value: ids.join(", "), detail: broken.join("; "), fix: null }
    : { ok: true, value: ids.join(", "), detail, fix: null };
}

/** Every check, in the order the report shows them. */
export async function doctorChecks(input: DoctorInput): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = await Promise.all(
    (Object.keys(PATH_SETTINGS) as PathSetting[]).map((key) => settingCheck(input, key)),
  );
  const other = (name: string, ok: boolean, value: string | null, detail: string, fix: string | null = null) =>
    checks.push({ name, ok, value, source: null, detail, fix });
  const { runtime } = platform();
  other("runtime", true, `${runtime.name} ${runtime.version}`, runtime.execPath);
  let deno: string | null = null;
  try {
    deno = runtime.name === "deno" ? runtime.execPath : platform().denoExecutable();
  } catch {
    deno = null;
  }
  if (deno !== null && (await kindOf(deno)) !== "file") deno = null;
  other(
    "deno",
    deno !== null,
    deno,
    deno ? "plugins run in it" : "not found: no plugin can run",
    deno ? null : 'install the "deno" npm package beside warden (npm install deno)',
  );
  await input.spawner.resolve(["git"]);
  const isolation = await input.spawner.isolation();
  other("bubblewrap", true, isolation.kind, isolation.detail);
  const git = input.spawner.programs().get("git") ?? null;
  other("git", true, git, git ? "found" : "not found: run_checks cannot tell a repository's changed files");
  try {
    const confinement = await input.confinement();
    other("confinement", true, confinement.inForce ? "in force" : "not in force", confinement.detail);
  } catch (error) {
    other("confinement", false, null, messageOf(error));
  }
  try {
    const records = await input.plugins();
    const verified = records.filter((record) => record.status === "verified").length;
    // A refused plugin is the operator's choice as often as not (one not pinned yet): said, not failed.
    other(
      "plugins",
      true,
      `${verified} verified, ${records.length - verified} refused`,
      records.length === 0 ? "none in either scope" : '"warden plugin list" says why each refused one is',
    );
  } catch (error) {
    other("plugins", false, null, messageOf(error));
  }
  try {
    const project = await input.project();
    const waiting = project.state !== "accepted" && project.plugins.length > 0;
    other(
      "project",
      !waiting,
      project.state,
      project.state === "changed"
        ? `.warden/${project.changed.join(" and .warden/")} changed since you accepted it${
          waiting ? ", so its plugins are refused" : ""
        }`
        : project.state === "accepted"
        ? "its trust files are the ones you accepted"
        : waiting
        ? `never accepted, so its plugins (${project.plugins.join(", ")}) are refused`
        : "never accepted (it has no plugins)",
      waiting
        ? 'review them ("git log -p -- .warden/", "warden project status"), then run "warden project accept"'
        : null,
    );
  } catch (error) {
    other("project", false, null, messageOf(error));
  }
  const projects = await projectsCheck(input.config);
  other("projects", projects.ok, projects.value, projects.detail, projects.fix);
  const http = await httpCheck(input.config);
  other("http", http.ok, http.value, http.detail, http.fix);
  const authorization = input.config.http.authorization;
  if (authorization) {
    const { authorizationServerCheck } = await import("./transport/oauth.ts");
    const reached = await authorizationServerCheck(authorization);
    other(
      "authorization server",
      reached.ok,
      authorization.issuer,
      reached.detail,
      reached.ok
        ? null
        : "check --authorization-server is the issuer exactly as its tokens' iss says it, and reachable",
    );
  }
  other("install", true, input.installDir, "read at run time, never written");
  return checks;
}

/** `warden doctor [--json]`. */
export async function doctorCommand(input: DoctorInput, args: readonly string[]): Promise<number> {
  const checks = await doctorChecks(input);
  const ok = checks.every((check) => check.ok);
  if (args.includes("--json")) {
    platform().writeStdout(JSON.stringify({ ok, checks, scope: SCOPE }, null, 2) + "\n");
  } else {
    const width = Math.max(...checks.map((check) => check.name.length));
    const lines = checks.map((check) =>
      `${check.ok ? "ok  " : "FAIL"}  ${check.name.padEnd(width)}  ${check.value ?? "-"}${
        check.source ? ` (${check.source})` : ""
      }: ${check.detail}${check.fix ? `; fix: ${check.fix}` : ""}`
    );
    platform().writeStdout(
      lines.join("\n") + `\n${ok ? "Nothing is wrong" : "Fix the FAIL lines above"}: ${SCOPE}\n`,
    );
  }
  return ok ? 0 : 1;
}
