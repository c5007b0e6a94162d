// Command line and environment, parsed once into a frozen Config. Every
// malformed value is refused by name, with the form it should take. The
// SETTINGS table is the one list: parsing, `warden help` and README's
// settings table (checked by a test) all come from it.
import path from "node:path";
import { problem, received, WardenError } from "./errors.ts";
import { LOG_LEVELS, type LogLevel } from "./log.ts";
import { platform } from "./platform/mod.ts";
import { userDirs } from "./platform/user_dirs.ts";
import type { RootSpec } from "./doors/roots.ts";
import { RISK_CLASSES, type RiskClass } from "./tool.ts";
import { DEFAULT_JOB_LIMITS, type JobLimits } from "./jobs/queue.ts";

/** One documented setting: flag, environment variable, default. */
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
    flag: "--strict-project-selection",
    env: "WARDEN_STRICT_PROJECT_SELECTION",
    default: "off",
    description:
      "When more than one root (project) is configured, a tool call that names no `project_id` (and, over HTTP, sends no `X-MCP-Project` header) fails with `project_ambiguous` instead of reading the first root (`1` in the variable).",
  },
  {
    flag: "--client-roots",
    env: "WARDEN_CLIENT_ROOTS",
    default: "off",
    description:
      "Over stdio, take the projects from the MCP client's roots (`roots/list`, again when they change) instead of `--root`, when the client offers them: each a directory tools may read, named by the root's name (else its directory's), under the same rules as a `--root` (`1` in the variable).",
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
    flag: "--plugins-dir <dir>",
    env: "WARDEN_PLUGINS_DIR",
    default: "<user config>/plugins",
    description:
      "Where the user's own signed plugins live, one directory each; a project's are in its `.warden/plugins/` (see --project-dir).",
  },
  {
    flag: "--allowed-signers <file>",
    env: "WARDEN_ALLOWED_SIGNERS",
    default: "<user config>/allowed_signers",
    description:
      "The user's OpenSSH allowed_signers file: the keys trusted to sign plugins (of both scopes) and repository check manifests, each for its namespace (a missing file trusts nobody).",
  },
  {
    flag: "--revoked-keys <file>",
    env: "WARDEN_REVOKED_KEYS",
    default: "<user config>/revoked_keys",
    description: "Public keys, one per line, whose signatures are refused whatever allowed_signers says.",
  },
  {
    flag: "--plugins-lock <file>",
    env: "WARDEN_PLUGINS_LOCK",
    default: "<user config>/plugins.lock.json",
    description:
      "The user's pins: which of the user's plugin manifests, and which check manifest for each root, may run (by digest).",
  },
  {
    flag: "--project-dir <dir>",
    env: "WARDEN_PROJECT_DIR",
    default: "<first root>/.warden",
    description:
      "The project's shared warden directory: its `plugins/`, their `plugins.lock.json` and its `allowed_signers`, honoured once accepted (`warden project accept`).",
  },
  {
    flag: "--strict-plugins",
    env: "WARDEN_STRICT_PLUGINS",
    default: "off",
    description: "Refuse to start when any plugin is refused, instead of starting without it (`1` in the variable).",
  },
  {
    flag: "--max-risk <class>",
    env: "WARDEN_MAX_RISK",
    default: "external-side-effect",
    description:
      "The highest risk class that may run: `read`, `gate` or `external-side-effect`. Tools above it stay listed and are refused when called.",
  },
  {
    flag: "--disable-tool <name>",
    env: "WARDEN_DISABLED_TOOLS",
    default: "none",
    description:
      "A tool that is listed but refused when called. Repeat the flag; in the variable, separate names with `,`.",
  },
  {
    flag: "--require-principal <name>",
    env: "WARDEN_PRINCIPAL_TOOLS",
    default: "none",
    description:
      "A tool that runs only when the server has a principal. Repeat the flag; in the variable, separate names with `,`.",
  },
  {
    flag: "--principal <who>",
    env: "WARDEN_PRINCIPAL",
    default: "none",
    description: "Who operates this server (e.g. an email); recorded with every call in the ledger.",
  },
  {
    flag: "--ledger <dir>",
    env: "WARDEN_LEDGER",
    default: "<user state>/ledger",
    description: "Where each server process appends its hash-chained call ledger (one `.jsonl` file per process).",
  },
  {
    flag: "--jobs-dir <dir>",
    env: "WARDEN_JOBS_DIR",
    default: "<user state>/jobs",
    description:
      "Where each server process keeps its jobs (one `.json` file per process), so a restarted server answers for them.",
  },
  {
    flag: "--job-concurrency <n>",
    env: "WARDEN_JOB_CONCURRENCY",
    default: "1",
    description: "Jobs that run at once (1 to 16).",
  },
  {
    flag: "--job-queue <n>",
    env: "WARDEN_JOB_QUEUE",
    default: "8",
    description: "Jobs that may wait to run (0 to 1000); a start beyond it is refused, never dropped.",
  },
  {
    flag: "--job-retained <n>",
    env: "WARDEN_JOB_RETAINED",
    default: "50",
    description: "Finished jobs kept for their results (0 to 10000), the oldest removed first.",
  },
  {
    flag: "--job-retention <duration>",
    env: "WARDEN_JOB_RETENTION",
    default: "1h",
    description: "How long a finished job is kept: `30m`, `1h`, `24h` (1 s to 7 days).",
  },
  {
    flag: "--job-timeout <duration>",
    env: "WARDEN_JOB_TIMEOUT",
    default: "10m",
    description: "Longest a job may run before it is stopped and fails (1 s to 1 h).",
  },
  {
    flag: "--allow-unisolated <check>",
    env: "WARDEN_ALLOW_UNISOLATED",
    default: "none",
    description:
      "A check that runs the repository's own code (`typescript/tsc`, `lint/eslint`, `repo/<id>`) which run_checks may run where no isolation is in force, instead of skipping it with gate ERROR; its result says it ran unisolated. Repeat the flag or separate names with `,`.",
  },
  {
    flag: "--require-approval <group>",
    env: "WARDEN_REQUIRE_APPROVAL",
    default: "none",
    description:
      "A run_checks group (`typescript`, `lint`, `hygiene`, `repo`, `default`) that runs only as an approved plan (checks_request, checks_approve by an approver, checks_submit), never on an agent's say-so; `default` then needs approval too. `unisolated`: any run in which a check --allow-unisolated names would run the repository's code without isolation (so with the host's network). Repeat the flag or separate groups with `,`.",
  },
  {
    flag: "--approvers <principal>",
    env: "WARDEN_APPROVERS",
    default: "none",
    description:
      "An HTTP principal (a token's, or an access token's `sub`) who may approve or reject a plan with checks_approve, never their own request. Repeat the flag or separate principals with `,`.",
  },
  {
    flag: "--approvers-signers <file>",
    env: "WARDEN_APPROVERS_SIGNERS",
    default: "<user config>/approvers_allowed_signers",
    description:
      "An OpenSSH allowed_signers file of the keys whose signature over a plan_digest (namespace `warden-approval-v1`, made with `warden approve`) approves it, on any transport; keys in --revoked-keys are refused (a missing file trusts nobody).",
  },
  {
    flag: "--http",
    env: "WARDEN_HTTP",
    default: "off (stdio)",
    description:
      'Serve MCP over Streamable HTTP at `/mcp` instead of stdin/stdout (`1` in the variable): stateless, for several clients and people (README, "Shared server").',
  },
  {
    flag: "--host <address>",
    env: "WARDEN_HTTP_HOST",
    default: "127.0.0.1",
    description:
      "The address the HTTP server binds. Any address but loopback needs a tokens file or an `--authorization-server`: warden refuses to start without one.",
  },
  {
    flag: "--port <n>",
    env: "WARDEN_HTTP_PORT",
    default: "8790",
    description: "The HTTP server's port (0 to 65535; 0 picks a free one, which the `listening` log line names).",
  },
  {
    flag: "--tokens <file>",
    env: "WARDEN_TOKENS",
    default: "<user config>/tokens",
    description:
      "Bearer tokens for HTTP: one `sha256:<hex> <principal>` line each, the hash of a token and who uses it (`warden token add <principal>` makes one). Present, every request needs a token in it.",
  },
  {
    flag: "--allowed-host <host>",
    env: "WARDEN_ALLOWED_HOSTS",
    default: "the bound address and, on loopback, localhost",
    description:
      "A `Host` header value the HTTP server answers (with or without its port); any other gets 403, against DNS rebinding. Repeat the flag or separate names with `,`.",
  },
  {
    flag: "--allowed-origin <origin>",
    env: "WARDEN_ALLOWED_ORIGINS",
    default: "on loopback, loopback pages",
    description:
      "A browser `Origin` (`https://app.example`) the HTTP server answers; a request with any other `Origin` gets 403 (one without `Origin`, from a program, is not a browser's; on loopback, a page of this machine such as `http://localhost:6274` is allowed). Repeat the flag or separate origins with `,`.",
  },
  {
    flag: "--max-body <size>",
    env: "WARDEN_HTTP_MAX_BODY",
    default: "4MiB",
    description: "Largest HTTP request body read (`512KiB`, `4MiB`; 1 KiB to 64 MiB); a larger one gets 413.",
  },
  {
    flag: "--max-calls <n>",
    env: "WARDEN_HTTP_MAX_CALLS",
    default: "16",
    description:
      "HTTP requests one principal may have in flight at once (1 to 1024); one more gets 429 with `Retry-After`.",
  },
  {
    flag: "--request-timeout <duration>",
    env: "WARDEN_HTTP_REQUEST_TIMEOUT",
    default: "the call timeout and 10s",
    description:
      "Longest an HTTP request may take before its calls are cancelled and it is answered with an error (1 s to 1 h).",
  },
  {
    flag: "--authorization-server <issuer>",
    env: "WARDEN_AUTHORIZATION_SERVER",
    default: "none",
    description:
      "An OAuth authorization server (its issuer URL) whose access tokens the HTTP server accepts beside its own: JWTs signed with the keys its metadata names, for `--resource`, the principal their `sub`. warden then serves RFC 9728 metadata naming it at `/.well-known/oauth-protected-resource`.",
  },
  {
    flag: "--resource <url>",
    env: "WARDEN_RESOURCE",
    default: "none",
    description:
      "The URL clients reach this server's MCP endpoint at (`https://warden.example.com/mcp`), needed with `--authorization-server`: the resource its metadata names, and the audience an access token must be for.",
  },
  {
    flag: "--required-scope <scope>",
    env: "WARDEN_REQUIRED_SCOPES",
    default: "none",
    description:
      "A scope every access token of the authorization server must carry (in `scope` or `scp`); one without gets 403 `insufficient_scope`. Repeat the flag or separate scopes with `,`.",
  },
  {
    flag: "--policy-url <url>",
    env: "WARDEN_POLICY_URL",
    default: "none",
    description:
      'An Open Policy Agent decision to ask before each tool call (`http://127.0.0.1:8181/v1/data/warden/authz`): `POST` with `{"input": …}` (tool, risk class, plugin, principal, project, the arguments\' sha256), answered `{"result": true}` or `{"result": {"allow": …, "reasons": […]}}`. Any failure denies.',
  },
  {
    flag: "--policy-timeout <duration>",
    env: "WARDEN_POLICY_TIMEOUT",
    default: "500ms",
    description: "Longest the policy engine may take to decide before the call is denied (10 ms to 10 s).",
  },
  {
    flag: null,
    env: "WARDEN_OTEL_ENABLED",
    default: "0 (off)",
    description:
      "`1`: send a span per tool call and call metrics over OTLP/HTTP to the collector the standard `OTEL_EXPORTER_OTLP_ENDPOINT` names (with `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_METRIC_EXPORT_INTERVAL`…). Off, no OpenTelemetry code loads.",
  },
  {
    flag: null,
    env: "WARDEN_TOOLS_DIR",
    default: "the built-in tools/",
    description:
      "Load the built-in tools from this directory instead (`.js` and `.mjs` files, and `.ts` under deno); for developing tools.",
  },
]);

/** The settings that are paths, by Config key, with their flag. */
export const PATH_SETTINGS = Object.freeze(
  {
    pluginsDir: "--plugins-dir",
    allowedSignersFile: "--allowed-signers",
    revokedKeysFile: "--revoked-keys",
    lockFile: "--plugins-lock",
    projectDir: "--project-dir",
    ledgerDir: "--ledger",
    jobsDir: "--jobs-dir",
    tokensFile: "--tokens",
    approversSignersFile: "--approvers-signers",
  } as const,
);
export type PathSetting = keyof typeof PATH_SETTINGS;

/**
 * Where a path setting came from: its flag, its variable, or the default it took (`project`: under the first root;
 * `user config`, `user state`: the user's directories of core/platform/user_dirs.ts).
 */
export type SettingSource = string;

/**
 * Settings shared by every command. Paths are absolute. A path whose default is the user's config or state directory
 * throws, when read, the error that says why that directory is unknown (no HOME) and which flag avoids it: only a
 * command that uses it fails.
 */
export interface Config {
  readonly roots: readonly RootSpec[];
  readonly callTimeoutMs: number;
  readonly logLevel: LogLevel;
  readonly pluginsDir: string;
  /** The flag or variable that named pluginsDir; null for the default (`<user config>/plugins`). */
  readonly pluginsDirFrom: string | null;
  /** The project's `.warden` directory (by default the first root's). */
  readonly projectDir: string;
  /** Where warden records the projects the user accepted (`<user state>/accepted_projects.json`). */
  readonly acceptedProjectsFile: string;
  /** Where each path setting came from. */
  readonly sources: Readonly<Record<PathSetting, SettingSource>>;
  readonly allowedSignersFile: string;
  readonly revokedKeysFile: string;
  readonly lockFile: string;
  readonly strictPlugins: boolean;
  /** Whether a call that names no project fails when several are configured (`--strict-project-selection`). */
  readonly strictProjectSelection: boolean;
  /** Whether the projects are the stdio client's roots, when it offers them (`--client-roots`). */
  readonly clientRoots: boolean;
  readonly maxRisk: RiskClass;
  readonly disabledTools: readonly string[];
  readonly principalTools: readonly string[];
  readonly principal: string | null;
  readonly ledgerDir: string;
  readonly jobsDir: string;
  readonly jobLimits: JobLimits;
  readonly jobTimeoutMs: number;
  /** Checks run_checks may run without isolation, by name (`--allow-unisolated`). */
  readonly allowUnisolated: readonly string[];
  /** The run_checks groups that run only as approved plans (`--require-approval`). */
  readonly requireApproval: readonly string[];
  /** The HTTP principals who may approve plans (`--approvers`). */
  readonly approvers: readonly string[];
  /** The approvers' allowed_signers file (`--approvers-signers`). */
  readonly approversSignersFile: string;
  /** The bearer tokens file (`--tokens`): token hashes and their principals. */
  readonly tokensFile: string;
  readonly http: HttpSettings;
  /** The policy engine asked before each call (`--policy-url`); null: warden's own policy only. */
  readonly policyEngine: PolicyEngineSettings | null;
  /** Where telemetry goes (`WARDEN_OTEL_ENABLED=1`); null: off. */
  readonly telemetry: TelemetrySettings | null;
}

/** An Open Policy Agent-compatible decision endpoint. */
export interface PolicyEngineSettings {
  /** The decision's URL, to POST `{"input": …}` to. */
  readonly url: string;
  readonly timeoutMs: number;
}

/** OpenTelemetry's export, from the standard OTEL_* variables. */
export interface TelemetrySettings {
  /** Where spans and metrics are sent (OTLP/HTTP, JSON). */
  readonly tracesEndpoint: string;
  readonly metricsEndpoint: string;
  readonly exportIntervalMs: number;
  readonly exportTimeoutMs: number;
}

/** `host` and `port` as a URL or deno's --allow-net writes them (an IPv6 address in brackets); no port for null. */
export function hostAndPort(host: string, port: number | null): string {
  return (host.includes(":") ? `[${host}]` : host) + (port === null ? "" : `:${port}`);
}

/** Addresses that only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/** The OAuth authorization server whose access tokens the HTTP server accepts (`--authorization-server`). */
export interface AuthorizationSettings {
  /** Its issuer identifier, exactly as its tokens' `iss` and its metadata's `issuer` say it. */
  readonly issuer: string;
  /** This server's MCP endpoint as clients reach it: the audience a token must name. */
  readonly resource: string;
  /** Scopes every token must carry. */
  readonly requiredScopes: readonly string[];
}

/** How `warden serve --http` listens and what it accepts. */
export interface HttpSettings {
  /** Whether the server speaks HTTP (`--http`) instead of stdio. */
  readonly enabled: boolean;
  readonly host: string;
  readonly port: number;
  /** `Host` header values answered, lowercase, without port; empty: the defaults for the bound address. */
  readonly allowedHosts: readonly string[];
  /** `Origin` header values answered, lowercase, as the browser sends them (scheme, host, port). */
  readonly allowedOrigins: readonly string[];
  readonly maxBodyBytes: number;
  readonly maxCallsPerPrincipal: number;
  readonly requestTimeoutMs: number;
  /** Where access tokens other than the tokens file's come from; null: the tokens file only. */
  readonly authorization: AuthorizationSettings | null;
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kib: 1024,
  kb: 1024,
  k: 1024,
  mib: 1 << 20,
  mb: 1 << 20,
  m: 1 << 20,
};

/** Parses `512KiB`, `4MiB` or a number of bytes, within `[min, max]` bytes. */
function parseSize(name: string, text: string, min: number, max: number): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined;
  const bytes = match && unit ? Number(match[1]) * unit : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < min || bytes > max) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${name}`,
        `expected a size from 1KiB to 64MiB such as 512KiB or 4MiB, received ${received(text)}`,
      ),
    );
  }
  return bytes;
}

/** An `Origin` as browsers send it: scheme, host and port when not the scheme's default, lowercase. */
function parseOrigin(source: string, text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (
    !url || (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.origin !== text.replace(/\/$/, "").toLowerCase()
  ) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected an origin: a scheme, a host and a port if not the default, with no path, received ${received(text)}`,
        "for example --allowed-origin https://app.example.com",
      ),
    );
  }
  return url.origin;
}

/** A `Host` value without its port, lowercase; brackets kept off an IPv6 address. */
function parseHostName(source: string, text: string): string {
  const name = text.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (!/^(?:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$|^[0-9a-f:.]+$/.test(name)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected a host name or an address without a port, received ${received(text)}`,
        "for example --allowed-host warden.internal",
      ),
    );
  }
  return name;
}

/**
 * An https URL (http on a loopback address, for an authorization server on this machine) with no fragment, kept as
 * written: issuers and audiences are compared as strings, so `https://id.example/` and `https://id.example` differ.
 */
function parseServiceUrl(source: string, text: string, example: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text.trim());
  } catch {
    url = undefined;
  }
  const loopback = url !== undefined && isLoopback(url.hostname.replace(/^\[(.*)\]$/, "$1"));
  if (!url || !(url.protocol === "https:" || (url.protocol === "http:" && loopback)) || url.hash || url.search) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected an https URL (http only on a loopback address) with no query or fragment, received ${received(text)}`,
        `for example ${example}`,
      ),
    );
  }
  return text.trim();
}

/** An OAuth scope token (RFC 6749 §3.3): printable ASCII but space, `"` and `\\`. */
function parseScope(source: string, text: string): string {
  if (!/^[\x21\x23-\x5B\x5D-\x7E]{1,200}$/.test(text)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected a scope (printable characters, no space, quote or backslash), received ${received(text)}`,
        "for example --required-scope mcp:tools",
      ),
    );
  }
  return text;
}

/**
 * The telemetry settings, read from OpenTelemetry's own variables (the SDK reads them too; they are checked here so
 * a mistake stops warden at start rather than losing every span): an endpoint for each signal, and OTLP over HTTP in
 * JSON, the one protocol warden sends.
 */
function telemetrySettings(env: (name: string) => string | undefined, enabled: boolean): TelemetrySettings | null {
  if (!enabled) return null;
  const endpoint = (signal: "TRACES" | "METRICS", path: string): string => {
    const specific = env(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);
    const general = env("OTEL_EXPORTER_OTLP_ENDPOINT");
    const [name, text] = specific
      ? [`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`, specific]
      : ["OTEL_EXPORTER_OTLP_ENDPOINT", general];
    if (!text) {
      throw new WardenError(
        "config_invalid",
        problem(
          "WARDEN_OTEL_ENABLED=1 needs a collector",
          "neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT is set",
          "set OTEL_EXPORTER_OTLP_ENDPOINT to your collector's OTLP/HTTP address, for example http://127.0.0.1:4318",
        ),
      );
    }
    let url: URL | undefined;
    try {
      url = new URL(text.trim());
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Invalid ${name}`,
          `expected an http or https URL, received ${received(text)}`,
          "for example http://127.0.0.1:4318",
        ),
      );
    }
    // The general endpoint gets the signal's path; a signal's own is used as given (the OTLP exporter spec).
    return specific ? url.href : url.href.replace(/\/$/, "") + path;
  };
  for (
    const name of [
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ]
  ) {
    const protocol = env(name);
    if (protocol !== undefined && protocol !== "" && protocol !== "http/json") {
      throw new WardenError(
        "config_invalid",
        problem(
          `Unsupported ${name}`,
          `warden sends OTLP over HTTP as JSON (http/json), received ${received(protocol)}`,
          "unset it or set http/json; every OpenTelemetry Collector takes it on its OTLP/HTTP port",
        ),
      );
    }
  }
  const millis = (name: string, fallback: number): number => {
    const text = env(name);
    if (text === undefined || text === "") return fallback;
    return parseCount(name, text, 100, 24 * 3_600_000);
  };
  return Object.freeze({
    tracesEndpoint: endpoint("TRACES", "/v1/traces"),
    metricsEndpoint: endpoint("METRICS", "/v1/metrics"),
    exportIntervalMs: millis("OTEL_METRIC_EXPORT_INTERVAL", 60_000),
    exportTimeoutMs: millis("OTEL_METRIC_EXPORT_TIMEOUT", 30_000),
  });
}

const ROOT_ID = /^[a-z][a-z0-9_-]{0,31}$/;
const MAX_TIMEOUT_MS = 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `500ms`, `30s`, `2m`, `1h`, or a bare number of milliseconds, within `[min, max]` (words for the message). */
export function parseDuration(
  name: string,
  text: string,
  range: { min: number; max: number; words: string } = {
    min: 1,
    max: MAX_TIMEOUT_MS,
    words: "from 1ms to 60m such as 500ms, 30s or 2m",
  },
): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] ?? "ms"] : NaN;
  if (!Number.isFinite(ms) || ms < range.min || ms > range.max) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${name}`, `expected a duration ${range.words}, received ${received(text)}`),
    );
  }
  return Math.round(ms);
}

/** Parses a whole number within `[min, max]`. */
function parseCount(name: string, text: string, min: number, max: number): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${name}`, `expected a whole number from ${min} to ${max}, received ${received(text)}`),
    );
  }
  return n;
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

/** A check's name as run_checks reports it: `<group>/<check>`, and `:<dir>` for a project below the root. */
const CHECK_NAME = /^[a-z][a-z0-9_-]*\/[a-z0-9][a-z0-9._-]*(?::[A-Za-z0-9._@+\/-]+)?$/;

/** The names of `--allow-unisolated` (each flag may list several, `,`-separated) or WARDEN_ALLOW_UNISOLATED. */
function parseCheckNames(source: string, values: readonly string[]): readonly string[] {
  const names = values.flatMap((value) => value.split(",")).map((name) => name.trim());
  for (const name of names) {
    if (!CHECK_NAME.test(name)) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Invalid ${source}`,
          `expected check names as run_checks reports them, such as typescript/tsc, lint/eslint or repo/unit-tests, separated by commas, received ${
            received(name)
          }`,
          `for example ${
            source === "WARDEN_ALLOW_UNISOLATED"
              ? "WARDEN_ALLOW_UNISOLATED=typescript/tsc,lint/eslint"
              : "--allow-unisolated typescript/tsc"
          }`,
        ),
      );
    }
  }
  return Object.freeze([...new Set(names)]);
}

/**
 * A path setting a command can do without (the approvers' file): null when its default is under a user directory that
 * cannot be placed (no HOME), instead of the error reading it throws.
 */
export function optionalPath(config: Config, key: "approversSignersFile"): string | null {
  try {
    return config[key];
  } catch {
    return null;
  }
}

/**
 * What `--require-approval` may name: run_checks groups (tools/lib/checks/request.ts's GROUPS), and `unisolated`, any
 * run in which a check would run the repository's code without isolation.
 */
const APPROVAL_GROUPS = ["default", "typescript", "lint", "hygiene", "repo", "unisolated"];

function parseGroupName(source: string, text: string): string {
  if (!APPROVAL_GROUPS.includes(text)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected run_checks groups or unisolated (${APPROVAL_GROUPS.join(", ")}) separated by commas, received ${
          received(text)
        }`,
        "for example --require-approval repo",
      ),
    );
  }
  return text;
}

/** A principal as --principal and the tokens file take one: one word. */
function parsePrincipalName(source: string, text: string): string {
  if (!/^\S{1,200}$/.test(text)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid ${source}`,
        `expected principals, one word each, separated by commas, received ${received(text)}`,
      ),
    );
  }
  return text;
}

/** Options left after the shared settings are taken out: the command's own. */
export interface ParsedArgs {
  readonly config: Config;
  readonly rest: readonly string[];
}

const VALUE_FLAGS = [
  "--root",
  "--call-timeout",
  "--log-level",
  "--plugins-dir",
  "--allowed-signers",
  "--revoked-keys",
  "--plugins-lock",
  "--project-dir",
  "--max-risk",
  "--disable-tool",
  "--require-principal",
  "--principal",
  "--ledger",
  "--jobs-dir",
  "--job-concurrency",
  "--job-queue",
  "--job-retained",
  "--job-retention",
  "--job-timeout",
  "--allow-unisolated",
  "--require-approval",
  "--approvers",
  "--approvers-signers",
  "--host",
  "--port",
  "--tokens",
  "--allowed-host",
  "--allowed-origin",
  "--max-body",
  "--max-calls",
  "--request-timeout",
  "--authorization-server",
  "--resource",
  "--required-scope",
  "--policy-url",
  "--policy-timeout",
];
const BOOLEAN_FLAGS = ["--strict-plugins", "--http", "--strict-project-selection", "--client-roots"];

/**
 * Takes the shared settings out of `argv` (flags win over the environment)
 * and returns them with the remaining arguments in order. Defaults are the
 * user's directories (`os` names the platform whose conventions they follow)
 * and the project's `.warden`, never the directory warden is installed in.
 */
export function parseConfig(
  argv: readonly string[],
  env: (name: string) => string | undefined = (name) => platform().env(name),
  os: string = platform().os,
): ParsedArgs {
  const rest: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (BOOLEAN_FLAGS.includes(arg)) {
      flags.set(arg, ["1"]);
      continue;
    }
    if (!VALUE_FLAGS.includes(name)) {
      rest.push(arg);
      continue;
    }
    const value = eq > 0 && arg.startsWith("--") ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) {
      throw new WardenError(
        "config_invalid",
        problem(`Missing value for ${name}`, "the flag is the last argument", `pass ${name} <value>`),
      );
    }
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  /** The flag's last value, else the variable's, with the name to blame. */
  const setting = (flag: string, variable: string): [string, string] | undefined => {
    const fromFlag = flags.get(flag)?.at(-1);
    if (fromFlag !== undefined) return [flag, fromFlag];
    const fromEnv = env(variable);
    return fromEnv ? [variable, fromEnv] : undefined;
  };
  const dirs = userDirs(os, env);
  const sources: Partial<Record<PathSetting, SettingSource>> = {};
  /** A path setting: the flag's or variable's, else `fallback` under `base` (or the error that base is). */
  const file = (
    key: PathSetting,
    variable: string,
    source: SettingSource,
    base: string | WardenError,
    fallback: string,
  ) => {
    const given = setting(PATH_SETTINGS[key], variable);
    if (given && given[1].trim() === "") {
      throw new WardenError(
        "config_invalid",
        problem(`Invalid ${given[0]}`, "expected a path, received an empty string"),
      );
    }
    sources[key] = given?.[0] ?? source;
    if (given) return path.resolve(platform().cwd(), given[1]);
    return typeof base === "string" ? path.join(base, fallback) : base;
  };

  let roots = (flags.get("--root") ?? []).map((text) => parseRoot("--root", text));
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

  const timeout = setting("--call-timeout", "WARDEN_CALL_TIMEOUT");
  const callTimeoutMs = timeout ? parseDuration(timeout[0], timeout[1]) : 60_000;

  const level = setting("--log-level", "WARDEN_LOG_LEVEL");
  const logLevel = (level?.[1] ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${level?.[0]}`, `expected one of ${LOG_LEVELS.join(", ")}, received ${received(level?.[1])}`),
    );
  }

  const risk = setting("--max-risk", "WARDEN_MAX_RISK");
  if (risk && !RISK_CLASSES.includes(risk[1] as RiskClass)) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${risk[0]}`, `expected one of ${RISK_CLASSES.join(", ")}, received ${received(risk[1])}`),
    );
  }
  const names = (flag: string, variable: string) => {
    const given = flags.get(flag) ?? (env(variable) ?? "").split(",").map((n) => n.trim()).filter((n) => n !== "");
    return Object.freeze([...new Set(given)]);
  };
  const principal = setting("--principal", "WARDEN_PRINCIPAL");
  if (principal && !/^\S{1,200}$/.test(principal[1])) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${principal[0]}`, `expected one word, received ${received(principal[1])}`),
    );
  }

  const count = (flag: string, variable: string, fallback: number, min: number, max: number) => {
    const given = setting(flag, variable);
    return given ? parseCount(given[0], given[1], min, max) : fallback;
  };
  const retention = setting("--job-retention", "WARDEN_JOB_RETENTION");
  const jobTimeout = setting("--job-timeout", "WARDEN_JOB_TIMEOUT");
  const jobLimits: JobLimits = Object.freeze({
    concurrency: count("--job-concurrency", "WARDEN_JOB_CONCURRENCY", DEFAULT_JOB_LIMITS.concurrency, 1, 16),
    queue: count("--job-queue", "WARDEN_JOB_QUEUE", DEFAULT_JOB_LIMITS.queue, 0, 1000),
    retained: count("--job-retained", "WARDEN_JOB_RETAINED", DEFAULT_JOB_LIMITS.retained, 0, 10_000),
    retentionMs: retention
      ? parseDuration(retention[0], retention[1], {
        min: 1000,
        max: 7 * 24 * 3_600_000,
        words: "from 1s to 7 days such as 30m, 1h or 24h",
      })
      : DEFAULT_JOB_LIMITS.retentionMs,
  });

  const unisolatedFlags = flags.get("--allow-unisolated");
  const unisolatedVar = env("WARDEN_ALLOW_UNISOLATED");
  const allowUnisolated = unisolatedFlags
    ? parseCheckNames("--allow-unisolated", unisolatedFlags)
    : unisolatedVar
    ? parseCheckNames("WARDEN_ALLOW_UNISOLATED", [unisolatedVar])
    : Object.freeze([]);

  /** A `,`-separated list from the flag (repeated) or the variable, each entry parsed with the name it came by. */
  const list = <T>(flag: string, variable: string, parse: (source: string, text: string) => T): readonly T[] => {
    const source = flags.has(flag) ? flag : variable;
    const given = (flags.get(flag) ?? [env(variable) ?? ""]).flatMap((value) => value.split(","));
    return Object.freeze(given.map((v) => v.trim()).filter((v) => v !== "").map((v) => parse(source, v)));
  };
  /** A flag without a value, or its variable: `1`/`true` on, `0`/`false` off; anything else is refused. */
  const toggle = (flag: string, variable: string): boolean => {
    const given = setting(flag, variable);
    if (given && !["1", "0", "true", "false"].includes(given[1])) {
      throw new WardenError(
        "config_invalid",
        problem(`Invalid ${given[0]}`, `expected 1 or 0, received ${received(given[1])}`),
      );
    }
    return given !== undefined && (given[1] === "1" || given[1] === "true");
  };
  const clientRoots = toggle("--client-roots", "WARDEN_CLIENT_ROOTS");
  const httpEnabled = toggle("--http", "WARDEN_HTTP");
  if (clientRoots && httpEnabled) {
    throw new WardenError(
      "config_invalid",
      problem(
        "--client-roots works over stdio only",
        "an HTTP server answers many clients, each with roots of its own, and asks none of them",
        "give the projects with --root",
      ),
    );
  }
  /** `--policy-url` and its `--policy-timeout`. */
  function policyEngineSettings(): PolicyEngineSettings | null {
    const url = setting("--policy-url", "WARDEN_POLICY_URL");
    const timeout = setting("--policy-timeout", "WARDEN_POLICY_TIMEOUT");
    const timeoutMs = timeout
      ? parseDuration(timeout[0], timeout[1], { min: 10, max: 10_000, words: "from 10ms to 10s such as 250ms or 2s" })
      : 500;
    if (!url) return null;
    let parsed: URL | undefined;
    try {
      parsed = new URL(url[1].trim());
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.hash) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Invalid ${url[0]}`,
          `expected the http or https URL of a decision, received ${received(url[1])}`,
          "for example --policy-url http://127.0.0.1:8181/v1/data/warden/authz",
        ),
      );
    }
    return Object.freeze({ url: parsed.href, timeoutMs });
  }
  /** `--authorization-server` with the `--resource` it needs; the two others need it. */
  function authorizationSettings(): AuthorizationSettings | null {
    const issuer = setting("--authorization-server", "WARDEN_AUTHORIZATION_SERVER");
    const resource = setting("--resource", "WARDEN_RESOURCE");
    const requiredScopes = list("--required-scope", "WARDEN_REQUIRED_SCOPES", parseScope);
    if (!issuer) {
      const stray = resource?.[0] ?? (requiredScopes.length > 0 ? "--required-scope" : null);
      if (stray === null) return null;
      throw new WardenError(
        "config_invalid",
        problem(
          `${stray} needs --authorization-server`,
          "it is about the access tokens of an authorization server, and none is configured",
          "name the server with --authorization-server <issuer>, or drop it",
        ),
      );
    }
    if (!resource) {
      throw new WardenError(
        "config_invalid",
        problem(
          `${issuer[0]} needs --resource`,
          "an access token is accepted only when it is for this server, and warden cannot know the URL its clients use",
          "name it, for example --resource https://warden.example.com/mcp",
        ),
      );
    }
    return Object.freeze({
      issuer: parseServiceUrl(issuer[0], issuer[1], "https://id.example.com/realms/dev"),
      resource: parseServiceUrl(resource[0], resource[1], "https://warden.example.com/mcp"),
      requiredScopes,
    });
  }
  const hostSetting = setting("--host", "WARDEN_HTTP_HOST");
  const requestTimeout = setting("--request-timeout", "WARDEN_HTTP_REQUEST_TIMEOUT");
  const maxBody = setting("--max-body", "WARDEN_HTTP_MAX_BODY");
  const http: HttpSettings = Object.freeze({
    enabled: httpEnabled,
    host: hostSetting ? parseHostName(hostSetting[0], hostSetting[1]) : "127.0.0.1",
    port: count("--port", "WARDEN_HTTP_PORT", 8790, 0, 65535),
    allowedHosts: list("--allowed-host", "WARDEN_ALLOWED_HOSTS", parseHostName),
    allowedOrigins: list("--allowed-origin", "WARDEN_ALLOWED_ORIGINS", parseOrigin),
    maxBodyBytes: maxBody ? parseSize(maxBody[0], maxBody[1], 1024, 64 << 20) : 4 << 20,
    maxCallsPerPrincipal: count("--max-calls", "WARDEN_HTTP_MAX_CALLS", 16, 1, 1024),
    requestTimeoutMs: requestTimeout
      ? parseDuration(requestTimeout[0], requestTimeout[1], {
        min: 1000,
        max: MAX_TIMEOUT_MS,
        words: "from 1s to 60m such as 90s or 5m",
      })
      : callTimeoutMs + 10_000,
    authorization: authorizationSettings(),
  });

  const paths = {
    pluginsDir: file("pluginsDir", "WARDEN_PLUGINS_DIR", "user config", dirs.config, "plugins"),
    allowedSignersFile: file(
      "allowedSignersFile",
      "WARDEN_ALLOWED_SIGNERS",
      "user config",
      dirs.config,
      "allowed_signers",
    ),
    revokedKeysFile: file("revokedKeysFile", "WARDEN_REVOKED_KEYS", "user config", dirs.config, "revoked_keys"),
    lockFile: file("lockFile", "WARDEN_PLUGINS_LOCK", "user config", dirs.config, "plugins.lock.json"),
    projectDir: file("projectDir", "WARDEN_PROJECT_DIR", "project", roots[0].path, ".warden"),
    ledgerDir: file("ledgerDir", "WARDEN_LEDGER", "user state", dirs.state, "ledger"),
    jobsDir: file("jobsDir", "WARDEN_JOBS_DIR", "user state", dirs.state, "jobs"),
    tokensFile: file("tokensFile", "WARDEN_TOKENS", "user config", dirs.config, "tokens"),
    approversSignersFile: file(
      "approversSignersFile",
      "WARDEN_APPROVERS_SIGNERS",
      "user config",
      dirs.config,
      "approvers_allowed_signers",
    ),
    acceptedProjectsFile: typeof dirs.state === "string" ? path.join(dirs.state, "accepted_projects.json") : dirs.state,
  };
  const config = {
    roots: Object.freeze(roots.map((r) => Object.freeze(r))),
    callTimeoutMs,
    logLevel,
    pluginsDirFrom: setting("--plugins-dir", "WARDEN_PLUGINS_DIR")?.[0] ?? null,
    sources: Object.freeze(sources as Record<PathSetting, SettingSource>),
    strictPlugins: toggle("--strict-plugins", "WARDEN_STRICT_PLUGINS"),
    strictProjectSelection: toggle("--strict-project-selection", "WARDEN_STRICT_PROJECT_SELECTION"),
    clientRoots,
    maxRisk: (risk?.[1] ?? "external-side-effect") as RiskClass,
    disabledTools: names("--disable-tool", "WARDEN_DISABLED_TOOLS"),
    principalTools: names("--require-principal", "WARDEN_PRINCIPAL_TOOLS"),
    principal: principal?.[1] ?? null,
    jobLimits,
    jobTimeoutMs: jobTimeout
      ? parseDuration(jobTimeout[0], jobTimeout[1], {
        min: 1000,
        max: MAX_TIMEOUT_MS,
        words: "from 1s to 60m such as 90s or 10m",
      })
      : 600_000,
    allowUnisolated,
    requireApproval: list("--require-approval", "WARDEN_REQUIRE_APPROVAL", parseGroupName),
    approvers: list("--approvers", "WARDEN_APPROVERS", parsePrincipalName),
    http,
    policyEngine: policyEngineSettings(),
    telemetry: telemetrySettings(env, toggle("", "WARDEN_OTEL_ENABLED")),
  };
  // A default under an unknown user directory throws when read, not now: a command that never uses it runs.
  for (const [key, value] of Object.entries(paths)) {
    Object.defineProperty(
      config,
      key,
      typeof value === "string" ? { value, enumerable: true } : {
        get: () => {
          throw value;
        },
        enumerable: true,
      },
    );
  }
  // The path properties were defined just above, which the literal's type cannot see.
  return { config: Object.freeze(config) as unknown as Config, rest };
}
