// Precision and recall of the untrusted-text detector on its labelled corpus
// (tools/lib/untrusted/corpus/: round 1, written with the rules, and rounds
// 2 to 5 under round<n>/, each written before it was first run; round 5
// after the last revision of the rules), and its hit rate over this
// repository's own Markdown (`git ls-files '*.md'`): the figures
// scripts/README.md quotes.
// Usage: node_modules/.bin/deno run --allow-read --allow-env --allow-run=git scripts/detector_figures.ts [--list]
//          [--scan <dir>[:<ext>,…]]…
//   --list                 also print each item the detector gets wrong and each scanned file with a signal
//   --scan <dir>:<exts>    also the hit rate over the files under <dir> with those endings (default .md), e.g.
//                          --scan node_modules:.md,.d.ts: other people's prose and code comments
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { detectInstructions, LOG_TAIL, type Signal } from "../tools/lib/untrusted/detector.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const corpusDir = path.join(root, "tools/lib/untrusted/corpus");
const args = process.argv.slice(2);
const list = args.includes("--list");
const scans = args.flatMap((arg, i) => (arg === "--scan" && args[i + 1] ? [args[i + 1]] : [])).map((spec) => {
  const colon = spec.lastIndexOf(":");
  return colon > 0
    ? { dir: spec.slice(0, colon), exts: spec.slice(colon + 1).split(",") }
    : { dir: spec, exts: [".md"] };
});

/** The corpus's labels: its files. `injection` is the positive label. */
const LABELS = ["injection", "security_prose", "ordinary"] as const;
type Label = (typeof LABELS)[number];
const SETS = [
  ["round 1 (development)", ""],
  ["round 2", "round2/"],
  ["round 3", "round3/"],
  ["round 4", "round4/"],
  ["round 5", "round5/"],
] as const;

interface Item {
  readonly id: string;
  readonly form: string;
  readonly text: string;
}

function readCorpus(set: string, label: Label): Item[] | undefined {
  const file = path.join(corpusDir, set, `${label}.jsonl`);
  if (!existsSync(file)) return undefined;
  return readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "").map((line) =>
    JSON.parse(line) as Item
  );
}

function signalsOf(text: string, kind: "text" | "path"): readonly Signal[] {
  return detectInstructions([{ source: "output", field: "text", text, kind }]).signals;
}

const percent = (n: number, d: number) => d === 0 ? "n/a" : `${(100 * n / d).toFixed(1)}%`;
const describe = (signals: readonly Signal[]) => [...new Set(signals.map((s) => s.rule))].join(", ");

const byRule = new Map<string, { injection: number; other: number }>();
const wrong: string[] = [];
const total = { tp: 0, fp: 0, fn: 0 };
for (const [name, set] of SETS) {
  const counts = new Map<Label, { items: number; flagged: number }>();
  for (const label of LABELS) {
    const items = readCorpus(set, label);
    if (items === undefined) continue;
    const count = { items: 0, flagged: 0 };
    counts.set(label, count);
    for (const item of items) {
      const signals = signalsOf(item.text, item.form === "path" ? "path" : "text");
      count.items++;
      if (signals.length > 0) count.flagged++;
      for (const rule of new Set(signals.map((s) => s.rule))) {
        const entry = byRule.get(rule) ?? { injection: 0, other: 0 };
        if (label === "injection") entry.injection++;
        else entry.other++;
        byRule.set(rule, entry);
      }
      if (label === "injection" ? signals.length === 0 : signals.length > 0) {
        const shown = item.text.length > 100 ? `${item.text.slice(0, 97)}...` : item.text;
        const what = signals.length === 0 ? "missed" : `fired ${describe(signals)}`;
        wrong.push(`  ${item.id} (${name} ${label}, ${item.form}): ${what}: ${JSON.stringify(shown)}`);
      }
    }
  }
  if (counts.size === 0) continue;
  const injection = counts.get("injection") ?? { items: 0, flagged: 0 };
  const tp = injection.flagged;
  const fn = injection.items - tp;
  const fp = [...counts].filter(([label]) => label !== "injection").reduce((n, [, c]) => n + c.flagged, 0);
  total.tp += tp;
  total.fp += fp;
  total.fn += fn;
  const parts = [...counts].map(([label, c]) => `${label} ${c.flagged} of ${c.items} with a signal`);
  console.log(`${name} set: ${parts.join(", ")}`);
  console.log(
    `  precision ${percent(tp, tp + fp)} (${tp}/${tp + fp}), recall ${percent(tp, tp + fn)} (${tp}/${tp + fn})`,
  );
}
const { tp, fp, fn } = total;
console.log(
  `all sets: precision ${percent(tp, tp + fp)} (${tp}/${tp + fp}), recall ${percent(tp, tp + fn)} (${tp}/${tp + fn})`,
);
console.log("items each rule fires on (injections / others):");
for (const [rule, { injection, other }] of [...byRule].sort((a, b) => a[0].localeCompare(b[0]))) {
  console.log(`  ${rule.padEnd(22)} ${injection} / ${other}`);
}
if (list && wrong.length > 0) console.log(`wrong:\n${wrong.join("\n")}`);

/** The hit rate over files: how many carry at least one signal (a log-sized tail of each, as run_checks scans). */
function hitRate(label: string, files: readonly string[], base: string): void {
  const hits: string[] = [];
  for (const file of files) {
    const signals = detectInstructions([
      { source: "output", field: file, text: readFileSync(path.join(base, file), "utf8"), limit: LOG_TAIL },
    ]).signals;
    if (signals.length > 0) hits.push(`  ${file}: ${describe(signals)}`);
  }
  console.log(
    `${label}: ${hits.length} of ${files.length} files with a signal (${percent(hits.length, files.length)})`,
  );
  if (list && hits.length > 0) console.log(hits.join("\n"));
}

const tracked = execFileSync("git", ["ls-files", "*.md"], { cwd: root, encoding: "utf8" }).split("\n")
  .filter((f) => f !== "");
hitRate("this repository's Markdown (git ls-files '*.md')", tracked, root);

function filesUnder(dir: string, exts: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && exts.some((ext) => entry.name.endsWith(ext))) out.push(child);
    }
  };
  walk("");
  return out.sort();
}
for (const { dir, exts } of scans) {
  const base = path.resolve(dir);
  hitRate(`${exts.join(", ")} files under ${dir}`, filesUnder(base, exts), base);
}
