// tools/call through the SDK Client: argument validation, failures, timeout,
// cancellation, progress and logging. Every failure is a result with isError
// and a message that names the problem; the server keeps serving.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect, eventually, fixtureToolsDir, runtimeName, type Session, textOf } from "./helpers.ts";

describe(`tool calls (${runtimeName})`, () => {
  let session: Session;
  const progress: { progress: number; total?: number; message?: string }[] = [];
  const logged: { level: string; data: unknown; logger?: string }[] = [];
  before(async () => {
    session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir }, args: ["--call-timeout", "400ms"] });
    session.client.setNotificationHandler(
      (await import("./sdk_schemas.ts")).LoggingMessageNotificationSchema,
      (notification) => void logged.push(notification.params),
    );
  });
  after(async () => {
    await session.close();
  });

  const cases: { title: string; args: unknown; message: RegExp }[] = [
    {
      title: "an unknown argument",
      args: { text: "a", colour: "red" },
      message: /^Unknown argument "colour": fixture_echo does not take it; it accepts text, count, nested, tags$/,
    },
    { title: "a missing argument", args: {}, message: /^Missing argument "text": expected string$/ },
    {
      title: "a wrong type",
      args: { text: 42 },
      message: /^Invalid argument "text": expected string but received 42$/,
    },
    {
      title: "a failed validation",
      args: { text: "a", count: 0 },
      message: /^Invalid argument "count": expected >=1 but received 0$/,
    },
    {
      title: "a nested path",
      args: { text: "a", nested: { flag: "yes" } },
      message: /^Invalid argument "nested.flag": expected boolean but received "yes"$/,
    },
    {
      title: "an array element",
      args: { text: "a", tags: ["x", 3] },
      message: /^Invalid argument "tags\[1\]": expected string but received 3$/,
    },
    {
      title: "a nested constructor.prototype",
      args: JSON.parse('{"text":"a","nested":{"flag":true,"constructor":{"prototype":{"polluted":true}}}}'),
      message: /^Unknown argument "nested\.constructor": fixture_echo does not take it; it accepts flag in "nested"$/,
    },
    {
      title: "prototype keys",
      args: JSON.parse('{"text":"a","__proto__":{"polluted":true}}'),
      message: /^Unknown argument "__proto__"/,
    },
  ];
  for (const { title, args, message } of cases) {
    it(`refuses ${title} by name`, async () => {
      const result = await session.client.callTool({
        name: "fixture_echo",
        arguments: args as Record<string, unknown>,
      });
      assert.equal(result.isError, true);
      assert.match(textOf(result), message);
      assert.equal((result._meta as Record<string, unknown>)?.["warden/error_code"], "invalid_arguments");
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  it("runs a valid call and returns the arguments", async () => {
    const result = await session.client.callTool({ name: "fixture_echo", arguments: { text: "hi", count: 2 } });
    assert.equal(result.isError, undefined);
    assert.deepEqual(JSON.parse(textOf(result)), { text: "hi", count: 2 });
  });

  it("turns a thrown error into an isError result naming the tool, and keeps serving", async () => {
    const result = await session.client.callTool({ name: "fixture_throws", arguments: {} });
    assert.equal(result.isError, true);
    assert.equal(textOf(result), 'Tool "fixture_throws" failed: kaboom from the fixture');
    assert.ok(
      await eventually(() => session.stderr().includes('"event":"tool_failed"')),
      "the failure is logged on stderr",
    );
    const again = await session.client.callTool({ name: "fixture_echo", arguments: { text: "still here" } });
    assert.equal(again.isError, undefined);
  });

  it("reports output that breaks the tool's own schema", async () => {
    const result = await session.client.callTool({ name: "fixture_bad_output", arguments: {} });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^Tool "fixture_bad_output" returned output that does not match its schema: count: /);
  });

  it("times out a slow call, aborts its signal and says how to raise the limit", async () => {
    const started = performance.now();
    const result = await session.client.callTool({ name: "fixture_sleep", arguments: { ms: 20_000 } });
    const elapsed = performance.now() - started;
    assert.equal(result.isError, true);
    assert.equal(
      textOf(result),
      'Tool "fixture_sleep" timed out: no result after 400ms; narrow the request or raise --call-timeout',
    );
    assert.ok(elapsed < 5000, `answered after ${Math.round(elapsed)} ms`);
    const status = await session.client.callTool({ name: "fixture_sleep_status", arguments: {} });
    assert.ok((status.structuredContent as { aborted: string[] }).aborted.some((m) => m.includes("timed out")));
  });

  it("aborts ctx.signal when the client cancels", async () => {
    const controller = new AbortController();
    // The tool's first progress notification says it is waiting on its signal.
    let sleeping!: () => void;
    const started = new Promise<void>((resolve) => (sleeping = resolve));
    const call = session.client.callTool({ name: "fixture_sleep", arguments: { ms: 20_000 } }, undefined, {
      signal: controller.signal,
      timeout: 60_000,
      onprogress: () => sleeping(),
    });
    await started;
    controller.abort("user pressed stop");
    await assert.rejects(call);
    // The cancellation went out before the rejection, and the server handles messages in order:
    // a request sent now is answered after the tool's signal fired.
    const status = await session.client.callTool({ name: "fixture_sleep_status", arguments: {} });
    const aborted = (status.structuredContent as { aborted: string[] }).aborted;
    assert.ok(aborted.some((m) => m.includes("cancelled by the client")), `aborted: ${JSON.stringify(aborted)}`);
  });

  it("sends increasing progress notifications when the client asks for them", async () => {
    const result = await session.client.callTool({ name: "fixture_progress", arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => void progress.push(p),
    });
    assert.equal(textOf(result), "done");
    assert.deepEqual(progress.map((p) => [p.progress, p.total, p.message]), [
      [1, 3, "step 1"],
      [2, 3, "step 2"],
      [3, 3, "step 3"],
    ]);
  });

  it("filters tool log messages by the level the client set", async () => {
    await session.client.setLoggingLevel("warning");
    await session.client.callTool({
      name: "fixture_log",
      arguments: { levels: ["debug", "info", "warning", "error"] },
    });
    assert.deepEqual(logged.map((m) => [m.level, m.data, m.logger]), [
      ["warning", "message at warning", "fixture_log"],
      ["error", "message at error", "fixture_log"],
    ]);
  });
});
