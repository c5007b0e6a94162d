// Writes schema/plugin-manifest.schema.json, schema/plugins-lock.schema.json, the ledger row, job store and check manifest schemas
// from the valibot schemas the host validates with, so the published JSON
// Schemas cannot drift from the code. test/schemas.test.ts fails when they do.
//   node_modules/.bin/deno run --allow-read --allow-write=schema scripts/write_schemas.ts
import { toJsonSchema } from "@valibot/to-json-schema";
import { prettyCanonicalJson } from "../core/canonical_json.ts";
import { LedgerRowSchema } from "../core/governance/ledger.ts";
import { JobStoreFileSchema } from "../core/jobs/store.ts";
import { LockSchema } from "../core/plugins/trust/lock.ts";
import { ManifestSchema } from "../core/plugins/trust/manifest.ts";
import { CheckManifestSchema } from "../tools/lib/checks/manifest.ts";

/** The published JSON Schemas, by file name under schema/. */
export function publishedSchemas(): Record<string, string> {
  const schema = (value: Parameters<typeof toJsonSchema>[0], id: string, title: string) =>
    prettyCanonicalJson({ ...toJsonSchema(value, { target: "draft-2020-12" }), $id: id, title });
  return {
    "plugin-manifest.schema.json": schema(ManifestSchema, "urn:warden:plugin-manifest:v1", "warden plugin manifest"),
    "plugins-lock.schema.json": schema(LockSchema, "urn:warden:plugins-lock:v1", "warden plugins.lock.json"),
    "ledger-row.schema.json": schema(
      LedgerRowSchema,
      "urn:warden:ledger-row:v3",
      "warden call ledger row (versions 1, 2 and 3)",
    ),
    "check-manifest.schema.json": schema(
      CheckManifestSchema,
      "urn:warden:check-manifest:v1",
      "warden repository check manifest (.warden/checks.json)",
    ),
    "job-store.schema.json": schema(
      JobStoreFileSchema,
      "urn:warden:job-store:v1",
      "warden job store file (one per server process)",
    ),
  };
}

if (import.meta.main) {
  for (const [name, text] of Object.entries(publishedSchemas())) {
    await Deno.writeTextFile(new URL(`../schema/${name}`, import.meta.url), text);
    console.error(`wrote schema/${name}`);
  }
}
