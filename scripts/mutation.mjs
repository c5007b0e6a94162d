// Mutation testing of the security-critical modules with StrykerJS: plants
// one plausible bug at a time (a flipped condition, a dropped call, a changed
// constant) and runs the suites that guard that module against it, under deno
// on the source (no build per mutant). A mutant no suite notices is a test
// that is missing, or a mutant that changes nothing (see scripts/README.md).
//
// Usage: node scripts/mutation.mjs [--list | --summary | --help] [module[:FROM-TO[,FROM-TO...]] ...]
//   module: a key of MODULES below (default: all of them, in that order);
//   :FROM-TO mutates only lines FROM to TO of it (a large module in parts, each
//   with its own report, e.g. roots:1-330 then roots:331-9999)
//   --list: each module, its file and its suites; --summary: the table and the
//   survivors of the last reports, without running anything; --suites=a,b: only
//   these suites (a quick first pass: a survivor costs the fastest suite alone,
//   and the others are run by hand on the few that survive)
// StrykerJS is installed on first use into .bench/mutation/ (gitignored), never
// as a dependency of warden; reports go to .bench/mutation/reports/.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../", import.meta.url));
const workDir = path.join(repoRoot, ".bench", "mutation");
const reportsDir = path.join(workDir, "reports");
const STRYKER_VERSION = "9.6.1"; // 10.x needs node 22; warden supports node 20.

/** The ledger's writer and verifier share their suites: every describe but the deployment policy's (policy.ts's). */
const LEDGER_GUARDS = {
  suites: ["ledger_rows", "ledger_verify", "policy_ledger"],
  filter: "/^(the ledger as it writes|ledger rows|warden ledger verify|call ledger|anchored ledger chains|" +
    "a server killed mid-call|README.s ledger section)/",
};

/** Each module and the suites (test/<name>.test.ts) that guard it. */
export const MODULES = {
  lock: { file: "core/plugins/trust/lock.ts", suites: ["lock_file", "pins", "plugins"] },
  policy: { file: "core/governance/policy.ts", suites: ["policy_ledger", "ledger_rows", "pins"] },
  governed_call: { file: "core/governance/governed_call.ts", suites: ["policy_ledger", "ledger_rows", "pins"] },
  egress: {
    file: "core/doors/egress.ts",
    suites: ["egress_fetch", "egress_ranges", "egress"],
    // Every describe but the DNS rebinding one, whose fake DNS server answers by query count and fails the initial
    // run on a loaded machine.
    filter: "/^(external-side-effect|isNonPublicAddress|ctx\\.fetch (refuses|against a loopback|to declared|over)|" +
      "ctx\\.fs\\.write|declared origins)/",
  },
  spawn: { file: "core/doors/spawn.ts", suites: ["spawn_requests", "spawn_group", "gate"] },
  allowed_signers: { file: "core/plugins/trust/allowed_signers.ts", suites: ["sshsig", "pins", "plugins"] },
  sshsig: { file: "core/plugins/trust/sshsig.ts", suites: ["sshsig", "pins", "plugins"] },
  ledger: { file: "core/governance/ledger.ts", ...LEDGER_GUARDS },
  ledger_verify: { file: "core/governance/ledger_verify.ts", ...LEDGER_GUARDS },
  roots: { file: "core/doors/roots.ts", suites: ["roots", "special_files"] },
};

function fail(message) {
  process.stderr.write(`mutation: ${message}\n`);
  process.exit(2);
}

function denoBinary() {
  // The binary itself: node_modules/.bin/deno is a node script that starts it, ~100 ms more per mutant.
  const direct = path.join(repoRoot, "node_modules/@deno/linux-x64-glibc/deno");
  if (existsSync(direct)) return direct;
  const shim = path.join(repoRoot, "node_modules/.bin/deno");
  if (existsSync(shim)) return shim;
  return fail("no deno under node_modules: run npm install first");
}

/** Installs StrykerJS into .bench/mutation/ once; returns its CLI. */
function stryker() {
  const cli = path.join(workDir, "node_modules/@stryker-mutator/core/bin/stryker.js");
  const installed = path.join(workDir, "node_modules/@stryker-mutator/core/package.json");
  if (existsSync(installed) && JSON.parse(readFileSync(installed, "utf8")).version === STRYKER_VERSION) return cli;
  mkdirSync(workDir, { recursive: true });
  // A package.json of its own, so npm installs here and never touches warden's package.json or lock file.
  writeFileSync(path.join(workDir, "package.json"), JSON.stringify({ name: "warden-mutation", private: true }) + "\n");
  process.stderr.write(`mutation: installing @stryker-mutator/core@${STRYKER_VERSION} into .bench/mutation/ ...\n`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const result = spawnSync(
    npm,
    ["install", "--no-audit", "--no-fund", "--no-save", `@stryker-mutator/core@${STRYKER_VERSION}`],
    { cwd: workDir, stdio: "inherit" },
  );
  if (result.status !== 0) fail(`npm install of StrykerJS failed (status ${result.status})`);
  return cli;
}

/** The StrykerJS configuration for one module. */
function configFor(key, { file, suites, filter }, lines) {
  const deno = denoBinary();
  const tests = suites.map((s) => `test/${s}.test.ts`);
  for (const test of tests) if (!existsSync(path.join(repoRoot, test))) fail(`${test} (for ${file}) does not exist`);
  return {
    $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
    testRunner: "command",
    // --no-check: the instrumented module carries // @ts-nocheck anyway, and type checking each run costs seconds.
    // CI=true: a test that would skip (skipOrFail: a package missing, a path out of reach) fails the initial run
    // instead of passing with every mutant it guards surviving unseen (deno's node:test prints a skip as "ok").
    commandRunner: {
      command: [
        "CI=true",
        deno,
        ...["test", "--no-prompt", "--allow-all", "--no-check", "--fail-fast"],
        ...(filter ? ["--filter", `'${filter}'`] : []),
        ...tests,
      ].join(" "),
    },
    mutate: lines ? lines.split(",").map((range) => `${file}:${range}`) : [file],
    // The sandbox gets what the suites read: sources, fixtures, schemas and the vendored SDK deno.json maps.
    ignorePatterns: [
      "**",
      "!core/**",
      "!tools/**",
      "!test/**",
      "!schema/**",
      "!plugins/**",
      "!scripts/**",
      "!dist/vendor/**",
      "!deno.json",
      "!package.json",
      "!README.md",
    ],
    // Two cores shared: one mutant at a time. A mutant that hangs a suite counts as detected (Timeout).
    concurrency: 1,
    timeoutMS: 20_000,
    coverageAnalysis: "off",
    // deno runs the sources unchecked (--no-check); left on, StrykerJS would also prepend // @ts-nocheck to files that
    // are not mutated, such as a signed plugin's bundle, whose digest would then no longer match.
    disableTypeChecks: false,
    tempDirName: path.relative(repoRoot, path.join(workDir, "tmp")),
    cleanTempDir: true,
    reporters: ["clear-text", "progress", "json"],
    jsonReporter: { fileName: path.relative(repoRoot, path.join(reportsDir, `${key}.json`)) },
    clearTextReporter: { allowColor: false, logTests: false, reportMutants: false },
    thresholds: { high: 90, low: 80, break: null },
  };
}

/** Survivors and the score of one module's JSON report. */
function summarize(key) {
  const report = JSON.parse(readFileSync(path.join(reportsDir, `${key}.json`), "utf8"));
  const rows = [];
  let detected = 0;
  let valid = 0;
  const survivors = [];
  for (const [file, { mutants, source }] of Object.entries(report.files)) {
    const lines = source.split("\n");
    const offset = ({ line, column }) => lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column - 1;
    for (const m of mutants) {
      if (m.status === "Killed" || m.status === "Timeout") detected++;
      if (m.status === "Killed" || m.status === "Timeout" || m.status === "Survived" || m.status === "NoCoverage") {
        valid++;
      }
      if (m.status === "Survived" || m.status === "NoCoverage") {
        // What the mutant replaced, not its whole line: a line often holds several candidates.
        const { start, end } = m.location;
        const original = source.slice(offset(start), offset(end));
        const oneLine = (text) => text.replace(/\s+/g, " ").slice(0, 100);
        survivors.push(
          `${file}:${start.line}:${start.column} ${m.mutatorName}: ${oneLine(original)}  =>  ${
            oneLine(m.replacement ?? "")
          }`,
        );
      }
    }
  }
  rows.push({ key, valid, detected, score: valid ? (100 * detected) / valid : 100, survivors });
  return rows[0];
}

const argv = process.argv.slice(2);
if (argv.includes("--help")) {
  const lines = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
  process.stdout.write(lines.slice(0, lines.findIndex((line) => !line.startsWith("//"))).join("\n") + "\n");
  process.exit(0);
}
if (argv.includes("--list")) {
  for (const [key, { file, suites }] of Object.entries(MODULES)) {
    process.stdout.write(`${key}\t${file}\t${suites.join(" ")}\n`);
  }
  process.exit(0);
}
const summaryOnly = argv.includes("--summary");
const onlySuites = argv.find((a) => a.startsWith("--suites="))?.slice("--suites=".length).split(",");
// A run of a module, or of lines of it: its report and configuration are named module.FROM-TO.
const runs = argv.filter((a) => !a.startsWith("--")).map((arg) => {
  const [, module, lines] = /^([a-z_]+)(?::(\d+-\d+(?:,\d+-\d+)*))?$/.exec(arg) ?? [];
  if (!(module in MODULES)) fail(`unknown module ${arg}: one of ${Object.keys(MODULES).join(", ")}, [:FROM-TO,...]`);
  return { key: lines ? `${module}.${lines.replaceAll(",", "_")}` : module, module, lines };
});
const selected = runs.length ? runs : Object.keys(MODULES).map((module) => ({ key: module, module }));

const failed = [];
if (!summaryOnly) {
  const cli = stryker();
  if (!existsSync(path.join(repoRoot, "dist/vendor/mcp-sdk.js"))) fail("dist/vendor/ is missing: run npm run build");
  mkdirSync(reportsDir, { recursive: true });
  for (const { key, module, lines } of selected) {
    const configFile = path.join(workDir, `${key}.conf.json`);
    const chosen = onlySuites ? { ...MODULES[module], suites: onlySuites } : MODULES[module];
    writeFileSync(configFile, JSON.stringify(configFor(key, chosen, lines), null, 2) + "\n");
    const started = Date.now();
    const { file, suites } = chosen;
    process.stderr.write(`\nmutation: ${file}${lines ? ` lines ${lines}` : ""} against ${suites.join(", ")}\n`);
    const result = spawnSync(process.execPath, [cli, "run", configFile], { cwd: repoRoot, stdio: "inherit" });
    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    if (result.status !== 0) {
      // One module's failure (a suite that fails without any mutant, say) does not stop the others.
      process.stderr.write(`mutation: StrykerJS failed on ${key} (status ${result.status})\n`);
      failed.push(key);
      continue;
    }
    writeFileSync(path.join(reportsDir, `${key}.minutes`), minutes + "\n");
  }
}

// The summary: one line per module, then every survivor with its line and replacement.
const summaries = selected.filter(({ key }) => existsSync(path.join(reportsDir, `${key}.json`))).map(({ key }) =>
  summarize(key)
);
const title = (key) => {
  const [module, lines] = key.split(".");
  return `${MODULES[module].file}${lines ? ` lines ${lines.replaceAll("_", ", ")}` : ""}`;
};
process.stdout.write("| module | mutants | detected | score | minutes |\n|---|---:|---:|---:|---:|\n");
for (const s of summaries) {
  const minutesFile = path.join(reportsDir, `${s.key}.minutes`);
  const minutes = existsSync(minutesFile) ? readFileSync(minutesFile, "utf8").trim() : "?";
  process.stdout.write(
    `| ${title(s.key)} | ${s.valid} | ${s.detected} | ${s.score.toFixed(1)}% | ${minutes} |\n`,
  );
}
for (const s of summaries) {
  if (s.survivors.length === 0) continue;
  process.stdout.write(`\n${title(s.key)}: ${s.survivors.length} survivors\n`);
  for (const line of s.survivors) process.stdout.write(`  ${line}\n`);
}
if (failed.length) {
  process.stdout.write(
    `\nStrykerJS failed on ${failed.map(title).join(", ")}: see its output above\n`,
  );
  process.exit(1);
}
