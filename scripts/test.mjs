// `npm test`: builds, then runs every suite under node (on the build) and
// under deno (on the source): the end-to-end suites of test/ and the unit
// tests beside the modules (core/**/*.test.ts, tools/**/*.test.ts, built into
// dist/unit/). Fails if either run fails.
// Usage: node scripts/test.mjs [prefix ...], to run only the test files whose names start with a prefix.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
// The binary itself: the build (run first, below) points node_modules/.bin/deno at it, as README's commands use it.
const denoBin = fileURLToPath(new URL("../node_modules/.bin/deno", import.meta.url));
const only = process.argv.slice(2);

function run(label, command, args) {
  process.stderr.write(`\n== ${label}: ${[command, ...args].join(" ")}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/** The built test files under `dir` (relative to the repository root), at any depth. */
function builtTests(dir) {
  if (!existsSync(path.join(root, dir))) return [];
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return dir === "dist/test" ? [] : builtTests(rel); // dist/test/ holds fixtures below
    return entry.isFile() && entry.name.endsWith(".test.js") ? [rel] : [];
  });
}

if (run("build", process.execPath, ["scripts/build.mjs", "--tests"]) !== 0) process.exit(1);
const nodeTests = [...builtTests("dist/test"), ...builtTests("dist/unit")]
  .filter((file) => only.length === 0 || only.some((o) => path.posix.basename(file).startsWith(o)));
if (nodeTests.length === 0) {
  // node --test with no file runs every .js it finds, fixtures that hang included.
  process.stderr.write(`No test file's name starts with ${only.map((o) => JSON.stringify(o)).join(" or ")}\n`);
  process.exit(2);
}
// Each built file's source: dist/test/x.test.js is test/x.test.ts, dist/unit/core/x.test.js is core/x.test.ts.
const denoTests = nodeTests.map((file) =>
  file.replace(/^dist\/test\/(.*)\.js$/, "test/$1.ts").replace(/^dist\/unit\/(.*)\.js$/, "$1.ts")
);
// Two test files at a time: the suites mostly wait on the servers they start, and on two cores this took the node run
// from 441 s to 279 s and the deno run from 378 s to 297 s, all passing (node's default is one file at a time there).
const nodeStatus = run("node", process.execPath, [
  "--test",
  "--test-concurrency=2",
  "--test-reporter=spec",
  ...nodeTests,
]);
const denoStatus = run("deno", denoBin, ["test", "--no-prompt", "--allow-all", "--parallel", ...denoTests]);
process.stderr.write(
  `\nnode: ${nodeStatus === 0 ? "passed" : "FAILED"}; deno: ${denoStatus === 0 ? "passed" : "FAILED"}\n`,
);
process.exit(nodeStatus === 0 && denoStatus === 0 ? 0 : 1);
