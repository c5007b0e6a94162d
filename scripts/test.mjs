// `npm test`: builds, then runs every suite under node (on the build) and
// under deno (on the source). Fails if either run fails.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
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

if (run("build", process.execPath, ["scripts/build.mjs", "--tests"]) !== 0) process.exit(1);
const nodeTests = readdirSync(new URL("../dist/test/", import.meta.url))
  .filter((name) => name.endsWith(".test.js") && (only.length === 0 || only.some((o) => name.startsWith(o))))
  .map((name) => `dist/test/${name}`);
const denoTests = nodeTests.map((file) => file.replace(/^dist\/test\/(.*)\.js$/, "test/$1.ts"));
const nodeStatus = run("node", process.execPath, ["--test", "--test-reporter=spec", ...nodeTests]);
const denoStatus = run("deno", denoBin, ["test", "--no-prompt", "--allow-all", ...denoTests]);
process.stderr.write(
  `\nnode: ${nodeStatus === 0 ? "passed" : "FAILED"}; deno: ${denoStatus === 0 ? "passed" : "FAILED"}\n`,
);
process.exit(nodeStatus === 0 && denoStatus === 0 ? 0 : 1);
