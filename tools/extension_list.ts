// extension_list (read): every plugin directory (the user's and the project's), what it is, who signed it,
// whether it is pinned, what it may touch and how it runs.
import * as v from "valibot";
import { defineTool } from "../core/tool.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

const Extension = v.object({
  id: v.string(),
  scope: v.picklist(["user", "project"]),
  status: v.string(),
  reason: v.nullable(v.string()),
  fix: v.nullable(v.string()),
  version: v.nullable(v.string()),
  manifestDigest: v.nullable(v.string()),
  entryDigest: v.nullable(v.string()),
  signer: v.nullable(v.object({ principal: v.nullable(v.string()), fingerprint: v.string() })),
  pinned: v.boolean(),
  risk: v.nullable(v.string()),
  capabilities: v.nullable(v.object({
    readRoots: v.array(v.string()),
    argv: v.optional(v.array(v.string())),
    writeRoots: v.optional(v.array(v.string())),
    netHosts: v.optional(v.array(v.string())),
  })),
  tools: v.array(v.string()),
  isolation: v.string(),
});

/**
 * Risk class `read`; it reads only the audit the host made at startup (in
 * `ctx.host`), never the plugin files themselves, and shows no host paths.
 */
export const tool = defineTool({
  name: "extension_list",
  title: "Installed extensions",
  description:
    "Lists every plugin directory, the user's and the project's (.warden/plugins/), with its id, scope (user or project), version, manifest and entry digests, signer principal and key fingerprint, status (verified, unsigned, bad-signature, unknown-signer, revoked, key-expired, wrong-namespace, entry-digest-mismatch, not-canonical, invalid-manifest, not-pinned, pin-mismatch, name-conflict, duplicate-id: the same id in both scopes, project-not-accepted: the project's trust files were not accepted as they are, deno-missing: trusted, but no deno here to run it) and why, whether it is pinned, risk class, declared capabilities, tools and the isolation it runs under. The user's first, then the project's, each sorted by id; totals by status lead, and plugins beyond a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    status: v.optional(
      v.pipe(v.string(), v.description("Only plugins with this status, e.g. verified or not-pinned.")),
    ),
    ...pageInput("plugins"),
  }),
  output: v.object({
    totals: v.record(v.string(), v.number()),
    ...pageOutput,
    extensions: v.array(Extension),
  }),
  handler: async (args, ctx) => {
    const extensions = ctx.host.extensions.filter((record) =>
      args.status === undefined || record.status === args.status
    );
    const totals: Record<string, number> = {};
    for (const record of ctx.host.extensions) totals[record.status] = (totals[record.status] ?? 0) + 1;
    const answer = { totals, extensions: extensions.map((record) => ({ ...record, tools: [...record.tools] })) };
    return await paginate(answer, { tool: "extension_list", args, lists: ["extensions"] });
  },
});
