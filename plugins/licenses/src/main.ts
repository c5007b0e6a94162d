// licenses: the licenses of a root's installed npm packages, read from
// node_modules/**/package.json. A warden plugin: it runs in a sandbox with no
// permissions and reads only through ctx.fs, which the host confines to the
// roots the operator configured.
import * as v from "valibot";
import { definePlugin } from "../../../core/plugins/authoring/sdk.ts";

/** node_modules/<name>/package.json or node_modules/@scope/<name>/package.json, at any depth. */
const PACKAGE_JSON = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/@][^/]*)\/package\.json$/;

/** The SPDX expression a package.json declares, in the forms npm has accepted over the years. */
function licenseOf(pkg: Record<string, unknown>): string | null {
  if (typeof pkg.license === "string" && pkg.license.trim() !== "") return pkg.license.trim();
  if (
    typeof pkg.license === "object" && pkg.license !== null &&
    typeof (pkg.license as { type?: unknown }).type === "string"
  ) {
    return (pkg.license as { type: string }).type;
  }
  if (Array.isArray(pkg.licenses)) {
    const types = pkg.licenses.map((l) => (typeof l === "object" && l !== null ? (l as { type?: unknown }).type : l))
      .filter((t): t is string => typeof t === "string");
    if (types.length > 0) return types.length === 1 ? types[0] : `(${types.join(" OR ")})`;
  }
  return null;
}

export const plugin = definePlugin({
  id: "licenses",
  version: "1.0.0",
  description: "Lists the licenses of the npm packages installed under a root (node_modules/**/package.json).",
  author: "warden authors <warden@warden.invalid>",
  risk: "read",
  capabilities: { readRoots: ["*"] },
  tools: {
    list: {
      title: "Dependency licenses",
      description:
        "Lists the npm packages installed under a root (every node_modules/**/package.json, nested ones included) with name, version and license, totals by license, and the packages that declare none. Answers: can we ship with these dependencies?",
      input: v.strictObject({
        root: v.optional(v.pipe(v.string(), v.description("Root id (default: the first configured root)."))),
        license: v.optional(
          v.pipe(v.string(), v.description('Only packages whose license contains this text, e.g. "GPL".')),
        ),
        limit: v.optional(
          v.pipe(
            v.number(),
            v.integer(),
            v.minValue(1),
            v.maxValue(20000),
            v.description("Most packages to list (default 2000)."),
          ),
        ),
      }),
      output: v.object({
        root: v.string(),
        packages: v.array(
          v.object({ name: v.string(), version: v.string(), license: v.nullable(v.string()), path: v.string() }),
        ),
        byLicense: v.record(v.string(), v.number()),
        unlicensed: v.array(v.string()),
        total: v.number(),
        truncated: v.boolean(),
      }),
      handler: async ({ root, license, limit }, ctx) => {
        const id = root ?? ctx.roots[0];
        const files = (await ctx.fs.glob(id, ["**/node_modules/**/package.json"], { dot: true, gitignore: false }))
          .filter((file) => PACKAGE_JSON.test(file));
        const packages: { name: string; version: string; license: string | null; path: string }[] = [];
        for (const [i, file] of files.entries()) {
          if (ctx.signal.aborted) break;
          let pkg: Record<string, unknown>;
          try {
            pkg = JSON.parse(await ctx.fs.readText(id, file));
          } catch {
            continue;
          }
          const name = typeof pkg.name === "string" ? pkg.name : PACKAGE_JSON.exec(file)![1];
          packages.push({
            name,
            version: typeof pkg.version === "string" ? pkg.version : "",
            license: licenseOf(pkg),
            path: file,
          });
          if (i % 200 === 199) {
            await ctx.progress(i + 1, files.length, `${i + 1} of ${files.length} package.json files`);
          }
        }
        packages.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.path < b.path ? -1 : 1));
        const byLicense: Record<string, number> = {};
        for (const p of packages) byLicense[p.license ?? "(none)"] = (byLicense[p.license ?? "(none)"] ?? 0) + 1;
        const selected = license === undefined ? packages : packages.filter((p) => (p.license ?? "").includes(license));
        const max = limit ?? 2000;
        return {
          root: id,
          packages: selected.slice(0, max),
          byLicense,
          unlicensed: [...new Set(packages.filter((p) => p.license === null).map((p) => p.name))],
          total: packages.length,
          truncated: selected.length > max,
        };
      },
    },
  },
});
