// SDK schemas the tests need, from the SDK itself (not the vendor bundle deno.json maps types.js to).
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/types.d.ts"
export { LoggingMessageNotificationSchema } from "../node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";
