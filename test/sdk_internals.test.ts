// The SDK 1.x Server's private members warden reaches for, in their one place (sdkInternals in
// core/transport/server.ts): this fails when an SDK update renames or reshapes one, before a user meets it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { sdkInternals } from "../core/transport/server.ts";
import { runtimeName } from "./helpers.ts";

const newServer = () =>
  new Server({ name: "t", version: "1" }, {
    capabilities: { tools: {} },
    jsonSchemaValidator: {
      getValidator() {
        throw new Error("not used");
      },
    },
  });

describe(`the SDK Server's internals warden uses (${runtimeName})`, () => {
  it("has its handlers (initialize and ping among them), its running requests and a cancellation hook", () => {
    const server = newServer();
    const internals = sdkInternals(server);
    assert.equal(typeof internals.handlers.get("initialize"), "function");
    assert.equal(typeof internals.handlers.get("ping"), "function");
    assert.ok(internals.running instanceof Map);
    const heard: unknown[] = [];
    internals.cancelled((id) => heard.push(id));
    // What the SDK calls on notifications/cancelled; with no such request running it does nothing more.
    (server as unknown as { _oncancel(n: unknown): unknown })._oncancel({ params: { requestId: 7 } });
    assert.deepEqual(heard, [7]);
  });

  it("names what is missing when an SDK no longer has it", () => {
    const server = newServer();
    delete (server as unknown as Record<string, unknown>)._requestHandlerAbortControllers;
    assert.throws(
      () => sdkInternals(server),
      new Error(
        "The MCP SDK's Server no longer has _requestHandlerAbortControllers as warden expects: use @modelcontextprotocol/sdk 1.32",
      ),
    );
  });
});
