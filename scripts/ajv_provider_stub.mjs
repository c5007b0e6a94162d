// Stands in for the SDK's validation/ajv-provider.js in warden's bundles.
// The SDK's Server builds an Ajv validator only when none is passed, and uses
// it only to check elicitation replies; warden passes its own (it never
// elicits), so Ajv and ajv-formats are dead weight: ~70 kB of code that node
// compiled and ran at every start. If the SDK ever calls this, say so loudly.
export class AjvJsonSchemaValidator {
  constructor() {
    throw new Error("warden's build replaced the SDK's Ajv validator; pass jsonSchemaValidator to the Server");
  }
}
