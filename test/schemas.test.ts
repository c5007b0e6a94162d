// The JSON Schemas in schema/ are generated from the valibot schemas the host
// validates with; this fails when someone changes one and not the other.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { publishedSchemas } from "../scripts/write_schemas.ts";
import { repoRoot, runtimeName } from "./helpers.ts";

describe(`published JSON Schemas (${runtimeName})`, () => {
  for (const [name, text] of Object.entries(publishedSchemas())) {
    it(`schema/${name} matches the code`, () => {
      const onDisk = readFileSync(path.join(repoRoot, "schema", name), "utf8");
      assert.equal(
        onDisk,
        text,
        `regenerate with: node_modules/.bin/deno run --allow-read --allow-write=schema scripts/write_schemas.ts`,
      );
      assert.equal(JSON.parse(onDisk).$schema, "https://json-schema.org/draft/2020-12/schema");
    });
  }
});
