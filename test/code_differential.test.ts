// code_about and code_blast_radius against the TypeScript compiler, module by
// module, on real trees no one here wrote: the sources zod and ajv ship and
// the declarations and JavaScript the MCP SDK ships (all three installed with
// warden's own dependencies). Imports (specifiers, and which are run-time:
// what isolated-module emit keeps), exports (names, and which are type-only
// as the checker says) and every module's dependents (shortest depth, and
// whether a run-time path reaches it) must agree, outside the definition
// differences README lists ("Checked against the compiler"), each of which
// has a test of its own here.
import assert from "node:assert/strict";
import { cpSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { repoRoot, runtimeName, type Session, skipOrFail, tempDir } from "./helpers.ts";
import { call, connectRoot, readArchive, writeTree } from "./fixtures/code/harness.ts";
import { compilerReference, type Reference, type ReferenceDependent } from "./compiler_reference.ts";

interface About {
  exports: { name: string; typeOnly: boolean }[];
  imports: { specifier: string; line: number; kind: string; typeOnly: boolean; names: string[] }[];
  nextCursor?: string;
}
interface Radius {
  direct: { path: string; typeOnly: boolean }[];
  transitive: { path: string; depth: number; typeOnly: boolean }[];
  nextCursor?: string;
}

/**
 * The trees: a directory an installed package ships, copied as is, or a fixture archive of the forms issue 14 found
 * wrong (whose hand-written answers code_intel.test.ts holds), so that the checker confirms them too.
 */
const TREES: readonly { name: string; source?: string; archive?: string }[] = [
  { name: "zod", source: "node_modules/zod/src" },
  { name: "ajv", source: "node_modules/ajv/lib" },
  { name: "mcp-sdk", source: "node_modules/@modelcontextprotocol/sdk/dist/esm" },
  ...["merged_exports", "runtime_edges", "type_only_exports", "augmentation"].map((archive) => ({
    name: `fixture ${archive}`,
    archive,
  })),
];
const TSCONFIG = { compilerOptions: { module: "esnext", moduleResolution: "bundler", target: "esnext" } };
const MODULE = /\.(?:[mc]?[jt]s|[jt]sx)$/;

/** A tool's whole answer, pages followed: `lists` are the arrays a later page continues. */
async function whole<T extends { nextCursor?: string }>(
  session: Session,
  tool: string,
  args: Record<string, unknown>,
  lists: readonly (keyof T)[],
): Promise<T> {
  const answer = await call<T>(session, tool, args);
  for (let cursor = answer.nextCursor; cursor !== undefined;) {
    const page = await call<T>(session, tool, { ...args, cursor });
    for (const list of lists) (answer[list] as unknown[]).push(...(page[list] as unknown[]));
    cursor = page.nextCursor;
  }
  return answer;
}

function filesUnder(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...filesUnder(dir, rel));
    else if (entry.isFile() && MODULE.test(entry.name)) out.push(rel);
  }
  return out.sort();
}

/** One disagreement: what, where, and the definition difference that explains it ("" for none). */
interface Mismatch {
  readonly tree: string;
  readonly module: string;
  readonly what: string;
  readonly explained: string;
}

/**
 * The definition differences README lists, by the names the test counts them under. Each is recognised by its
 * shape, never by a file name, so that a new case of another kind fails.
 */
const EXPLAINED: Readonly<Record<string, string>> = {
  elidedByUse: "an import whose names are used only as types, or not at all",
  declarationBeside: "a JavaScript module beside its own declaration file",
};

/** Counts of a multiset of strings. */
function counts(list: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of list) out.set(item, (out.get(item) ?? 0) + 1);
  return out;
}

function compareModule(tree: string, module: string, about: About, reference: Reference): Mismatch[] {
  const out: Mismatch[] = [];
  const add = (what: string, explained = "") => out.push({ tree, module, what, explained });
  const ref = reference.modules.get(module)!;

  // Imports: the specifiers, as many times as written.
  const ours = counts(about.imports.map((i) => i.specifier));
  const theirs = counts(ref.imports);
  for (const specifier of new Set([...ours.keys(), ...theirs.keys()])) {
    if (ours.get(specifier) !== theirs.get(specifier)) {
      add(
        `imports ${JSON.stringify(specifier)} ${ours.get(specifier) ?? 0} times, the compiler ${
          theirs.get(specifier) ?? 0
        }`,
      );
    }
  }
  for (const specifier of ref.unseen) {
    add(`preProcessFile names ${JSON.stringify(specifier)}, the compiler's tree does not`);
  }
  // Run-time imports: README's rule on the compiler's tree, and what isolated-module emit keeps.
  const byForm = counts(ref.byForm);
  const emitted = counts(ref.runtime);
  for (const specifier of ours.keys()) {
    const kept = about.imports.filter((i) => i.specifier === specifier && !i.typeOnly).length;
    const rule = byForm.get(specifier) ?? 0;
    const emit = emitted.get(specifier) ?? 0;
    if (kept !== rule) add(`${kept} run-time imports of ${JSON.stringify(specifier)}, by their form ${rule}`);
    else if (kept !== emit) {
      add(
        `${kept} run-time imports of ${JSON.stringify(specifier)}, the emit keeps ${emit}`,
        emit < kept ? "elidedByUse" : "",
      );
    }
  }

  // Exports: names, and type-only as the checker says.
  const exported = new Map(about.exports.map((e) => [e.name, e.typeOnly]));
  if (exported.size !== about.exports.length) add("lists a name twice among its exports");
  for (const [name, typeOnly] of exported) {
    if (!ref.exports.has(name)) add(`exports ${name}, the checker does not`);
    else if (ref.exports.get(name) !== typeOnly) {
      add(
        `exports ${name} ${typeOnly ? "type-only" : "as a value"}, the checker ${
          typeOnly ? "as a value" : "type-only"
        }`,
      );
    }
  }
  for (const name of ref.exports.keys()) if (!exported.has(name)) add(`misses the export ${name}`);
  return out;
}

function compareRadius(tree: string, module: string, radius: Radius, reference: Reference): Mismatch[] {
  const ours = new Map<string, { depth: number; runtime: boolean }>([
    ...radius.direct.map((d) => [d.path, { depth: 1, runtime: !d.typeOnly }] as const),
    ...radius.transitive.map((t) => [t.path, { depth: t.depth, runtime: !t.typeOnly }] as const),
  ]);
  const differences = (theirs: Map<string, ReferenceDependent>) => {
    const out: { what: string; byForm: boolean }[] = [];
    for (const [file, mine] of ours) {
      const ref = theirs.get(file);
      if (!ref) out.push({ what: `dependent ${file} the compiler does not see`, byForm: false });
      else if (ref.depth !== mine.depth || ref.runtime !== mine.runtime) {
        const show = (depth: number, runtime: boolean) => `depth ${depth} ${runtime ? "run-time" : "type-only"}`;
        out.push({
          what: `dependent ${file} at ${show(mine.depth, mine.runtime)}, the compiler ${show(ref.depth, ref.runtime)}`,
          // Run-time only through imports the emit drops for want of value uses.
          byForm: ref.depth === mine.depth && mine.runtime === ref.runtimeByForm,
        });
      }
    }
    for (const file of theirs.keys()) {
      if (!ours.has(file)) out.push({ what: `misses the dependent ${file}`, byForm: false });
    }
    return out;
  };
  const plain = differences(reference.dependents(module));
  if (plain.length === 0) return [];
  // Where warden's answer is the compiler's with each x.d.ts import reaching the x.js beside it too.
  const paired = differences(reference.dependents(module, true));
  const explain = (difference: { what: string; byForm: boolean }, beside: boolean): Mismatch => ({
    tree,
    module,
    what: difference.what,
    explained: difference.byForm ? "elidedByUse" : beside ? "declarationBeside" : "",
  });
  if (paired.every((d) => d.byForm)) {
    return plain.map((d) => explain(d, !paired.some((p) => p.what === d.what)));
  }
  return plain.map((d) => explain(d, false));
}

describe(`code graph against the TypeScript compiler (${runtimeName})`, () => {
  const work = tempDir("warden-differential-");
  const found: Mismatch[] = [];
  const compared = { modules: 0, imports: 0, exports: 0, dependents: 0 };
  let session: Session | undefined;
  let missing: string | undefined;

  before(() => {
    missing = TREES.flatMap((t) => t.source ?? []).find((source) => !existsSync(path.join(repoRoot, source)));
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  for (const tree of TREES) {
    it(`agrees on every module of ${tree.name}, outside the differences README lists`, async (t) => {
      if (missing) return skipOrFail(t, `${missing} is not installed: run npm install`);
      const dir = path.join(work.dir, tree.name.replace(/ /g, "-"));
      if (tree.source) {
        cpSync(path.join(repoRoot, tree.source), dir, { recursive: true });
        writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
      } else writeTree(dir, readArchive(tree.archive!).files);
      const modules = filesUnder(dir);
      let started = performance.now();
      const reference = compilerReference(dir, modules);
      const referenceMs = performance.now() - started;
      started = performance.now();
      const own = await connectRoot(dir);
      try {
        const mismatches: Mismatch[] = [];
        for (const module of modules) {
          const about = await whole<About>(own, "code_about", { module }, ["exports", "imports"]);
          const radius = await whole<Radius>(own, "code_blast_radius", { module }, ["direct", "transitive"]);
          mismatches.push(...compareModule(tree.name, module, about, reference));
          mismatches.push(...compareRadius(tree.name, module, radius, reference));
          compared.modules++;
          compared.imports += about.imports.length;
          compared.exports += about.exports.length;
          compared.dependents += radius.direct.length + radius.transitive.length;
        }
        found.push(...mismatches);
        const unexplained = mismatches.filter((m) => m.explained === "");
        const byKind = counts(mismatches.filter((m) => m.explained).map((m) => m.explained));
        t.diagnostic(
          `${tree.name}: ${modules.length} modules; compiler ${Math.round(referenceMs)} ms, warden ${
            Math.round(performance.now() - started)
          } ms; explained: ${JSON.stringify(Object.fromEntries(byKind))}`,
        );
        assert.deepEqual(
          unexplained.slice(0, 40).map((m) => `${m.module}: ${m.what}`),
          [],
          `${unexplained.length} mismatches no definition difference explains`,
        );
      } finally {
        await own.close();
      }
    });
  }

  it("compared thousands of imports, exports and dependents, and met each listed difference", (t) => {
    if (missing) return skipOrFail(t, `${missing} is not installed: run npm install`);
    const explained = counts(found.map((m) => m.explained).filter((kind) => kind !== ""));
    t.diagnostic(JSON.stringify({ compared, explained: Object.fromEntries(explained) }));
    assert.ok(compared.modules > 500, `modules compared: ${compared.modules}`);
    assert.ok(
      compared.imports > 1500 && compared.exports > 5000 && compared.dependents > 10000,
      JSON.stringify(compared),
    );
    // A difference the trees no longer show comes off README's list.
    assert.deepEqual([...explained.keys()].sort(), Object.keys(EXPLAINED).sort());
  });
});
