// Runtime confinement, behind the context: the permissions this server needs,
// computed once from its frozen catalog and its settings, and the command line
// that grants exactly those. Built-in tools are trusted code and ctx is their
// only door; these flags make the runtime hold the same line if one reaches
// past ctx (a dynamic import of node:fs, globalThis.process, fetch).
import path from "node:path";

/** What one server process needs from the runtime, by permission; paths absolute. */
export interface PermissionNeeds {
  /** The roots, warden's own files (source or build, node_modules), the user's and the project's plugins, trust and lock, the ledger. */
  readonly read: readonly string[];
  /** The ledger directory, the roots tools declare as write roots, the gate scratch parent. */
  readonly write: readonly string[];
  /** The programs started directly: bubblewrap, gate programs, deno and its helpers for plugins. `all`: see `runAllWhy`. */
  readonly run: readonly string[] | "all";
  /** Why `run` cannot be a list, when it is `all`. */
  readonly runAllWhy: string | null;
  /** `host:port` of every origin a tool declared. `all`: see `netAllWhy`. */
  readonly net: readonly string[] | "all";
  /** Why `net` cannot be a list, when it is `all`. */
  readonly netAllWhy: string | null;
  /** Every environment variable warden reads. */
  readonly env: readonly string[];
  /** System facts dependencies ask for (fast-glob sizes its pool by `os.cpus()`). */
  readonly sys: readonly string[];
}

/** What the needs are computed from: the catalog's capabilities, the settings, what was found at startup. */
export interface NeedsInput {
  /** Where warden is installed (the repository). */
  readonly appRoot: string;
  /** Whether warden runs from its TypeScript source (deno) or its build (node). */
  readonly fromSource: boolean;
  /** The node_modules directory an installed package sits in, which holds its dependencies; null for a clone. */
  readonly dependencies?: string | null;
  /** Directory the built-in tools were loaded from. */
  readonly toolsDir: string;
  /** Root id to the paths it stands for (as configured and, if different, real). */
  readonly roots: ReadonlyMap<string, readonly string[]>;
  readonly pluginsDir: string;
  /** The user's trust files and lock, the project's `.warden` directory, the accepted projects' record. */
  readonly trustFiles: readonly string[];
  readonly ledgerDir: string;
  /** Where jobs are kept, when a tool is served as a job. */
  readonly jobsDir: string | null;
  /** The runtime binary; it reads itself (Deno.execPath). */
  readonly execPath: string;
  /** The deno binary plugins run in, when a plugin is verified and may run. */
  readonly pluginDeno: string | null;
  /**
   * The OS helpers of a plugin child (see plugins/sandbox/limits.ts): setpriv and prlimit, which it is started through, and
   * cat, which reads its CPU time from /proc where this host may not. Looked up by lstat, so read, and started, so
   * run. Without read they would look absent, and the memory limit or the CPU budget would go.
   */
  readonly pluginHelpers: readonly string[];
  /** Programs gate tools declared, as resolved at startup (null: not found). */
  readonly programs: ReadonlyMap<string, string | null>;
  /** Where the programs (and bwrap) were found in PATH and what that resolves to: looked up by stat, so read. */
  readonly programFiles: readonly string[];
  /** bubblewrap's path, when it isolates here (a gate program then runs inside it, not started by warden). */
  readonly bwrap: string | null;
  /** Where gate calls get their scratch directories (the OS temp directory). */
  readonly tempDir: string;
  /** Root ids tools may write under, and origins they may fetch. */
  readonly writeRoots: readonly string[];
  readonly netHosts: readonly string[];
  /**
   * The services warden itself connects to by name, by URL: telemetry's collectors (WARDEN_OTEL_ENABLED=1) and the
   * policy engine (--policy-url).
   */
  readonly services?: readonly string[];
  /** Every environment variable warden reads. */
  readonly env: readonly string[];
}

const sorted = (values: Iterable<string>) => Object.freeze([...new Set(values)].sort());

/**
 * `paths` less those inside another of them (a directory's permission covers what is under it), but for `keep`:
 * the directory a command is started in stands for whichever directory that will be, so it covers nothing.
 */
function outermost(paths: readonly string[], keep: string | null): readonly string[] {
  return paths.filter((p) =>
    !paths.some((q) => q !== p && q !== keep && p.startsWith(q.endsWith(path.sep) ? q : q + path.sep))
  );
}

const SYS_NEEDED = Object.freeze(["cpus"]);
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\])$/;
const defaultPort = (url: URL) => (url.protocol === "https:" ? "443" : "80");

/** The permissions a server with this catalog and these settings needs, and nothing more. */
export function permissionNeeds(input: NeedsInput): PermissionNeeds {
  const own = input.fromSource
    ? ["core", "tools", "dist", "node_modules", "package.json", "deno.json"]
    : ["dist", "node_modules", "package.json"];
  const rootPaths = [...input.roots.values()].flat();
  const programs = [...input.programs.values()].filter((p): p is string => p !== null);
  const gate = input.programs.size > 0;
  // Deno.kill on a process group needs the unrestricted --allow-run. Under bubblewrap a program's whole tree
  // lives in a pid namespace that dies with bwrap, so a list is enough; without it, only the group kill stops
  // what a timed-out program started.
  const runAllWhy = gate && input.bwrap === null
    ? "bubblewrap does not isolate here, and killing a gate program's process group needs the unrestricted --allow-run"
    : null;
  // egress.ts resolves a name itself and connects to the addresses it checked (rebinding), so deno checks the
  // connection against those addresses, which no flag can name in advance; an IP origin is one address.
  const hosts = input.netHosts.map((origin) => new URL(origin));
  const named = hosts.filter((url) => !IP_LITERAL.test(url.hostname));
  const netAllWhy = named.length > 0
    ? `tools fetch from ${
      named.map((url) => url.origin).join(", ")
    }, and warden connects to the addresses it resolved and checked, which --allow-net cannot name in advance`
    : null;
  return Object.freeze({
    read: sorted([
      ...own.map((name) => path.join(input.appRoot, name)),
      ...(input.dependencies ? [input.dependencies] : []),
      input.toolsDir,
      ...rootPaths,
      input.pluginsDir,
      ...input.trustFiles,
      input.ledgerDir,
      ...(input.jobsDir ? [input.jobsDir] : []),
      input.execPath,
      ...input.programFiles,
      ...(input.pluginDeno ? input.pluginHelpers : []),
    ]),
    write: sorted([
      input.ledgerDir,
      ...(input.jobsDir ? [input.jobsDir] : []),
      ...input.writeRoots.flatMap((id) => input.roots.get(id) ?? []),
      ...(gate ? [input.tempDir] : []),
    ]),
    run: runAllWhy ? "all" : sorted([
      ...(input.pluginDeno ? [input.pluginDeno, ...input.pluginHelpers] : []),
      ...(gate && input.bwrap ? [input.bwrap] : []),
      ...(gate && !input.bwrap ? programs : []),
    ]),
    runAllWhy,
    net: netAllWhy ? "all" : sorted(
      [...hosts, ...(input.services ?? []).map((endpoint) => new URL(endpoint))].map((url) =>
        `${url.hostname}:${url.port || defaultPort(url)}`
      ),
    ),
    netAllWhy,
    env: sorted(input.env),
    sys: SYS_NEEDED,
  });
}

/**
 * deno's permission flags for `needs`. `cwd`, when given, is written as `.`: a command registered without roots
 * reads the directory the agent starts it in, whichever that is.
 */
export function denoPermissionFlags(needs: PermissionNeeds, cwd: string | null): string[] {
  const list = (values: readonly string[]) => {
    const kept = outermost(values, cwd);
    return [...(cwd !== null && kept.includes(cwd) ? ["."] : []), ...kept.filter((value) => value !== cwd)].join(",");
  };
  const flags = ["--no-prompt", `--allow-read=${list(needs.read)}`, `--allow-write=${list(needs.write)}`];
  if (needs.run === "all") flags.push("--allow-run");
  else if (needs.run.length > 0) flags.push(`--allow-run=${needs.run.join(",")}`);
  if (needs.net === "all") flags.push("--allow-net");
  else if (needs.net.length > 0) flags.push(`--allow-net=${needs.net.join(",")}`);
  if (needs.env.length > 0) flags.push(`--allow-env=${needs.env.join(",")}`);
  if (needs.sys.length > 0) flags.push(`--allow-sys=${needs.sys.join(",")}`);
  return flags;
}

/**
 * What node's permission model is given for `paths`: each as `<path>/*`, which covers the path itself and what is
 * under it, but for paths that begin with another one as strings without being under it (`plugins` and
 * `plugins.lock.json`, a root `/x/app` and `/x/app2`). node 20 keeps its grants in a radix tree that then loses
 * the shorter path itself (`plugins/*` beside `plugins.lock.json` refuses to list `plugins`, so no plugin loads),
 * and granting `plugins` beside `plugins/*` aborts node. Such a group is one grant, `<shortest>*`: it covers each of
 * them, what is under them, and the siblings whose names begin with the shortest one's.
 */
export function nodeFsGrants(paths: readonly string[]): string[] {
  const kept = outermost(paths, null);
  return kept.flatMap((p) => {
    if (kept.some((q) => q !== p && p.startsWith(q))) return []; // covered by `${q}*`
    return kept.some((q) => q !== p && q.startsWith(p)) ? [`${p}*`] : [`${p}${path.sep}*`];
  });
}

/**
 * node's permission-model flags for `needs` (`--experimental-permission` before node 22): file reads and writes
 * as listed (see nodeFsGrants), one flag per path (node 20 reads only the first entry of a comma-separated list);
 * child processes and workers all or nothing; nothing for the environment or, before node 25, the network.
 */
export function nodePermissionFlags(needs: PermissionNeeds, nodeMajor: number, usesWorkers: boolean): string[] {
  const flags = [
    nodeMajor >= 22 ? "--permission" : "--experimental-permission",
    ...nodeFsGrants(needs.read).map((grant) => `--allow-fs-read=${grant}`),
    ...nodeFsGrants(needs.write).map((grant) => `--allow-fs-write=${grant}`),
  ];
  if (needs.run === "all" || needs.run.length > 0) flags.push("--allow-child-process");
  if (usesWorkers) flags.push("--allow-worker");
  return flags;
}
