// A generated TypeScript tree for the benchmarks, the same on every machine: code_intel.mjs compares warden's graph
// with madge and knip on it, gate.mjs runs warden's hygiene checks over a change to it.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** mulberry32: a small seeded PRNG, so the tree is the same on every machine. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const TREE_VERSION = 1;

/**
 * 8 layers of modules; a module imports two to four functions (and sometimes
 * a type, with `import type`) of modules one or two layers down, with `.js`
 * specifiers as NodeNext wants. src/index.ts imports every module for its side
 * effects, which binds nothing, so that every module is reachable for knip
 * without changing which exports are dead. Returns what is known by construction.
 */
export function generateTree(dir, count) {
  const layers = 8;
  const perLayer = Math.ceil(count / layers);
  const random = prng(42);
  const name = (layer, i) => `src/layer${layer}/mod${i}.ts`;
  const files = new Map();
  const imports = new Map(); // module -> Set of imported modules
  const used = new Set(); // module#export
  for (let layer = 0; layer < layers; layer++) {
    for (let i = 0; i < perLayer; i++) {
      const self = name(layer, i);
      const deps = new Map(); // module -> Set(names)
      if (layer > 0) {
        const n = 2 + Math.floor(random() * 3);
        for (let k = 0; k < n; k++) {
          const depLayer = Math.max(0, layer - 1 - Math.floor(random() * 2));
          // Skewed towards low indexes, so that some modules have many dependents.
          const dep = name(depLayer, Math.floor(perLayer * random() ** 3));
          const fn = `compute${Math.floor(random() * 4)}`;
          if (!deps.has(dep)) deps.set(dep, new Set());
          deps.get(dep).add(fn);
          if (random() < 0.3) deps.get(dep).add("type Options");
        }
      }
      const lines = [`// ${self}: generated module ${i} of layer ${layer}.`];
      let alias = 0;
      const calls = [];
      for (const [dep, names] of deps) {
        const spec = path.posix.relative(path.posix.dirname(self), dep).replace(/\.ts$/, ".js");
        const specifier = spec.startsWith(".") ? spec : `./${spec}`;
        const parts = [...names].map((n) => {
          if (n.startsWith("type ")) return `type Options as Options${alias++}`;
          const local = `${n}_${alias++}`;
          calls.push(local);
          return `${n} as ${local}`;
        });
        lines.push(`import { ${parts.join(", ")} } from "${specifier}";`);
        for (const n of names) used.add(`${dep}#${n.replace(/^type /, "")}`);
      }
      imports.set(self, new Set(deps.keys()));
      lines.push(
        "",
        "/** Options every function here takes. */",
        "export interface Options {",
        "  readonly scale: number;",
        "  readonly label?: string;",
        "}",
        "",
        `export type Result = { readonly value: number; readonly from: "${self}" };`,
        "",
      );
      for (let f = 0; f < 4; f++) {
        lines.push(
          `/** Computes value ${f} of this module. */`,
          `export function compute${f}(input: number, options: Options = { scale: ${f + 1} }): number {`,
          `  let total = input * options.scale;`,
          `  for (let step = 0; step < ${2 + f}; step++) {`,
          `    total = step % 2 === 0 ? total + step : total - ${f};`,
          "  }",
          ...(f === 0 && calls.length ? [`  total += ${calls.map((c) => `${c}(total)`).join(" + ")};`] : []),
          "  return total;",
          "}",
          "",
        );
      }
      lines.push(`export const describe = (value: number): Result => ({ value, from: "${self}" });`, "");
      files.set(self, lines.join("\n"));
    }
  }
  files.set(
    "src/index.ts",
    [...files.keys()].map((f) => `import "./${f.slice(4).replace(/\.ts$/, ".js")}";`).join("\n") + "\n",
  );
  rmSync(dir, { recursive: true, force: true });
  for (const [file, text] of files) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  mkdirSync(path.join(dir, ".git"), { recursive: true });
  writeFileSync(path.join(dir, "package.json"), '{ "name": "generated", "private": true, "type": "module" }\n');
  writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "nodenext", target: "es2022", strict: true }, include: ["src"] }) +
      "\n",
  );
  // What is known by construction.
  const dead = [];
  for (const file of files.keys()) {
    if (file === "src/index.ts") continue;
    for (const n of ["Options", "Result", "compute0", "compute1", "compute2", "compute3", "describe"]) {
      if (!used.has(`${file}#${n}`)) dead.push(`${file}#${n}`);
    }
  }
  const importers = new Map();
  for (const [from, deps] of imports) {
    for (const dep of deps) {
      if (!importers.has(dep)) importers.set(dep, new Set());
      importers.get(dep).add(from);
    }
  }
  const target = [...importers].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1))[0][0];
  const all = new Set();
  for (let frontier = [target]; frontier.length;) {
    const next = [];
    for (const t of frontier) {
      for (const from of importers.get(t) ?? []) if (!all.has(from)) all.add(from), next.push(from);
    }
    frontier = next;
  }
  // Every module is also reached by src/index.ts, which imports them all.
  all.add("src/index.ts");
  const truth = {
    version: TREE_VERSION,
    count: files.size,
    target,
    direct: importers.get(target).size + 1,
    dependents: all.size,
    dead: dead.sort(),
  };
  writeFileSync(path.join(dir, ".bench-truth.json"), JSON.stringify(truth) + "\n");
  return truth;
}
