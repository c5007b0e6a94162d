// Command line and environment, parsed once into a frozen Config. Every
// malformed value is refused by name, with the form it should take.
import path from "node:path";
import { problem, received, WardenError } from "./errors.ts";
import { LOG_LEVELS, type LogLevel } from "./log.ts";
import type { RootSpec } from "./roots.ts";
import { platform } from "./platform/mod.ts";

/** One documented setting: flag, environment variable, default. README's table is checked against this list. */
export interface SettingDoc {
  readonly flag: string | null;
  readonly env: string | null;
  readonly default: string;
  readonly description: string;
}

export const SETTINGS: readonly SettingDoc[] = Object.freeze<SettingDoc[]>([
  {
    flag: "--root <id>=<dir>",
    env: "WARDEN_ROOTS",
    default: "default=<current directory>",
    description:
      "A directory tools may read, under a logical id. Repeat the flag for several roots; in the variable, separate entries with `:` (`;` on Windows). The first root is the default.",
  },
  {
    flag: "--call-timeout <duration>",
    env: "WARDEN_CALL_TIMEOUT",
    default: "60s",
    description: "Longest a tool call may run before it is aborted with an error: `500ms`, `30s`, `2m` (1 ms to 1 h).",
  },
  {
    flag: "--log-level <level>",
    env: "WARDEN_LOG_LEVEL",
    default: "info",
    description: "Least severe stderr log line written: `debug`, `info`, `warn` or `error`.",
  },
  {
    flag: null,
    env: "WARDEN_TOOLS_DIR",
    default: "the built-in tools/",
    description:
      "Load the built-in tools from this directory instead (`.js` and `.mjs` files, and `.ts` under deno); for developing tools.",
  },
]);

/** Settings shared by every command. */
export interface Config {
  readonly roots: readonly RootSpec[];
  readonly callTimeoutMs: number;
  readonly logLevel: LogLevel;
}

const ROOT_ID = /^[a-z][a-z0-9_-]{0,31}$/;
const MAX_TIMEOUT_MS = 60 * 60 * 1000;

/** Parses `500ms`, `30s`, `2m`, or a bare number of milliseconds. */
export function parseDuration(name: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  const ms = match ? Number(match[1]) * (match[2] === "m" ? 60_000 : match[2] === "s" ? 1000 : 1) : NaN;
  if (!Number.isFinite(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${name}`,
        `expected a duration from 1ms to 60m such as 500ms, 30s or 2m, received ${received(text)}`,
      ),
    );
  }
  return Math.round(ms);
}

function parseRoot(source: string, text: string): RootSpec {
  const eq = text.indexOf("=");
  const id = eq > 0 ? text.slice(0, eq) : "";
  const dir = eq > 0 ? text.slice(eq + 1) : "";
  if (!ROOT_ID.test(id) || dir === "") {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected <id>=<dir> with an id of lowercase letters, digits, - and _, received ${received(text)}`,
        "for example --root app=./src",
      ),
    );
  }
  return { id, path: path.resolve(platform().cwd(), dir) };
}

/** Options left after the shared settings are taken out: the command's own. */
export interface ParsedArgs {
  readonly config: Config;
  readonly rest: readonly string[];
}

/**
 * Takes the shared settings out of `argv` (flags win over `env`) and returns
 * them with the remaining arguments in order.
 */
export function parseConfig(
  argv: readonly string[],
  env: (name: string) => string | undefined = (name) => platform().env(name),
): ParsedArgs {
  const rest: string[] = [];
  const flagRoots: RootSpec[] = [];
  let timeoutText: [string, string] | undefined;
  let levelText: [string, string] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (name !== "--root" && name !== "--call-timeout" && name !== "--log-level") {
      rest.push(arg);
      continue;
    }
    let value: string | undefined;
    if (eq > 0 && arg.startsWith("--")) value = arg.slice(eq + 1);
    else value = argv[++i];
    if (value === undefined) {
      throw new WardenError(
        "config_invalid",
        problem(`Missing value for ${name}`, "the flag is the last argument", `pass ${name} <value>`),
      );
    }
    if (name === "--root") flagRoots.push(parseRoot("--root", value));
    else if (name === "--call-timeout") timeoutText = [name, value];
    else levelText = [name, value];
  }

  let roots = flagRoots;
  const rootsVar = env("WARDEN_ROOTS");
  if (roots.length === 0 && rootsVar) {
    roots = rootsVar.split(platform().pathDelimiter).filter((entry) => entry !== "").map((entry) =>
      parseRoot("WARDEN_ROOTS entry", entry)
    );
  }
  if (roots.length === 0) roots = [{ id: "default", path: platform().cwd() }];
  const seen = new Set<string>();
  for (const root of roots) {
    if (seen.has(root.id)) {
      throw new WardenError(
        "config_invalid",
        problem("Duplicate root id", received(root.id), "give each root its own id"),
      );
    }
    seen.add(root.id);
  }

  const timeoutVar = env("WARDEN_CALL_TIMEOUT");
  timeoutText ??= timeoutVar ? ["WARDEN_CALL_TIMEOUT", timeoutVar] : undefined;
  const callTimeoutMs = timeoutText ? parseDuration(timeoutText[0], timeoutText[1]) : 60_000;

  const levelVar = env("WARDEN_LOG_LEVEL");
  levelText ??= levelVar ? ["WARDEN_LOG_LEVEL", levelVar] : undefined;
  const logLevel = (levelText?.[1] ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${levelText?.[0]}`,
        `expected one of ${LOG_LEVELS.join(", ")}, received ${received(levelText?.[1])}`,
      ),
    );
  }

  return {
    config: Object.freeze({ roots: Object.freeze(roots.map((r) => Object.freeze(r))), callTimeoutMs, logLevel }),
    rest,
  };
}
