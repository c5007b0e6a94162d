// `warden plugin ...`: the author's and the operator's commands. From an
// empty directory to a pinned, loaded plugin: new, build, sign,
// allow-signer (once per key), trust.
import path from "node:path";
import { toJsonSchema } from "@valibot/to-json-schema";
import { canonicalJson } from "../../canonical_json.ts";
import { sha256Digest } from "../../sha256.ts";
import type { Config } from "../../config.ts";
import { messageOf, problem, received, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { RISK_CLASSES } from "../../tool.ts";
import { parsePrivateKey, parsePublicKey, PLUGIN_SIGNATURE_NAMESPACE, signMessage } from "../trust/sshsig.ts";
import {
  discoverPlugins,
  fixFor,
  inspectPlugin,
  MAX_TRUST_FILE_BYTES,
  type PluginRecord,
  pluginSources,
  readTrustStore,
} from "../trust/discover.ts";
import { parseAllowedSigners } from "../trust/allowed_signers.ts";
import { acceptanceOf, acceptProject, notAcceptedReason, readProjectTrust } from "../trust/project.ts";
import { readLock, writeLock } from "../trust/lock.ts";
import { isManifestProblem, MANIFEST_SCHEMA_VERSION, readManifest } from "../trust/manifest.ts";
import type { PluginSpec } from "./sdk.ts";

const USAGE = `Usage:
  warden plugin new <id> [--project]           a working TypeScript skeleton in <plugins dir>/<id>/
                                               (--project: in the project's .warden/plugins/)
  warden plugin build <dir>                    bundle src/main.ts, write plugin.js and manifest.json
  warden plugin sign <dir> --key <ed25519 key> sign manifest.json (or: ssh-keygen -Y sign -n ${PLUGIN_SIGNATURE_NAMESPACE})
  warden plugin allow-signer <principal> --key <key.pub> [--project]
                                               trust a key to sign plugins (appends to your allowed_signers,
                                               or with --project to the project's .warden/allowed_signers)
  warden plugin verify <dir>                   check manifest, signature, signer and entry; show the pin state
  warden plugin trust <dir>                    show signer and digest, then pin the plugin in the lock file
                                               (a plugin under .warden/plugins/ in the project's lock)
  warden plugin list [--json]                  every plugin directory and its status
`;

function usage(detail: string, help = "warden plugin help"): WardenError {
  return new WardenError("config_invalid", problem("Invalid command line", detail, `run "${help}"`));
}

function out(text: string): void {
  platform().writeStdout(text.endsWith("\n") ? text : text + "\n");
}

function optionValue(args: string[], name: string, help?: string): string | undefined {
  const i = args.indexOf(name);
  if (i === -1) return undefined;
  const value = args[i + 1];
  if (value === undefined || value.startsWith("--")) throw usage(`${name} needs a value`, help);
  args.splice(i, 2);
  return value;
}

/** Largest key file read. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

async function readText(file: string, what: string, fix: string): Promise<string> {
  try {
    return await platform().fs.readTextFile(file, MAX_KEY_FILE_BYTES);
  } catch (error) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot read ${what} ${file}`, messageOf(error).split("\n")[0], fix),
    );
  }
}

function pluginDir(arg: string | undefined): string {
  if (!arg) throw usage("missing the plugin directory, e.g. plugins/licenses");
  return path.resolve(platform().cwd(), arg);
}

const SKELETON = (id: string, sdk: string) =>
  `// ${id}: a warden plugin. Build, sign and pin it:
//   warden plugin build plugins/${id}
//   warden plugin sign plugins/${id} --key ~/.ssh/id_ed25519
//   warden plugin trust plugins/${id}
// It runs in a sandbox with no permissions: what its ctx offers (files, and by
// risk class programs and the network) is a request the host answers or refuses.
import * as v from "valibot";
import { definePlugin } from "${sdk}";

export const plugin = definePlugin({
  id: "${id}",
  version: "0.1.0",
  description: "Counts the files of a root.",
  author: "Your Name <you@example.com>",
  risk: "read",
  // Root ids this plugin may read ("*": every root the operator configured).
  capabilities: { readRoots: ["*"] },
  tools: {
    count: {
      title: "Count files",
      description: "Counts the files under a root that match a glob.",
      input: v.strictObject({
        root: v.optional(v.pipe(v.string(), v.description("Root id (default: the first one)."))),
        glob: v.optional(v.pipe(v.string(), v.description('Glob pattern (default: "**/*").'))),
      }),
      output: v.object({ root: v.string(), files: v.number() }),
      handler: async ({ root, glob }, ctx) => {
        const id = root ?? ctx.roots[0];
        const files = await ctx.fs.glob(id, glob ?? "**/*");
        return { root: id, files: files.length };
      },
    },
  },
});
`;

async function newCommand(config: Config, appRoot: string, args: string[]): Promise<number> {
  const id = args[0];
  if (!id || !/^[a-z][a-z0-9]{0,29}$/.test(id)) {
    throw usage(`the plugin id must be lowercase letters and digits (at most 30), received ${received(id)}`);
  }
  const project = takeFlag(args, "--project");
  const dir = path.join(project ? path.join(config.projectDir, "plugins") : config.pluginsDir, id);
  if (await platform().fs.stat(dir).then(() => true, () => false)) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot create plugin "${id}"`, `${dir} already exists`, "pick another id or remove it"),
    );
  }
  const srcDir = path.join(dir, "src");
  await platform().fs.mkdir(srcDir);
  let sdk = path.relative(srcDir, path.join(appRoot, "core", "plugins", "authoring", "sdk.ts")).split(path.sep).join(
    "/",
  );
  if (!sdk.startsWith(".")) sdk = "./" + sdk;
  await platform().fs.writeFileAtomic(path.join(srcDir, "main.ts"), SKELETON(id, sdk));
  const rel = path.relative(platform().cwd(), dir) || ".";
  out(`Created ${rel}/src/main.ts. Next: warden plugin build ${rel}`);
  return 0;
}

/** Loads the built bundle in this process (the author's own code, at build time only) to read its declarations. */
async function declarationsOf(bundle: Uint8Array, src: string): Promise<PluginSpec> {
  let module: Record<string, unknown>;
  try {
    let binary = "";
    for (const byte of bundle) binary += String.fromCharCode(byte);
    module = await import(`data:text/javascript;base64,${btoa(binary)}`);
  } catch (error) {
    throw new WardenError(
      "invalid_manifest",
      problem(`Cannot load the bundle of ${src}`, messageOf(error).split("\n")[0]),
    );
  }
  const plugin = module.plugin as PluginSpec | undefined;
  if (!plugin || typeof plugin !== "object" || typeof plugin.tools !== "object") {
    throw new WardenError(
      "invalid_manifest",
      problem(`${src} has no \`plugin\` export`, "export const plugin = definePlugin({ ... })"),
    );
  }
  return plugin;
}

/**
 * Where warden's own dependencies are: its node_modules (a clone, a global install's nested ones) and, when warden is
 * itself installed in a node_modules (a project's, npx's), that one, where npm hoisted them.
 */
function dependencyDirs(appRoot: string): string[] {
  const parent = path.dirname(appRoot);
  const dirs = [path.join(appRoot, "node_modules")];
  if (path.basename(parent) === "node_modules") dirs.push(parent);
  else if (path.basename(path.dirname(parent)) === "node_modules" && path.basename(parent).startsWith("@")) {
    dirs.push(path.dirname(parent));
  }
  return dirs;
}

async function buildCommand(appRoot: string, args: string[]): Promise<number> {
  const dir = pluginDir(args[0]);
  const id = path.basename(dir);
  const src = path.join(dir, "src", "main.ts");
  if (!(await platform().fs.stat(src).then((s) => s.isFile, () => false))) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot build ${id}`, `${src} is missing`, `create one with "warden plugin new ${id}"`),
    );
  }
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [src],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    minify: true,
    legalComments: "none",
    logLevel: "silent",
    // A plugin's project needs no node_modules of its own (npx runs warden from npm's cache): the skeleton's valibot
    // and the SDK's resolve from warden's own dependencies when the project has none.
    nodePaths: dependencyDirs(appRoot),
  }).catch((error: unknown) => {
    throw new WardenError(
      "invalid_manifest",
      problem(`Cannot bundle ${src}`, messageOf(error).split("\n").slice(0, 3).join(" ")),
    );
  });
  const bundle = result.outputFiles[0].contents;
  const spec = await declarationsOf(bundle, src);
  if (spec.id !== id) {
    throw new WardenError(
      "invalid_manifest",
      problem(`Plugin id "${spec.id}" differs from its directory "${id}"`, "make them equal"),
    );
  }
  if (!RISK_CLASSES.includes(spec.risk)) {
    throw new WardenError("invalid_manifest", problem("Invalid risk", received(spec.risk)));
  }
  const tools = Object.entries(spec.tools).sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, tool]) => {
    const convert = (schema: Parameters<typeof toJsonSchema>[0], what: string) => {
      try {
        return toJsonSchema(schema, { target: "draft-2020-12" }) as Record<string, unknown>;
      } catch (error) {
        throw new WardenError(
          "invalid_manifest",
          problem(`Tool "${name}" ${what} does not convert to JSON Schema`, messageOf(error)),
        );
      }
    };
    return {
      name,
      title: tool.title,
      description: tool.description,
      inputSchema: convert(tool.input, "input"),
      ...(tool.output ? { outputSchema: convert(tool.output, "output") } : {}),
    };
  });
  const manifest = {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    id: spec.id,
    version: spec.version,
    description: spec.description,
    author: spec.author,
    risk: spec.risk,
    entry: { path: "plugin.js", sha256: (await sha256Digest(bundle)).slice("sha256:".length) },
    capabilities: { readRoots: [...spec.capabilities.readRoots] },
    ...(spec.limits ? { limits: { ...spec.limits } } : {}),
    tools,
  };
  const text = canonicalJson(manifest);
  const checked = readManifest(new TextEncoder().encode(text), id);
  if (isManifestProblem(checked)) {
    throw new WardenError("invalid_manifest", problem(`The manifest of ${id} would be refused`, checked.reason));
  }
  const previous = await platform().fs.readTextFile(path.join(dir, "manifest.json"), 1024 * 1024).catch(() => null);
  await platform().fs.writeFileAtomic(path.join(dir, "plugin.js"), bundle);
  await platform().fs.writeFileAtomic(path.join(dir, "manifest.json"), text);
  // A signature of another manifest would now be a bad-signature: remove it, so the status says unsigned. A manifest
  // identical to the one before keeps its signature: the entry it pins by sha256 is the bundle just written.
  const unchanged = previous === text;
  if (!unchanged) await platform().fs.remove(path.join(dir, "manifest.json.sig"));
  const rel = path.relative(platform().cwd(), dir) || ".";
  out(
    `Built ${rel}: ${tools.length} tool(s), entry sha256 ${manifest.entry.sha256}, manifest ${await sha256Digest(
      text,
    )}.\n` +
      (unchanged
        ? "The manifest is byte for byte the one before: its signature, if any, still holds."
        : `Next: warden plugin sign ${rel} --key <your ed25519 key>`),
  );
  return 0;
}

async function signCommand(args: string[]): Promise<number> {
  const keyFile = optionValue(args, "--key");
  const dir = pluginDir(args[0]);
  if (!keyFile) {
    throw usage(
      `--key <private ed25519 key> is required, or sign with: ssh-keygen -Y sign -f <key> -n ${PLUGIN_SIGNATURE_NAMESPACE} ${
        path.join(dir, "manifest.json")
      }`,
    );
  }
  const key = await parsePrivateKey(
    await readText(path.resolve(platform().cwd(), keyFile), "the key", "pass --key <an OpenSSH ed25519 private key>"),
  );
  const manifestFile = path.join(dir, "manifest.json");
  const read = await platform().fs.readRegularFile(manifestFile, 1024 * 1024);
  if (read.kind !== "ok") {
    throw new WardenError(
      "config_invalid",
      problem(
        `Cannot sign ${dir}`,
        read.kind === "not_a_file" ? `manifest.json is ${read.what}, not a regular file` : "manifest.json is missing",
        "run warden plugin build first",
      ),
    );
  }
  const signature = await signMessage(key, read.bytes, PLUGIN_SIGNATURE_NAMESPACE);
  await platform().fs.writeFileAtomic(manifestFile + ".sig", signature);
  const rel = path.relative(platform().cwd(), dir) || ".";
  out(
    `Signed ${rel}/manifest.json with ${key.publicKey.fingerprint}.\n` +
      `Operators who trust this key: warden plugin allow-signer <principal> --key <key.pub>; then: warden plugin trust ${rel}`,
  );
  return 0;
}

/**
 * `warden plugin allow-signer` and `warden checks allow-signer`: appends the key to allowed_signers for `namespace`
 * (plugins' by default; a key trusted for plugins is not trusted for check manifests, nor the other way round).
 */
export async function allowSignerCommand(
  config: Config,
  args: string[],
  namespace: string = PLUGIN_SIGNATURE_NAMESPACE,
  help = "warden plugin help",
): Promise<number> {
  const keyFile = optionValue(args, "--key", help);
  // Check manifests are trusted by the user's keys only: a repository must not name who signs its own checks.
  const project = namespace === PLUGIN_SIGNATURE_NAMESPACE && takeFlag(args, "--project");
  const principal = args[0];
  if (!principal || !/^[^\s,"#*?!]+$/.test(principal)) {
    throw usage(
      `the principal must be one word without spaces, commas, quotes or wildcards (e.g. an email), received ${
        received(principal)
      }`,
      help,
    );
  }
  if (!keyFile) throw usage("--key <public key file> is required", help);
  // A word left over (a flag of another command: --project for check manifests) must not be dropped in silence.
  if (args.length > 1) throw usage(`unexpected ${received(args[1])}`, help);
  const key = await parsePublicKey(
    await readText(path.resolve(platform().cwd(), keyFile), "the public key", "pass --key <file.pub>"),
  );
  const file = project ? path.join(config.projectDir, "allowed_signers") : config.allowedSignersFile;
  if (project) await writableProjectFile(config, "allowed_signers");
  // Only a missing file starts empty: one that cannot be read (a FIFO, too large) must not be replaced.
  const existing = await platform().fs.readTextFile(file, MAX_TRUST_FILE_BYTES).catch((error) => {
    if ((error as { code?: string }).code === "ENOENT") return "";
    throw new WardenError("config_invalid", problem(`Cannot read the allowed signers ${file}`, messageOf(error)));
  });
  const line = `${principal} namespaces="${namespace}" ${key.text}\n`;
  await platform().fs.mkdir(path.dirname(file));
  await platform().fs.writeFileAtomic(
    file,
    existing + (existing === "" || existing.endsWith("\n") ? "" : "\n") + line,
  );
  // Read it back through the parser: a line warden itself cannot read must never be left behind.
  await readTrustStore({ allowedSignersFile: file, revokedKeysFile: config.revokedKeysFile });
  // The user just made this change: it is accepted (and nothing else of the project).
  if (project) await acceptProject(config.projectDir, config.acceptedProjectsFile, ["allowed_signers"]);
  out(`Trusted ${key.fingerprint} as ${principal} for ${namespace} in ${file}.`);
  return 0;
}

function describeRecord(record: PluginRecord): string {
  const lines = [
    `plugin      ${record.id}`,
    `status      ${record.status}${record.reason ? `: ${record.reason}` : ""}`,
    `version     ${record.version ?? "-"}`,
    `signer      ${
      record.signer ? `${record.signer.principal ?? "(unknown principal)"} ${record.signer.fingerprint}` : "-"
    }`,
    `manifest    ${record.manifestDigest ?? "-"}`,
    `entry       ${record.entryDigest ?? "-"}`,
    `risk        ${record.risk ?? "-"}`,
    `reads       ${record.capabilities ? record.capabilities.readRoots.join(", ") || "(no roots)" : "-"}`,
    `tools       ${record.tools.join(", ") || "-"}`,
    `pinned      ${record.pinned ? "yes" : "no"}`,
    `scope       ${record.scope}`,
  ];
  if (record.fix) lines.push(`next        ${record.fix}`);
  return lines.join("\n");
}

/**
 * The trust a plugin in `dir` is checked against, and the lock that pins it: a plugin under the project's
 * `.warden/plugins/` is the project's (the user's keys and the project's allowed_signers as accepted; the project's
 * lock), any other the user's.
 */
async function inspectWithTrust(config: Config, dir: string, usePins: boolean) {
  const trust = await readTrustStore(config);
  const projectPlugins = path.join(config.projectDir, "plugins");
  if (path.dirname(dir) !== projectPlugins) {
    const lock = await readLock(config.lockFile);
    return {
      ...(await inspectPlugin(dir, trust, usePins ? lock.plugins : null, new Date())),
      lock,
      lockFile: config.lockFile,
      project: false,
    };
  }
  const project = await readProjectTrust(config.projectDir);
  const acceptance = await acceptanceOf(project, config.acceptedProjectsFile);
  const signers = project.texts["allowed_signers"];
  // The project's keys count only as the user accepted them.
  const projectSigners =
    signers !== null && acceptance.recorded?.["allowed_signers"] === project.digests["allowed_signers"]
      ? await parseAllowedSigners(signers, path.join(config.projectDir, "allowed_signers"))
      : [];
  const lockFile = path.join(config.projectDir, "plugins.lock.json");
  const lock = await readLock(lockFile);
  const inspected = await inspectPlugin(
    dir,
    { signers: [...trust.signers, ...projectSigners], revoked: trust.revoked },
    usePins ? lock.plugins : null,
    new Date(),
    undefined,
    "project",
  );
  // Verified against files the user has not accepted as they are: it would not load, and verify says why.
  const record = usePins && inspected.record.status === "verified" && acceptance.state !== "accepted"
    ? {
      ...inspected,
      record: {
        ...inspected.record,
        status: "project-not-accepted" as const,
        reason: notAcceptedReason(acceptance),
        fix: fixFor("project-not-accepted", inspected.record.id),
      },
    }
    : inspected;
  return { ...record, lock, lockFile, project: true };
}

/** Takes `flag` out of `args`; whether it was there. */
function takeFlag(args: string[], flag: string): boolean {
  const i = args.indexOf(flag);
  if (i !== -1) args.splice(i, 1);
  return i !== -1;
}

/**
 * Refuses to write a project trust file that changed since the user accepted it: the write would accept what they
 * have not reviewed (another pin, another key) along with their own change.
 */
async function writableProjectFile(config: Config, name: "allowed_signers" | "plugins.lock.json"): Promise<void> {
  const project = await readProjectTrust(config.projectDir);
  const acceptance = await acceptanceOf(project, config.acceptedProjectsFile);
  const digest = project.digests[name];
  if (digest !== null && acceptance.recorded?.[name] !== digest) {
    throw new WardenError(
      "invalid_trust_store",
      problem(
        `Cannot change the project's .warden/${name}`,
        acceptance.state === "not-accepted" ? "you never accepted it" : "it changed since you accepted it",
        'review it ("git log -p -- .warden/", "warden project status"), run "warden project accept", then run this again',
      ),
    );
  }
}

/** The plugin directory an operator named: it must be one, or there is nothing to review. */
async function existingPluginDir(config: Config, arg: string | undefined, command: string): Promise<string> {
  const dir = pluginDir(arg);
  if (!(await platform().fs.stat(dir).then((s) => s.isDirectory, () => false))) {
    const listed = path.join(path.relative(platform().cwd(), config.pluginsDir), path.sep);
    throw new WardenError(
      "config_invalid",
      problem(
        `Cannot ${command} ${arg}`,
        "no such plugin directory",
        `"warden plugin list" lists the plugin directories of ${listed}; "warden plugin new <id>" starts one`,
      ),
    );
  }
  return dir;
}

async function verifyCommand(config: Config, args: string[]): Promise<number> {
  const dir = await existingPluginDir(config, args[0], "verify");
  const { record } = await inspectWithTrust(config, dir, true);
  // Named as the operator typed it, and without telling them to run the command they are running.
  out(describeRecord({ ...record, fix: fixFor(record.status, record.id, { dir: args[0], reviewing: true }) }));
  return ["verified", "not-pinned", "pin-mismatch"].includes(record.status) ? 0 : 1;
}

async function trustCommand(config: Config, args: string[]): Promise<number> {
  const dir = await existingPluginDir(config, args[0], "trust");
  const { record, lock, lockFile, project } = await inspectWithTrust(config, dir, false);
  out(describeRecord({ ...record, pinned: Object.hasOwn(lock.plugins, record.id), fix: null }));
  if (record.status !== "verified") {
    const fix = fixFor(record.status, record.id, { dir: args[0], reviewing: true });
    platform().writeStderr(`Not pinned: ${record.id} is ${record.status}. ${fix ?? ""}\n`);
    return 1;
  }
  lock.plugins[record.id] = {
    manifestDigest: record.manifestDigest!,
    version: record.version!,
    principal: record.signer!.principal!,
    fingerprint: record.signer!.fingerprint,
    pinnedAt: new Date().toISOString(),
  };
  if (project) await writableProjectFile(config, "plugins.lock.json");
  await writeLock(lockFile, lock);
  // The user just pinned it: the lock as written is accepted (and nothing else of the project).
  if (project) await acceptProject(config.projectDir, config.acceptedProjectsFile, ["plugins.lock.json"]);
  out(
    `Pinned ${record.id} ${record.version} at ${record.manifestDigest} in ${lockFile}; it loads at the next start.`,
  );
  return 0;
}

async function listCommand(config: Config, args: string[], reservedNames: ReadonlySet<string>): Promise<number> {
  const { records } = await discoverPlugins(pluginSources(config, reservedNames));
  if (args.includes("--json")) {
    out(JSON.stringify(records, null, 2));
    return 0;
  }
  if (records.length === 0) {
    out(`No plugins in ${config.pluginsDir} or ${path.join(config.projectDir, "plugins")}.`);
    return 0;
  }
  const rows = [["ID", "SCOPE", "VERSION", "STATUS", "PINNED", "SIGNER", "TOOLS"]];
  for (const r of records) {
    rows.push([
      r.id,
      r.scope,
      r.version ?? "-",
      r.status,
      r.pinned ? "yes" : "no",
      r.signer?.principal ?? r.signer?.fingerprint ?? "-",
      r.tools.join(",") || "-",
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  out(rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()).join("\n"));
  for (const r of records.filter((r) => r.status !== "verified")) {
    out(`${r.id}: ${r.reason}${r.fix ? `; ${r.fix}` : ""}`);
  }
  return 0;
}

/** `warden plugin <subcommand> ...`. */
export async function pluginCommand(
  config: Config,
  appRoot: string,
  argv: readonly string[],
  builtinNames: () => Promise<ReadonlySet<string>>,
): Promise<number> {
  const [sub, ...rest] = argv;
  const args = [...rest];
  switch (sub) {
    case "new":
      return await newCommand(config, appRoot, args);
    case "build":
      return await buildCommand(appRoot, args);
    case "sign":
      return await signCommand(args);
    case "allow-signer":
      return await allowSignerCommand(config, args);
    case "verify":
      return await verifyCommand(config, args);
    case "trust":
      return await trustCommand(config, args);
    case "list":
      return await listCommand(config, args, await builtinNames());
    case undefined:
    case "help":
    case "--help":
      out(USAGE);
      return 0;
    default:
      throw usage(`unknown plugin command ${received(sub)}`);
  }
}
