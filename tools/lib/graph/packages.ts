// The packages of a root: every package.json outside node_modules, the
// workspaces the root declares (package.json `workspaces`, pnpm-workspace.yaml),
// and the entry points each package.json names (`main`, `module`, `types`,
// `bin`, `browser`, `exports`, `typesVersions`).
import { joinRel, parentDir } from "./virtual_fs.ts";

/** One package.json, as far as the tools need it. */
export interface PackageInfo {
  /** Root-relative path of the package.json. */
  readonly manifest: string;
  /** Root-relative directory of the package (`.` for the root). */
  readonly dir: string;
  readonly name?: string;
  readonly version?: string;
  readonly private: boolean;
  /** Declared by the root's workspaces (or is the root package). */
  workspace: boolean;
  /** Workspace patterns this package declares, if any. */
  readonly workspaces: readonly string[];
  /** Entry targets, root-relative, with the field that names them, before mapping to sources. */
  readonly entries: readonly { readonly target: string; readonly field: string }[];
  /** Whether the package.json could not be parsed. */
  readonly invalid: boolean;
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

function asObject(value: unknown): Record<string, Json> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, Json>
    : undefined;
}

/** Every string target of an `exports` or `imports` value, with the condition path that leads to it. */
export function exportTargets(value: Json | undefined, key = "exports"): { target: string; field: string }[] {
  const out: { target: string; field: string }[] = [];
  const walk = (node: Json | undefined, field: string) => {
    if (typeof node === "string") out.push({ target: node, field });
    else if (Array.isArray(node)) node.forEach((item) => walk(item, field));
    else if (node && typeof node === "object") {
      for (const [k, v] of Object.entries(node)) walk(v, `${field}[${JSON.stringify(k)}]`);
    }
  };
  walk(value, key);
  return out;
}

/** Reads one package.json text. */
export function parsePackage(manifest: string, text: string | undefined): PackageInfo {
  const dir = parentDir(manifest);
  let json: Record<string, Json> | undefined;
  try {
    json = asObject(JSON.parse(text ?? ""));
  } catch {
    json = undefined;
  }
  if (!json) return { manifest, dir, private: false, workspace: false, workspaces: [], entries: [], invalid: true };
  const entries: { target: string; field: string }[] = [];
  for (const field of ["main", "module", "types", "typings", "browser"]) {
    if (typeof json[field] === "string") entries.push({ target: json[field] as string, field });
  }
  const bin = json.bin;
  if (typeof bin === "string") entries.push({ target: bin, field: "bin" });
  else if (asObject(bin)) {
    for (const [name, target] of Object.entries(asObject(bin)!)) {
      if (typeof target === "string") entries.push({ target, field: `bin[${JSON.stringify(name)}]` });
    }
  }
  entries.push(...exportTargets(json.exports));
  // `typesVersions` maps subpaths to the declaration files that type them, per TypeScript version.
  for (const [range, paths] of Object.entries(asObject(json.typesVersions) ?? {})) {
    for (const [pattern, targets] of Object.entries(asObject(paths) ?? {})) {
      if (!Array.isArray(targets)) continue;
      for (const target of targets) {
        if (typeof target === "string") {
          entries.push({ target, field: `typesVersions[${JSON.stringify(range)}][${JSON.stringify(pattern)}]` });
        }
      }
    }
  }
  const ws = json.workspaces;
  const workspaces = Array.isArray(ws)
    ? ws.filter((p): p is string => typeof p === "string")
    : Array.isArray(asObject(ws)?.packages)
    ? (asObject(ws)!.packages as Json[]).filter((p): p is string => typeof p === "string")
    : [];
  return {
    manifest,
    dir,
    ...(typeof json.name === "string" ? { name: json.name } : {}),
    ...(typeof json.version === "string" ? { version: json.version } : {}),
    private: json.private === true,
    workspace: false,
    workspaces,
    entries: entries
      .filter((e) => !e.target.startsWith("#") && !/^[a-z]+:/i.test(e.target))
      .map((e) => ({ target: joinRel(dir, e.target), field: e.field })),
    invalid: false,
  };
}

/** The `packages:` list of a pnpm-workspace.yaml (the subset of YAML it uses). */
export function pnpmWorkspacePatterns(text: string): string[] {
  const out: string[] = [];
  let inPackages = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+#.*$/, "");
    if (/^packages\s*:/.test(line)) {
      inPackages = true;
      const inline = /\[(.*)\]/.exec(line);
      if (inline) {
        out.push(...inline[1].split(",").map((s) => s.trim().replace(/^['"]|['"]$/g, "")).filter(Boolean));
        inPackages = false;
      }
      continue;
    }
    if (inPackages) {
      const item = /^\s*-\s*(.+?)\s*$/.exec(line);
      if (item) out.push(item[1].replace(/^['"]|['"]$/g, ""));
      else if (/^\S/.test(line)) inPackages = false;
    }
  }
  return out;
}

/** A glob over directory paths (`*`, `**`, `?`) as a regular expression. */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  const g = glob.replace(/^\.\//, "").replace(/\/+$/, "");
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === "*" && g[i + 1] === "*") {
      source += g[i + 2] === "/" ? "(?:.*/)?" : ".*";
      i += g[i + 2] === "/" ? 2 : 1;
    } else if (ch === "*") source += "[^/]*";
    else if (ch === "?") source += "[^/]";
    else if ("{".includes(ch)) {
      const close = g.indexOf("}", i);
      if (close === -1) source += "\\{";
      else {
        source += `(?:${
          g.slice(i + 1, close).split(",").map((s) => s.replace(/[.+^${}()|[\]\\]/g, "\\$&")).join("|")
        })`;
        i = close;
      }
    } else source += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/**
 * Marks the packages the root declares as workspaces (the root package too)
 * and returns the workspace patterns found.
 */
export function markWorkspaces(packages: PackageInfo[], pnpmYaml: string | undefined): string[] {
  const rootPackage = packages.find((p) => p.dir === ".");
  const patterns = [...(rootPackage?.workspaces ?? []), ...(pnpmYaml ? pnpmWorkspacePatterns(pnpmYaml) : [])];
  const include = patterns.filter((p) => !p.startsWith("!")).map(globToRegExp);
  const exclude = patterns.filter((p) => p.startsWith("!")).map((p) => globToRegExp(p.slice(1)));
  for (const pkg of packages) {
    pkg.workspace = pkg.dir === "." ||
      (include.some((re) => re.test(pkg.dir)) && !exclude.some((re) => re.test(pkg.dir)));
  }
  return patterns;
}

/** The npm package name a bare specifier names (`@scope/name` or `name`), if it can be one. */
export function packageNameOf(specifier: string): string | undefined {
  const match = /^(@[a-z0-9][\w.~-]*\/[a-z0-9][\w.~-]*|[a-z0-9][\w.~-]*)(?:\/|$)/i.exec(specifier);
  return match ? match[1] : undefined;
}

/** Node's built-in modules (importable without `node:`). */
export const NODE_BUILTINS: ReadonlySet<string> = new Set(
  ("assert assert/strict async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel " +
    "dns dns/promises domain events fs fs/promises http http2 https inspector inspector/promises module net os path " +
    "path/posix path/win32 perf_hooks process punycode querystring readline readline/promises repl stream " +
    "stream/consumers stream/promises stream/web string_decoder sys timers timers/promises tls trace_events tty url " +
    "util util/types v8 vm wasi worker_threads zlib").split(" "),
);

/** Build output directories, possibly nested (`dist/`, `dist/esm/`, `build/cjs/`, `lib/`, `esm/`...). */
const OUTPUT_DIR =
  /(^|\/)(?:(?:dist|build|lib|out)(?:\/(?:cjs|esm\d*|es\d*|mjs|types|typings|umd|node|browser))?|esm|cjs|types)\//;
/** What a build output's name ends with: `.js`, `.d.ts`, `.d.cts`, `.mjs`... */
export const OUTPUT_EXTENSION: RegExp = /(?:\.d)?\.(?:[mc]?ts|[mc]?js|jsx|tsx)$/;

/**
 * Where a build output's source probably is when no tsconfig says so: the
 * first output directory in its path swapped for `src/`, extension removed
 * (`packages/a/dist/esm/x.js` → `packages/a/src/x`). Undefined when the path
 * has no output directory.
 */
export function conventionalSourceStem(output: string): string | undefined {
  const match = OUTPUT_DIR.exec(output);
  if (!match) return undefined;
  const swapped = output.slice(0, match.index) + match[1] + "src/" + output.slice(match.index + match[0].length);
  return swapped.replace(OUTPUT_EXTENSION, "");
}
