// How big warden's answers are: every tool's default answer, in bytes of its
// text content (the JSON of its structured content, which MCP sends beside
// it), on npm packages as they are published and installed (the whole
// package, as an agent would point warden at node_modules/<name>). For each
// tool: the default answer, the pages nextCursor leads through (each checked to
// be at most 16 KB, and their rows checked against one answer with a large
// limit: every row once, in order), and that whole answer. code_about and
// code_blast_radius ask about the module with the longest lists and the one
// most imported, found by asking code_about about every module.
//
//   node scripts/bench/answer_sizes.mjs [--packages zod,effect,typeorm] [--runtime node|deno]
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import {
  benchDir,
  childEnv,
  denoBinary,
  ensureBuilt,
  fail,
  initializeParams,
  markdownTable,
  note,
  packedTarball,
  parseFlags,
  print,
  repoRoot,
  startServer,
  WARDEN_DENO_FLAGS,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { packages: "zod,effect,typeorm", runtime: "node" });
if (!["node", "deno"].includes(flags.runtime)) fail(`--runtime takes node or deno, received "${flags.runtime}"`);
const PAGE_BYTES = 16 * 1024;
const workDir = path.join(benchDir, "answer-sizes");
const MODULE = /\.(?:[mc]?[jt]s|[jt]sx)$/;

/** The whole published package, unpacked once, in a git repository with nothing committed. */
function preparePackage(spec) {
  const { name, file } = packedTarball(spec);
  const dir = path.join(workDir, name);
  if (!existsSync(path.join(dir, "package.json"))) {
    mkdirSync(dir, { recursive: true });
    const result = spawnSync("tar", ["xzf", file, "-C", dir, "--strip-components=1"]);
    if (result.status !== 0) fail(`cannot unpack ${file}`);
  }
  // A repository of its own (the package is not under the one above), every file untracked: change_summary's worst.
  if (!existsSync(path.join(dir, ".git"))) spawnSync("git", ["init", "-q", dir]);
  const modules = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && MODULE.test(e.name) && !(e.parentPath ?? e.path).includes("node_modules"))
    .map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)).split(path.sep).join("/"))
    .sort();
  return { name, dir, modules };
}

function wardenServer(dir) {
  const args = ["--root", `default=${dir}`];
  return startServer({
    runtime: flags.runtime,
    name: "warden",
    command: flags.runtime === "node" ? process.execPath : denoBinary(),
    args: flags.runtime === "node"
      ? [path.join(repoRoot, "dist/core/main.js"), ...args]
      : ["run", ...WARDEN_DENO_FLAGS, "core/main.ts", ...args],
    cwd: repoRoot,
    env: childEnv(),
  });
}

async function callTool(server, name, args) {
  const { result } = await server.request("tools/call", { name, arguments: args }, 600_000);
  const text = result.content?.[0]?.text ?? "";
  if (result.isError) fail(`${name} ${JSON.stringify(args)} failed: ${text}`);
  return { value: result.structuredContent, bytes: Buffer.byteLength(text) };
}

function listAt(answer, list) {
  let node = answer;
  for (const key of list.split(".")) node = node?.[key];
  return node ?? [];
}

/** The default answer, its pages (checked) and the whole answer of one tool. */
async function measure(server, name, args) {
  const first = await callTool(server, name, args);
  if (!first.value.page) return { name, args, bytes: first.bytes, pages: 1, largest: first.bytes, whole: first.bytes };
  const lists = Object.keys(first.value.page);
  const seen = new Map(lists.map((list) => [list, []]));
  let pages = 0;
  let largest = 0;
  for (let page = first;;) {
    pages++;
    largest = Math.max(largest, page.bytes);
    if (page.bytes > PAGE_BYTES) fail(`${name}: page ${pages} is ${page.bytes} bytes`);
    for (const list of lists) seen.get(list).push(...listAt(page.value, list));
    if (!page.value.nextCursor) break;
    page = await callTool(server, name, { ...args, cursor: page.value.nextCursor });
  }
  const whole = await callTool(server, name, { ...args, limit: 100000 });
  for (const list of lists) {
    if (JSON.stringify(seen.get(list)) !== JSON.stringify(listAt(whole.value, list))) {
      fail(`${name}: the pages of ${list} are not the rows of the whole answer`);
    }
  }
  return { name, args, bytes: first.bytes, pages, largest, whole: whole.bytes };
}

ensureBuilt();
const rows = [];
for (const spec of flags.packages.split(",").filter(Boolean)) {
  const tree = preparePackage(spec);
  note(`bench: ${tree.name}: ${tree.modules.length} module files, building the graph ...`);
  const server = wardenServer(tree.dir);
  try {
    await server.request("initialize", initializeParams, 60_000);
    server.notify("notifications/initialized");
    // The module with the longest lists, and the one most imported.
    let about = { score: -1 };
    let imported = { score: -1 };
    for (const module of tree.modules) {
      const { value } = await callTool(server, "code_about", { module, limit: 1 });
      const t = value.totals;
      const score = t.exports + t.imports + t.importedBy + t.symbols;
      if (score > about.score) about = { score, module };
      if (t.importedBy > imported.score) imported = { score: t.importedBy, module };
    }
    note(`bench: ${tree.name}: code_about on ${about.module}, code_blast_radius on ${imported.module}`);
    const calls = [
      ["code_about", { module: about.module }],
      ["code_blast_radius", { module: imported.module }],
      ["code_dead_exports", {}],
      ["tech_debt_check", {}],
      ["component_discover", {}],
      ["change_summary", {}],
      ["extension_list", {}],
      ["host_context", {}],
    ];
    for (const [name, args] of calls) {
      const m = await measure(server, name, args);
      rows.push([
        tree.name,
        `\`${name}\`${args.module ? ` ${args.module}` : ""}`,
        String(m.bytes),
        String(m.pages),
        String(m.largest),
        String(m.whole),
      ]);
    }
  } finally {
    await server.stop();
  }
}
print(`Answer sizes (${flags.runtime}), bytes of text; pages followed through nextCursor, every row checked once:\n`);
print(markdownTable(["package", "tool", "default", "pages", "largest page", "whole (limit 100000)"], rows));
