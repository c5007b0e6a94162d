// Builds what node runs, in as few files as node loads at start-up (node 20 pays for each ES module it loads, about a
// millisecond, and V8 compiles every byte of a module it loads, about 70 ms per megabyte on this machine):
// - dist/core/main.js: the server and CLI, one file with no chunks;
// - dist/tools/_builtin.js: the built-in tools in one module, and dist/chunks/: the analysis code (tools/lib) each tool
//   imports when it is called. The tools take every core module they import (core/errors.ts, core/tool.ts…) from
//   main.js, which re-exports it under a name of its own (see coreFromMain): one copy of each module, so
//   `instanceof WardenError` and the platform's state hold across the two builds;
// - dist/vendor/globby.js, jose.js and otel.js: what core loads only to glob, to check an OAuth access token, or to
//   send telemetry (core/governance/otel.ts and the OpenTelemetry SDK).
// The split build this replaced (esbuild's code splitting over core and tools together) loaded 37 files, 355 KB; one
// file of everything, 742 KB. This one loads 5 (main.js, _builtin.js, three small chunks the tools share with their
// analysis code), 466 KB: see scripts/bench/README.md, start-up.
// With --tests it also builds test/*.test.ts into dist/test/ and the unit tests beside the modules
// (core/**/*.test.ts, tools/**/*.test.ts) into dist/unit/, at the same paths.
// Plain JavaScript on purpose: node 20 runs it without a TypeScript loader.
import { build } from "esbuild";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { builtinModules, createRequire } from "node:module";
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const withTests = process.argv.includes("--tests");

const tools = readdirSync(new URL("../tools/", import.meta.url), { withFileTypes: true })
  .filter((entry) =>
    entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") && !entry.name.startsWith("_")
  )
  .map((entry) => `tools/${entry.name}`);

/** The unit tests beside the modules of `dir`, at any depth, as paths from the repository root. */
function unitTests(dir) {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return unitTests(rel);
    return entry.isFile() && entry.name.endsWith(".test.ts") ? [rel] : [];
  }).sort();
}

rmSync(new URL("../dist/core", import.meta.url), { recursive: true, force: true });
rmSync(new URL("../dist/tools", import.meta.url), { recursive: true, force: true });
rmSync(new URL("../dist/chunks", import.meta.url), { recursive: true, force: true });
rmSync(new URL("../dist/vendor", import.meta.url), { recursive: true, force: true });

/**
 * The built-in tools as one entry, `warden:builtin-tools`: each tool's module under its file's name, which the loader
 * (core/loader.ts, BUILTIN_BUNDLE) checks as it checks a file of its own.
 */
const builtinTools = {
  name: "builtin-tools",
  setup(b) {
    b.onResolve({ filter: /^warden:builtin-tools$/ }, () => ({ path: "builtin-tools", namespace: "warden" }));
    b.onLoad({ filter: /.*/, namespace: "warden" }, () => ({
      resolveDir: root,
      loader: "ts",
      contents: [
        ...tools.map((file, i) => `import * as tool${i} from "./${file}";`),
        `export const BUILTIN_TOOLS = [${
          tools.map((file, i) => `[${JSON.stringify(path.basename(file, ".ts") + ".js")}, tool${i}]`).join(", ")
        }];`,
      ].join("\n"),
    }));
  },
};

/** Resolves the SDK's Ajv provider to a stub; see scripts/ajv_provider_stub.mjs. */
const withoutAjv = {
  name: "without-ajv",
  setup(b) {
    b.onResolve(
      { filter: /validation\/ajv-provider\.js$/ },
      (args) =>
        args.importer.includes("@modelcontextprotocol")
          ? { path: fileURLToPath(new URL("./ajv_provider_stub.mjs", import.meta.url)) }
          : undefined,
    );
  },
};

/**
 * Puts the deno binary where the documented deno commands start it, as the `deno` package's own install script
 * (disabled: package.json allowScripts) would: a hard link of @deno/<platform>/deno at node_modules/deno/deno, and
 * node_modules/.bin/deno pointing at it instead of at the package's bin.cjs, a node script that costs every deno
 * command a node start before deno's own. Without the platform package it leaves the shim alone.
 */
function linkDenoBinary() {
  const require = createRequire(import.meta.url);
  const exe = process.platform === "win32" ? "deno.exe" : "deno";
  let denoDir;
  let source;
  try {
    denoDir = path.dirname(require.resolve("deno/package.json"));
    const target = process.platform === "linux" ? `linux-${process.arch}-glibc` : `${process.platform}-${process.arch}`;
    source = path.join(path.dirname(require.resolve(`@deno/${target}/package.json`, { paths: [denoDir] })), exe);
  } catch {
    return "deno: no platform package installed, node_modules/.bin/deno left as the npm shim";
  }
  if (!existsSync(source)) return `deno: ${source} is missing, node_modules/.bin/deno left as the npm shim`;
  const linked = path.join(denoDir, exe);
  const same = (a, b) => {
    try {
      const [x, y] = [statSync(a), statSync(b)];
      return x.ino === y.ino && x.dev === y.dev;
    } catch {
      return false;
    }
  };
  if (!same(source, linked)) {
    // Beside the target, then renamed over it: a deno already running from the old file keeps its inode.
    const temporary = `${linked}.${process.pid}.tmp`;
    rmSync(temporary, { force: true });
    try {
      linkSync(source, temporary);
    } catch {
      copyFileSync(source, temporary); // another file system: a copy, as deno's install falls back to
    }
    renameSync(temporary, linked);
  }
  if (process.platform === "win32") return `deno: ${linked}`;
  const bin = path.join(denoDir, "..", ".bin", "deno");
  const wanted = path.relative(path.dirname(bin), linked);
  let current;
  try {
    current = lstatSync(bin).isSymbolicLink() ? readlinkSync(bin) : undefined;
  } catch {
    current = undefined;
  }
  if (current !== wanted) {
    const temporary = `${bin}.${process.pid}.tmp`;
    rmSync(temporary, { force: true });
    symlinkSync(wanted, temporary);
    renameSync(temporary, bin);
  }
  return `deno: node_modules/.bin/deno -> ${path.relative(path.dirname(bin), linked)}`;
}

/** The name main.js re-exports `name` of the core module `file` under: unique across modules, never minified. */
const sharedName = (file, name) => `${file.replace(/\.ts$/, "").replace(/[^A-Za-z0-9]/g, "_")}$${name}`;

/** The value exports of one module (types are erased), as esbuild reads them. */
async function exportsOf(file) {
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: [file],
    outdir: "exports-of",
    write: false,
    metafile: true,
    format: "esm",
    logLevel: "silent",
  });
  return Object.values(metafile.outputs).find((output) => output.entryPoint)?.exports ?? [];
}

/**
 * In the tools' build, a core module a tool imports becomes a module that re-exports it from main.js; `shared` gathers
 * each such module's exports for main.js's entry to export.
 */
const coreFromMain = (shared) => ({
  name: "core-from-main",
  setup(b) {
    b.onResolve({ filter: /\/core\// }, (args) => {
      if (args.namespace !== "file" || !args.importer.startsWith(path.join(root, "tools") + path.sep)) return undefined;
      const file = path.relative(root, path.resolve(args.resolveDir, args.path)).split(path.sep).join("/");
      return file.startsWith("core/") ? { path: file, namespace: "warden-core" } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: "warden-core" }, async (args) => {
      const names = await exportsOf(args.path);
      shared.set(args.path, names);
      const list = names.map((name) => `${sharedName(args.path, name)} as ${name}`).join(", ");
      return { contents: `export { ${list} } from "warden:main";`, loader: "js", resolveDir: root };
    });
    b.onResolve({ filter: /^warden:main$/ }, () => ({ path: "../core/main.js", external: true }));
  },
});

/** core/main.ts, and the core modules the tools import re-exported for them (see coreFromMain). */
const coreEntry = (shared) => ({
  name: "core-entry",
  setup(b) {
    b.onResolve({ filter: /^warden:core$/ }, () => ({ path: "core", namespace: "warden" }));
    b.onLoad({ filter: /^core$/, namespace: "warden" }, () => ({
      resolveDir: root,
      loader: "js",
      contents: [
        'import "./core/main.ts";',
        ...[...shared].sort().map(([file, names]) =>
          `export { ${names.map((name) => `${name} as ${sharedName(file, name)}`).join(", ")} } from "./${file}";`
        ),
      ].join("\n"),
    }));
  },
});

const builtinNames = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/**
 * node's built-in modules through require() (the banner's, below), not import: node's ES module of a built-in reads
 * every export of it as it loads, and those getters load more (node:process's `stdin`, node:fs's `ReadStream`…), 5% of
 * warden's start-up on node. node:path is scripts/node_path_for_bundle.cjs, for deno's sake (see there).
 */
const builtinsByRequire = {
  name: "builtins-by-require",
  setup(b) {
    b.onResolve({ filter: /^(node:)?path$/ }, () => ({
      path: fileURLToPath(new URL("./node_path_for_bundle.cjs", import.meta.url)),
    }));
    b.onResolve(
      { filter: /^(node:)?[a-z_/]+$/ },
      (args) =>
        args.namespace !== "builtin" && builtinNames.has(args.path)
          ? { path: args.path.replace(/^node:/, ""), namespace: "builtin" }
          : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({
      contents: `module.exports = require("node:${args.path}");`,
      loader: "js",
    }));
  },
};

/**
 * The packages core imports only for one purpose, each from its own file in dist/vendor/: globby to glob, jose to
 * check an authorization server's access tokens.
 */
const LAZY_PACKAGES = ["globby", "jose"];
const lazyFromVendor = {
  name: "lazy-from-vendor",
  setup(b) {
    b.onResolve({ filter: new RegExp(`^(${LAZY_PACKAGES.join("|")})$`) }, (args) => ({
      path: `../vendor/${args.path}.js`,
      external: true,
    }));
    // Telemetry's OpenTelemetry SDK, with the module that drives it, which imports nothing of the core.
    b.onResolve({ filter: /^\.\/otel\.ts$/ }, () => ({ path: "../vendor/otel.js", external: true }));
  },
};

/**
 * The require() of the bundles: the built-in modules, and nothing else (every other module is bundled or imported).
 * process.getBuiltinModule (node 20.16, deno) rather than node:module's createRequire, which under deno loads its
 * CommonJS layer: about 40 ms of a deno start-up.
 */
const REQUIRE_BANNER =
  "const require=(id)=>process.getBuiltinModule(id)??(()=>{throw new Error(`warden's build requires ${id}, which is not a built-in module`)})();";
const forNode = {
  absWorkingDir: root,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: !process.env.WARDEN_NO_MINIFY,
  // Heavy or native packages stay in node_modules and load only when used.
  external: ["ts-morph", "@ts-morph/common", "typescript", "esbuild", "deno"],
  banner: { js: REQUIRE_BANNER },
  logLevel: "warning",
};

const started = performance.now();
const denoLink = linkDenoBinary();
const shared = new Map();
await build({
  ...forNode,
  entryPoints: [{ in: "warden:builtin-tools", out: "tools/_builtin" }],
  outdir: "dist",
  outbase: ".",
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  plugins: [coreFromMain(shared), builtinsByRequire, builtinTools],
});
await build({
  ...forNode,
  entryPoints: [{ in: "warden:core", out: "core/main" }],
  outdir: "dist",
  outbase: ".",
  plugins: [withoutAjv, lazyFromVendor, builtinsByRequire, coreEntry(shared)],
  // The entry is the virtual module above, so core/main.ts's own line is not the file's first: the command's is.
  banner: { js: `#!/usr/bin/env node\n${REQUIRE_BANNER}` },
});
chmodSync(path.join(root, "dist/core/main.js"), 0o755); // the package's command
await build({
  ...forNode,
  entryPoints: ["core/governance/otel.ts"],
  outfile: "dist/vendor/otel.js",
  plugins: [builtinsByRequire],
  legalComments: "external",
});
for (const name of LAZY_PACKAGES) {
  await build({
    ...forNode,
    entryPoints: [name],
    outfile: `dist/vendor/${name}.js`,
    plugins: [builtinsByRequire],
    legalComments: "external",
  });
}

/** One vendor bundle deno loads instead of the SDK's modules (see deno.json "imports"), typed by its `.d.ts`. */
const vendorBundle = (entry, name) =>
  build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile: `dist/vendor/${name}.js`,
    plugins: [withoutAjv],
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    minify: !process.env.WARDEN_NO_MINIFY,
    legalComments: "external",
    banner: { js: `// @ts-self-types="./${name}.d.ts"` },
    logLevel: "warning",
  });
// deno runs core/ from source but takes the SDK from this one bundle.
await vendorBundle("scripts/mcp_sdk_entry.mjs", "mcp-sdk");
// The HTTP transport, apart: a stdio server never loads it (it brings its own copy of the SDK's message schemas).
await vendorBundle("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js", "mcp-sdk-http");
await writeFile(
  new URL("../dist/vendor/mcp-sdk-http.d.ts", import.meta.url),
  'export { WebStandardStreamableHTTPServerTransport } from "../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.d.ts";\n',
);
await writeFile(
  new URL("../dist/vendor/mcp-sdk.d.ts", import.meta.url),
  [
    'export { Server } from "../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.d.ts";',
    'export { ErrorCode, InitializeRequestSchema, JSONRPCRequestSchema, LATEST_PROTOCOL_VERSION, ListRootsRequestSchema, McpError, RootsListChangedNotificationSchema, SUPPORTED_PROTOCOL_VERSIONS } from "../../node_modules/@modelcontextprotocol/sdk/dist/esm/types.d.ts";',
    "",
  ].join("\n"),
);

if (withTests) {
  const testFiles = readdirSync(new URL("../test/", import.meta.url))
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => `test/${name}`);
  const fixtureTools = ["tools", "hostile", "jobs", "conformance"].flatMap((dir) =>
    readdirSync(new URL(`../test/fixtures/${dir}/`, import.meta.url))
      .filter((name) => name.endsWith(".ts"))
      .map((name) => `test/fixtures/${dir}/${name}`)
  );
  rmSync(new URL("../dist/test", import.meta.url), { recursive: true, force: true });
  rmSync(new URL("../dist/unit", import.meta.url), { recursive: true, force: true });
  const asTests = {
    absWorkingDir: root,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    sourcemap: "inline",
    logLevel: "warning",
  };
  await build({ ...asTests, entryPoints: [...testFiles, ...fixtureTools], outdir: "dist/test", outbase: "test" });
  const units = [...unitTests("core"), ...unitTests("tools")];
  if (units.length > 0) await build({ ...asTests, entryPoints: units, outdir: "dist/unit", outbase: "." });
}
process.stderr.write(
  `build: ${tools.length} tools${withTests ? " and tests" : ""} in ${
    Math.round(performance.now() - started)
  } ms; ${denoLink}\n`,
);
