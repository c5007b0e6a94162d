// `warden init`: registers warden with a project's agent, in the file that agent reads at the project's root, with
// the package pinned to this version, so that everyone who opens the project starts the same warden.
import path from "node:path";
import { messageOf, problem, received, WardenError } from "./errors.ts";
import { platform } from "./platform/mod.ts";

/** The agents `warden init` registers warden with. */
export const CLIENTS = Object.freeze(["claude", "cursor", "vscode", "codex"] as const);
export type Client = (typeof CLIENTS)[number];

/** A JSON object, as a client's configuration file holds it. */
type JsonObject = Record<string, unknown>;

/** Where each client reads a project's servers, and the key of its table of servers (Codex: its own TOML, printed). */
const FILES: Readonly<Record<Exclude<Client, "codex">, { file: string; key: string; stdioType: boolean }>> = Object
  .freeze({
    claude: { file: ".mcp.json", key: "mcpServers", stdioType: false },
    cursor: { file: ".cursor/mcp.json", key: "mcpServers", stdioType: false },
    // VS Code's servers carry their transport.
    vscode: { file: ".vscode/mcp.json", key: "servers", stdioType: true },
  });

const USAGE =
  "use: warden init [--client claude|cursor|vscode|codex] [--runtime node|deno] [--project <dir>] [--print] [--force]";

/** A server's command line with absolute paths, as `warden command --runtime <runtime>` prints it. */
export interface RuntimeCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** The command an agent starts: the package, pinned, through npx. */
export function npxCommand(name: string, version: string): { command: string; args: string[] } {
  return { command: "npx", args: ["-y", `${name}@${version}`] };
}

/** warden's entry in `client`'s file: the pinned package through npx, or `runtime`'s command with absolute paths. */
export function serverEntry(
  client: Exclude<Client, "codex">,
  name: string,
  version: string,
  runtime?: RuntimeCommand,
): JsonObject {
  const { command, args } = runtime ?? npxCommand(name, version);
  const env = runtime && Object.keys(runtime.env).length > 0 ? { env: { ...runtime.env } } : {};
  return FILES[client].stdioType
    ? { type: "stdio", command, args: [...args], ...env }
    : { command, args: [...args], ...env };
}

/** The lines of warden's entry before and after, as `JSON.stringify(value, null, 2)` writes them, `-` and `+`. */
export function entryDiff(before: unknown, after: unknown): string {
  const lines = (value: unknown) => value === undefined ? [] : JSON.stringify(value, null, 2).split("\n");
  return [...lines(before).map((line) => `- ${line}`), ...lines(after).map((line) => `+ ${line}`)].join("\n");
}

/** Codex's two forms: its `codex mcp add` line and the TOML table for `~/.codex/config.toml`. */
export function codexLines(name: string, version: string, runtime?: RuntimeCommand): string {
  const { command, args } = runtime ?? npxCommand(name, version);
  const env = runtime ? Object.entries(runtime.env) : [];
  return [
    `codex mcp add warden ${env.map(([k, v]) => `--env ${k}=${v} `).join("")}-- ${command} ${args.join(" ")}`,
    "",
    "# or in ~/.codex/config.toml:",
    "[mcp_servers.warden]",
    `command = ${JSON.stringify(command)}`,
    `args = [${args.map((arg) => JSON.stringify(arg)).join(", ")}]`,
    ...(env.length > 0 ? [`env = { ${env.map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join(", ")} }`] : []),
    "",
  ].join("\n");
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether two JSON values are the same (key order aside). */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && sameJson(a[key], b[key]));
  }
  return a === b;
}

/**
 * `existing` (a client's file as read, or null when there is none) with warden's entry in it: the file's other keys
 * and servers kept as they are. Throws, naming `file`, when the file is not a JSON object, its table of servers is
 * not one, or it holds a different warden entry and `force` is not given. `changed` is false when the entry is
 * already there as it would be written.
 */
export function merged(
  existing: string | null,
  file: string,
  key: string,
  entry: JsonObject,
  force: boolean,
): { text: string; changed: boolean; previous: unknown } {
  let config: unknown = {};
  if (existing !== null && existing.trim() !== "") {
    try {
      config = JSON.parse(existing);
    } catch (error) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Cannot read ${file}`,
          `it is not JSON (${messageOf(error)})`,
          `fix it or move it away (comments are not JSON), or add warden by hand with "warden init --print"`,
        ),
      );
    }
  }
  if (!isObject(config)) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot read ${file}`, `expected a JSON object, received ${received(config)}`, "fix it or move it away"),
    );
  }
  const servers = config[key] ?? {};
  if (!isObject(servers)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Cannot read ${file}`,
        `"${key}" is not an object of servers, received ${received(servers)}`,
        `make "${key}" an object ({ "${key}": {} }) or move the file away`,
      ),
    );
  }
  const current = servers.warden;
  if (current !== undefined && sameJson(current, entry)) return { text: existing!, changed: false, previous: current };
  if (current !== undefined && !force) {
    throw new WardenError(
      "config_invalid",
      problem(
        `${file} already registers warden`,
        `as ${JSON.stringify(current)}, not as ${JSON.stringify(entry)}`,
        "run warden init again with --force to replace that entry (the other servers stay)",
      ),
    );
  }
  const next = { ...config, [key]: { ...servers, warden: entry } };
  return { text: JSON.stringify(next, null, 2) + "\n", changed: true, previous: current };
}

/**
 * `warden init [--client claude|cursor|vscode|codex] [--runtime node|deno] [--project <dir>] [--print] [--force]`:
 * writes warden's entry into the client's file in the project (the current directory unless `--project`; Claude Code's
 * `.mcp.json` unless told), or with `--print` prints it; for Codex, whose configuration is the user's, prints its
 * command and TOML. The entry starts the pinned package through npx, or with `--runtime` the command
 * `warden command --runtime <runtime>` prints, with absolute paths (`commandFor` makes it). What changed in the file
 * is shown as a diff of warden's entry.
 */
export async function initCommand(
  pkg: { readonly name: string; readonly version: string },
  cwd: string,
  args: readonly string[],
  commandFor?: (runtime: "node" | "deno") => Promise<RuntimeCommand>,
): Promise<number> {
  let client: Client = "claude";
  let print = false;
  let force = false;
  let runtime: "node" | "deno" | undefined;
  let project = cwd;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const flag = arg.startsWith("--") ? arg.split("=")[0] : arg;
    const value = () => (arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : args[++i]);
    if (arg === "--print") print = true;
    else if (arg === "--force") force = true;
    else if (flag === "--client") {
      const given = value();
      if (!(CLIENTS as readonly string[]).includes(given ?? "")) {
        throw new WardenError(
          "config_invalid",
          problem("Invalid --client", `expected ${CLIENTS.join(", ")}, received ${received(given)}`),
        );
      }
      client = given as Client;
    } else if (flag === "--runtime") {
      const given = value();
      if (given !== "node" && given !== "deno") {
        throw new WardenError(
          "config_invalid",
          problem("Invalid --runtime", `expected node or deno, received ${received(given)}`),
        );
      }
      runtime = given;
    } else if (flag === "--project") {
      const given = value();
      const dir = given ? path.resolve(cwd, given) : "";
      if (!given || !(await platform().fs.stat(dir).catch(() => null))?.isDirectory) {
        throw new WardenError(
          "config_invalid",
          problem("Invalid --project", `expected the project's directory, received ${received(given)}`, USAGE),
        );
      }
      project = dir;
    } else {
      throw new WardenError(
        "config_invalid",
        problem("Invalid command line", `unexpected ${received(arg)} for "warden init"`, USAGE),
      );
    }
  }
  // core/main.ts passes the command maker whenever --runtime is given.
  const command = runtime === undefined || commandFor === undefined ? undefined : await commandFor(runtime);
  if (client === "codex") {
    platform().writeStdout(codexLines(pkg.name, pkg.version, command));
    return 0;
  }
  const { file, key } = FILES[client];
  const entry = serverEntry(client, pkg.name, pkg.version, command);
  if (print) {
    platform().writeStdout(JSON.stringify({ [key]: { warden: entry } }, null, 2) + "\n");
    return 0;
  }
  const target = path.join(project, file);
  const found = platform().fs.lstatSync(target);
  if (found && !found.isFile) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot write ${file}`, "it is not a regular file", "move it away, or add warden by hand (--print)"),
    );
  }
  const existing = found ? await platform().fs.readTextFile(target) : null;
  const { text, changed, previous } = merged(existing, file, key, entry, force);
  const startsAs = `${entry.command} ${(entry.args as string[]).join(" ")}`;
  if (!changed) {
    platform().writeStdout(`${file} already registers warden as ${startsAs}\n`);
    return 0;
  }
  await platform().fs.mkdir(path.dirname(target));
  await platform().fs.writeFileAtomic(target, text);
  platform().writeStdout(
    `${existing === null ? "wrote" : "updated"} ${file}: warden starts as ${startsAs}\n${entryDiff(previous, entry)}\n`,
  );
  return 0;
}
