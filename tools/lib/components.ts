// What a component (a root or a directory of it) is made of: languages by
// file extension, production versus test files, and the package manifests of
// the ecosystems warden's users work in, with the entry points they name.
import path from "node:path";
import {
  conventionalSourceStem,
  exportTargets,
  globToRegExp,
  OUTPUT_EXTENSION,
  parsePackage,
  pnpmWorkspacePatterns,
} from "./graph/packages.ts";

const LANGUAGES: Record<string, string> = {};
const add = (language: string, extensions: string) => {
  for (const ext of extensions.split(" ")) LANGUAGES[ext] = language;
};
add("TypeScript", "ts mts cts");
add("TSX", "tsx");
add("JavaScript", "js mjs cjs");
add("JSX", "jsx");
add("JSON", "json jsonc json5");
add("Markdown", "md markdown mdx");
add("CSS", "css");
add("SCSS", "scss sass");
add("Less", "less");
add("HTML", "html htm");
add("Vue", "vue");
add("Svelte", "svelte");
add("Astro", "astro");
add("Python", "py pyi");
add("Go", "go");
add("Rust", "rs");
add("Java", "java");
add("Kotlin", "kt kts");
add("Scala", "scala");
add("C", "c h");
add("C++", "cc cpp cxx hpp hh hxx");
add("C#", "cs");
add("Swift", "swift");
add("Ruby", "rb");
add("PHP", "php");
add("Shell", "sh bash zsh fish");
add("PowerShell", "ps1");
add("SQL", "sql");
add("YAML", "yaml yml");
add("TOML", "toml");
add("XML", "xml");
add("GraphQL", "graphql gql");
add("Protocol Buffers", "proto");
add("Lua", "lua");
add("Dart", "dart");
add("Elixir", "ex exs");
add("Haskell", "hs");
add("Zig", "zig");
add("Terraform", "tf hcl");
add("Nix", "nix");
add("Text", "txt rst adoc org");
const BY_NAME: Record<string, string> = {
  Dockerfile: "Dockerfile",
  Makefile: "Makefile",
  makefile: "Makefile",
  Gemfile: "Ruby",
  Rakefile: "Ruby",
};

/** The language of a file by its name, or undefined for a kind not counted as code or text. */
export function languageOfFile(file: string): string | undefined {
  const base = file.slice(file.lastIndexOf("/") + 1);
  if (BY_NAME[base]) return BY_NAME[base];
  if (/\.d\.[mc]?ts$/.test(base)) return "TypeScript";
  const dot = base.lastIndexOf(".");
  return dot <= 0 ? undefined : LANGUAGES[base.slice(dot + 1).toLowerCase()];
}

const TEST_PATH =
  /(^|\/)(?:tests?|__tests__|__mocks__|specs?|e2e|cypress|playwright|fixtures?|testdata|test-?utils)\/|\.(?:test|spec|e2e)\.[^/]+$|_(?:test|spec)\.[^./]+$|(^|\/)test_[^/]+\.py$|(^|\/)conftest\.py$/i;

/** Whether a file is test code (tests, specs, fixtures, mocks) rather than production code. */
export function isTestFile(file: string): boolean {
  return TEST_PATH.test(file);
}

/** A package manifest and what it says. */
export interface Manifest {
  readonly manifest: string;
  readonly kind: "npm" | "deno" | "cargo" | "go" | "python";
  readonly dir: string;
  readonly name?: string;
  readonly version?: string;
  readonly private?: boolean;
  /** A member of the workspaces the root declares. */
  readonly workspace: boolean;
  /** Files the manifest names as entry points (and that exist), root-relative. */
  readonly entryPoints: readonly string[];
}

const MANIFESTS: Record<string, Manifest["kind"]> = {
  "package.json": "npm",
  "deno.json": "deno",
  "deno.jsonc": "deno",
  "Cargo.toml": "cargo",
  "go.mod": "go",
  "pyproject.toml": "python",
};

/** Whether `file` is a manifest this module reads. */
export function isManifest(file: string): boolean {
  return MANIFESTS[file.slice(file.lastIndexOf("/") + 1)] !== undefined;
}

const EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];

/** The file an entry target names: itself, without its build directory (dist/ → src/), with an extension or index. */
function entryFile(target: string, files: ReadonlySet<string>): string | undefined {
  const bases = [target];
  const conventional = conventionalSourceStem(target);
  if (conventional !== undefined) bases.push(conventional);
  for (const base of bases) {
    if (files.has(base)) return base;
    const stem = base.replace(OUTPUT_EXTENSION, "");
    for (const candidate of [...EXTENSIONS.map((e) => stem + e), ...EXTENSIONS.map((e) => `${stem}/index${e}`)]) {
      if (files.has(candidate)) return candidate;
    }
  }
  return undefined;
}

function tomlValue(text: string, section: RegExp, key: string): string | undefined {
  let inSection = false;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(line);
    if (header) {
      inSection = section.test(header[1].trim());
      continue;
    }
    const match = inSection ? new RegExp(`^\\s*${key}\\s*=\\s*["']([^"']*)["']`).exec(line) : null;
    if (match) return match[1];
  }
  return undefined;
}

/** Reads the manifests among `texts` (path → text); `files` are the files that exist. */
export function readManifests(texts: ReadonlyMap<string, string>, files: ReadonlySet<string>): {
  manifests: Manifest[];
  workspacePatterns: string[];
} {
  const root = texts.get("package.json");
  const rootPkg = root !== undefined ? parsePackage("package.json", root) : undefined;
  const patterns = [...(rootPkg?.workspaces ?? [])];
  const pnpm = texts.get("pnpm-workspace.yaml");
  if (pnpm !== undefined) patterns.push(...pnpmWorkspacePatterns(pnpm));
  const denoRoot = texts.get("deno.json") ?? texts.get("deno.jsonc");
  if (denoRoot !== undefined) {
    try {
      const json = JSON.parse(denoRoot);
      if (Array.isArray(json.workspace)) patterns.push(...json.workspace.filter((p: unknown) => typeof p === "string"));
    } catch { /* deno.jsonc with comments: no workspace list */ }
  }
  const cargo = texts.get("Cargo.toml");
  if (cargo !== undefined) {
    const members = /\[workspace\][^[]*?members\s*=\s*\[([^\]]*)\]/s.exec(cargo);
    if (members) patterns.push(...[...members[1].matchAll(/["']([^"']+)["']/g)].map((m) => m[1]));
  }
  const include = patterns.filter((p) => !p.startsWith("!")).map(globToRegExp);
  const exclude = patterns.filter((p) => p.startsWith("!")).map((p) => globToRegExp(p.slice(1)));
  const isMember = (dir: string) =>
    dir !== "." && include.some((re) => re.test(dir)) && !exclude.some((re) => re.test(dir));

  const manifests: Manifest[] = [];
  for (const [file, text] of [...texts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const kind = MANIFESTS[file.slice(file.lastIndexOf("/") + 1)];
    if (!kind) continue;
    const dir = path.posix.dirname(file);
    const entries = new Set<string>();
    let name: string | undefined;
    let version: string | undefined;
    let isPrivate: boolean | undefined;
    if (kind === "npm") {
      const pkg = parsePackage(file, text);
      name = pkg.name;
      version = pkg.version;
      isPrivate = pkg.private;
      for (const { target } of pkg.entries) {
        const found = entryFile(target, files);
        if (found) entries.add(found);
      }
    } else if (kind === "deno") {
      try {
        const json = JSON.parse(text);
        name = typeof json.name === "string" ? json.name : undefined;
        version = typeof json.version === "string" ? json.version : undefined;
        for (const { target } of exportTargets(json.exports)) {
          const found = entryFile(path.posix.join(dir, target), files);
          if (found) entries.add(found);
        }
      } catch { /* jsonc */ }
    } else if (kind === "cargo") {
      name = tomlValue(text, /^package$/, "name");
      version = tomlValue(text, /^package$/, "version");
      for (const candidate of ["src/main.rs", "src/lib.rs"]) {
        const file = path.posix.join(dir, candidate);
        if (files.has(file)) entries.add(file);
      }
    } else if (kind === "go") {
      name = /^module\s+(\S+)/m.exec(text)?.[1];
      const main = path.posix.join(dir, "main.go");
      if (files.has(main)) entries.add(main);
    } else {
      name = tomlValue(text, /^(project|tool\.poetry)$/, "name");
      version = tomlValue(text, /^(project|tool\.poetry)$/, "version");
    }
    manifests.push({
      manifest: file,
      kind,
      dir,
      ...(name !== undefined ? { name } : {}),
      ...(version !== undefined ? { version } : {}),
      ...(isPrivate !== undefined ? { private: isPrivate } : {}),
      workspace: isMember(dir),
      entryPoints: [...entries].sort(),
    });
  }
  return { manifests, workspacePatterns: patterns };
}
