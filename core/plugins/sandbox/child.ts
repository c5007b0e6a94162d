// The bootstrap of a plugin's child process. It runs inside a Deno process
// started with no permissions, as a `data:` URL the host builds from
// `childMain.toString()`: so `childMain` must be self-contained, with no
// imports and no reference to anything outside its own body (types excepted:
// they are erased). Deno is reached through `globalThis` because this code
// never runs in the host.
//
// Two threads:
// - the main thread relays newline-delimited JSON between the host (stdin,
//   stdout) and a Worker, and exits as soon as stdin closes, even while the
//   plugin is stuck in a loop: a plugin never outlives its host;
// - the Worker imports the plugin bundle and runs its tools. Everything the
//   plugin can do to this code (replace globals, write to stdout, post
//   messages) only harms its own calls: the host trusts nothing it receives.
//
// The bundle exports `tools` (tool name → async (args, ctx) => result) or
// `plugin` from the SDK's definePlugin (tool name → { handler, ... }). ctx has
// signal, fs (readText, list, glob, stat, stats, write, rootIds), roots (the
// same ids), spawn(argv, options?), fetch(url, options?), progress(p, total?,
// message?) and log(level, data). Every fs method, spawn and fetch is a host
// request: the host answers it, or refuses it when the plugin's risk class or
// manifest does not allow it (core/plugins/authoring/sdk.ts types them for authors).
//
// Before the bundle is imported, the worker is hardened (and so is every
// Worker the plugin starts, whose module is wrapped): no web storage (the
// Cache API would write under DENO_DIR), no Deno.openKv, no Deno internals,
// and nothing of the host's in Deno.execPath, pid, ppid or DNS errors (nor in
// node's process, which reads them).
//
// Each call comes with a token, an unguessable string the host made for it:
// every message about the call (result, host-request, progress, log) carries it, and the
// host refuses one whose token is not its call's. It lives only in the ctx
// closure and in message objects without a prototype, handled with functions
// taken before the plugin's code runs, so plugin code can use a ctx it was
// given but cannot guess another's token. (It can read the child's stdin, as
// node's fs can fd 0 without a permission, and so learn tokens of calls, but
// only of its own: every call in this child is one of this plugin's.)
//
// The messages and their fields: see protocol.ts, where the host checks them.

/** The part of the Deno namespace the main thread uses. */
interface ChildDeno {
  stdin: { readable: ReadableStream<Uint8Array> };
  stdout: { writeSync(bytes: Uint8Array): number };
  stderr: { writeSync(bytes: Uint8Array): number };
  exit(code: number): never;
}

/** The worker's global scope, as the plugin side uses it. */
interface WorkerScope {
  Deno: { exit(code?: number): void; errors: { NotCapable: new (message: string) => Error }; internal: symbol };
  Worker: new (url: string | URL, options?: WorkerOptions) => Worker;
  postMessage(message: unknown): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  close(): void;
  console: Record<string, unknown> & { error(...data: unknown[]): void };
}

/** A tool handler as a bundle exports it. */
type PluginHandler = (args: unknown, ctx: unknown) => unknown;

/** The namespace of an imported bundle. */
type BundleModule = Record<string, unknown>;

/** One protocol message, before its fields are checked. */
type Message = Record<string, unknown>;

/** The child's entry point; see the header of this file. Runs only inside the plugin's Deno process. */
export function childMain(): void {
  // Runs in the Worker: loads the bundle and answers calls.
  function pluginWorker(): void {
    // Runs first in the plugin's worker and in every Worker the plugin starts.
    function harden(): void {
      const scope = globalThis as unknown as WorkerScope & Record<string, unknown>;
      const D = scope.Deno as unknown as Record<string | symbol, unknown> & WorkerScope["Deno"];
      const NotCapable = D.errors.NotCapable;
      const fixed = (target: object, name: string, descriptor: PropertyDescriptor) =>
        Object.defineProperty(target, name, { ...descriptor, configurable: false, enumerable: true });
      // Web storage persists under DENO_DIR (which the host makes uncreatable as well).
      for (const name of ["caches", "CacheStorage", "Cache", "localStorage", "sessionStorage", "indexedDB"]) {
        delete scope[name];
      }
      delete D.openKv;
      // Deno's internals: ops and core functions that no permission check stands before.
      delete D[D.internal];
      // Values, not refusals: node's process object reads them as it loads. What a fresh pid namespace would show.
      fixed(D, "execPath", { value: () => "deno", writable: false });
      fixed(D, "pid", { get: () => 1 });
      fixed(D, "ppid", { get: () => 0 });
      // Deno's own refusal names the host's resolver address.
      fixed(D, "resolveDns", {
        value: () => Promise.reject(new NotCapable("Requires net access, run again with the --allow-net flag")),
        writable: false,
      });
      // A Worker is a fresh global scope: it gets this function first, then the module asked for.
      const prelude = "(" + harden.toString() + ")();\n";
      const Original = scope.Worker;
      function Hardened(this: unknown, url: string | URL, options?: WorkerOptions): Worker {
        if (new.target === undefined) {
          throw new TypeError("Failed to construct 'Worker': Please use the 'new' operator");
        }
        const wrapped = "data:text/javascript," +
          encodeURIComponent(prelude + "await import(" + JSON.stringify(String(url)) + ");\n");
        const target = (new.target as unknown) === Hardened ? Original : new.target;
        return Reflect.construct(Original, [wrapped, options], target) as Worker;
      }
      Object.defineProperty(Hardened, "name", { value: "Worker" });
      Hardened.prototype = Original.prototype;
      Object.defineProperty(Original.prototype, "constructor", {
        value: Hardened,
        configurable: false,
        writable: false,
      });
      Object.defineProperty(scope, "Worker", { value: Hardened, configurable: false, writable: false });
    }
    harden();

    const scope = globalThis as unknown as WorkerScope;
    // Taken before the plugin's code runs, which may replace what they come from.
    const post = scope.postMessage.bind(scope);
    const stringify = JSON.stringify;
    const parse = JSON.parse;
    const apply = Reflect.apply;
    // Deno's MessageEvent assigns its data (this.data = ...), so a setter the plugin put on a prototype would see
    // every message, call tokens included. An accessor of ours, fixed on MessageEvent.prototype, is found first.
    const eventData = new WeakMap<object, unknown>();
    const mapGet = WeakMap.prototype.get;
    const mapSet = WeakMap.prototype.set;
    const dataOf = function (this: object): unknown {
      return apply(mapGet, eventData, [this]);
    };
    Object.defineProperty(MessageEvent.prototype, "data", {
      configurable: false,
      enumerable: true,
      get: dataOf,
      set(this: object, value: unknown) {
        apply(mapSet, eventData, [this, value]);
      },
    });
    const stopImmediate = Event.prototype.stopImmediatePropagation;
    // Messages that carry a token have no prototype: a getter the plugin put on Object.prototype (toJSON) never sees them.
    const send = (message: Message) => post(stringify(message));
    const blockForever = () => {
      // Deno.exit in a worker would end only the worker and leave its calls
      // unanswered: the main thread exits the process instead, while this thread waits.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    };
    scope.Deno.exit = (code?: number) => {
      post({ exit: typeof code === "number" && Number.isInteger(code) ? code : 0 });
      blockForever();
    };
    scope.close = () => {
      post({ exit: 0 });
      blockForever();
    };
    // stdout is the protocol channel: console output goes to stderr.
    const toStderr = scope.console.error.bind(scope.console);
    for (const name of ["log", "info", "debug", "dir", "dirxml", "table"]) scope.console[name] = toStderr;

    let tools: Record<string, PluginHandler> = {};
    let rootIds: string[] = [];
    /** The host's limit on one line; the envelope of a result counts. */
    let maxMessageBytes = Infinity;
    const calls = new Map<number, AbortController>();
    /** Host requests waiting for their host-reply, by request id. */
    const waiting = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
    let nextRequestId = 1;

    const describe = (error: unknown): Message => {
      try {
        const e = error as { message?: unknown; name?: unknown; code?: unknown } | null;
        const message = typeof e?.message === "string" ? e.message : String(error);
        const out: Message = { message: message.slice(0, 4000) };
        if (typeof e?.name === "string") out.name = e.name;
        if (typeof e?.code === "string") out.code = e.code;
        return out;
      } catch {
        return { message: "an error that cannot be described" };
      }
    };
    const abortError = (signal: AbortSignal) =>
      signal.reason instanceof Error ? signal.reason : new DOMException("The call was cancelled", "AbortError");

    const hostRequest = (callId: number, token: string, op: string, args: unknown[]): Promise<unknown> => {
      const controller = calls.get(callId);
      if (!controller) return Promise.reject(new Error("Requests to the host are only possible during a call"));
      const signal = controller.signal;
      if (signal.aborted) return Promise.reject(abortError(signal));
      const id = nextRequestId++;
      return new Promise((resolve, reject) => {
        const onAbort = () => {
          waiting.delete(id);
          reject(abortError(signal));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        waiting.set(id, {
          resolve(value) {
            signal.removeEventListener("abort", onAbort);
            resolve(value);
          },
          reject(error) {
            signal.removeEventListener("abort", onAbort);
            reject(error);
          },
        });
        send({ __proto__: null, type: "host-request", id, callId, token, op, args });
      });
    };

    const load = async (message: Message) => {
      try {
        const bundle: BundleModule = await import("data:text/javascript;base64," + String(message.code));
        // Either `tools`, a record of handlers, or `plugin` (from the SDK's
        // definePlugin), whose `tools` record holds objects with a `handler`.
        const plugin = bundle.plugin as { tools?: unknown } | undefined;
        const exported = (bundle.tools ?? (typeof plugin === "object" ? plugin?.tools : undefined)) as unknown;
        if (typeof exported !== "object" || exported === null) {
          throw new Error('the bundle exports neither "tools" nor a "plugin" with tools');
        }
        const found: Record<string, PluginHandler> = {};
        for (const [name, entry] of Object.entries(exported as Record<string, unknown>)) {
          const handler = typeof entry === "object" && entry !== null
            ? (entry as { handler?: unknown }).handler
            : undefined;
          if (typeof entry === "function") {
            found[name] = entry as PluginHandler;
          } else if (typeof handler === "function") {
            found[name] = (args, ctx) => handler.call(entry, args, ctx);
          }
        }
        tools = found;
        rootIds = Array.isArray(message.rootIds) ? message.rootIds.map(String) : [];
        if (typeof message.maxMessageBytes === "number") maxMessageBytes = message.maxMessageBytes;
        send({ type: "loaded", ok: true, tools: Object.keys(found) });
      } catch (error) {
        send({ type: "loaded", ok: false, error: describe(error) });
      }
    };

    /** Whether an error is the memory limit being hit (rather than the plugin's own RangeError). */
    const outOfMemory = (error: unknown) => {
      const e = error as { name?: unknown; message?: unknown } | null;
      return e?.name === "RangeError" && typeof e.message === "string" &&
        /allocation failed|unable to grow|could not allocate|out of memory/i.test(e.message);
    };

    const call = async (message: Message) => {
      const callId = message.id as number;
      // Not String(): the plugin may have replaced it.
      const token = typeof message.token === "string" ? message.token : "";
      const controller = new AbortController();
      calls.set(callId, controller);
      const fs = Object.freeze({
        rootIds: Object.freeze([...rootIds]),
        readText: (root: unknown, path: unknown, options?: unknown) =>
          hostRequest(callId, token, "readText", [root, path, options]),
        list: (root: unknown, dir?: unknown) => hostRequest(callId, token, "list", [root, dir]),
        glob: (root: unknown, patterns: unknown, options?: unknown) =>
          hostRequest(callId, token, "glob", [root, patterns, options]),
        stat: (root: unknown, path: unknown) => hostRequest(callId, token, "stat", [root, path]),
        stats: (root: unknown, paths: unknown) => hostRequest(callId, token, "stats", [root, paths]),
        write: (root: unknown, path: unknown, data: unknown) => hostRequest(callId, token, "write", [root, path, data]),
      });
      const ctx = Object.freeze({
        signal: controller.signal,
        fs,
        roots: fs.rootIds,
        spawn: (argv: unknown, options?: unknown) => hostRequest(callId, token, "spawn", [argv, options]),
        fetch: (url: unknown, options?: unknown) => hostRequest(callId, token, "fetch", [url, options]),
        progress(progress: number, total?: number, text?: string) {
          if (!controller.signal.aborted) {
            try {
              send({ __proto__: null, type: "progress", callId, token, progress, total, message: text });
            } catch {
              // Arguments that do not serialize are dropped.
            }
          }
          return Promise.resolve();
        },
        log(level: string, data: unknown) {
          try {
            send({ __proto__: null, type: "log", callId, token, level, data });
          } catch {
            send({ __proto__: null, type: "log", callId, token, level, data: String(data) });
          }
        },
      });
      let line: string;
      try {
        const handler = Object.hasOwn(tools, String(message.tool)) ? tools[String(message.tool)] : undefined;
        if (!handler) {
          throw Object.assign(new Error(`the bundle has no tool "${String(message.tool)}"`), {
            kind: "unknown_tool",
          });
        }
        const value = await handler(message.args, ctx);
        let text: string | undefined;
        try {
          text = value === undefined ? undefined : stringify(value);
        } catch (error) {
          throw Object.assign(new Error(`it returned a value that is not JSON (${describe(error).message})`), {
            kind: "invalid_result",
          });
        }
        if (value !== undefined && text === undefined) {
          throw Object.assign(new Error(`it returned a value that is not JSON (a ${typeof value})`), {
            kind: "invalid_result",
          });
        }
        line = text === undefined
          ? `{"type":"result","callId":${callId},"token":${stringify(token)},"ok":true}`
          : `{"type":"result","callId":${callId},"token":${stringify(token)},"ok":true,"value":${text}}`;
        // A line over the host's limit would be taken for a flood: say what happened instead.
        if (line.length * 3 > maxMessageBytes && new TextEncoder().encode(line).length >= maxMessageBytes) {
          throw Object.assign(new Error(`it returned a result of more than ${maxMessageBytes} bytes`), {
            kind: "too_large",
          });
        }
      } catch (error) {
        const described = describe(error);
        const kind = (error as { kind?: unknown } | null)?.kind;
        if (kind === "unknown_tool" || kind === "invalid_result" || kind === "too_large") described.kind = kind;
        else if (outOfMemory(error)) described.kind = "memory";
        line = stringify({ __proto__: null, type: "result", callId, token, ok: false, error: described });
      } finally {
        calls.delete(callId);
      }
      post(line);
    };

    // Registered before the plugin's code runs, so it comes first, and nothing after it sees the host's messages.
    scope.addEventListener("message", (event: MessageEvent) => {
      apply(stopImmediate, event, []);
      const data: unknown = apply(dataOf, event, []);
      if (typeof data !== "string") return;
      let message: Message;
      try {
        message = parse(data);
      } catch {
        return;
      }
      switch (message.type) {
        case "load":
          load(message);
          break;
        case "call":
          call(message);
          break;
        case "cancel":
          calls.get(message.callId as number)?.abort(new DOMException("The call was cancelled", "AbortError"));
          break;
        case "host-reply": {
          const request = waiting.get(message.id as number);
          if (!request) break;
          waiting.delete(message.id as number);
          if (message.ok === true) {
            request.resolve(message.value);
          } else {
            const error = message.error as { code?: string; message?: string } | undefined;
            request.reject(
              Object.assign(new Error(String(error?.message ?? "the host request failed")), {
                name: "WardenError",
                code: String(error?.code ?? "fs_failed"),
              }),
            );
          }
          break;
        }
      }
    });
  }

  // The main thread: relay and watchdog.
  const D = (globalThis as unknown as { Deno: ChildDeno }).Deno;
  const encoder = new TextEncoder();
  const writeAll = (sink: { writeSync(bytes: Uint8Array): number }, text: string) => {
    let bytes = encoder.encode(text);
    while (bytes.length > 0) bytes = bytes.subarray(sink.writeSync(bytes));
  };
  const exit = (code: number) => D.exit(code);
  const worker = new Worker(
    "data:text/javascript," + encodeURIComponent("(" + pluginWorker.toString() + ")()"),
    { type: "module" },
  );
  worker.onmessage = (event: MessageEvent) => {
    const data = event.data as unknown;
    if (typeof data === "string") {
      try {
        writeAll(D.stdout, data + "\n");
      } catch {
        exit(0); // The host is gone.
      }
    } else if (typeof data === "object" && data !== null && typeof (data as { exit?: unknown }).exit === "number") {
      exit((data as { exit: number }).exit);
    }
  };
  worker.onerror = (event: ErrorEvent) => {
    // An uncaught error in the plugin ends the process, as it would in a program of its own.
    event.preventDefault();
    try {
      writeAll(D.stderr, `plugin error: ${event.message}\n`);
    } finally {
      exit(1);
    }
  };
  (async () => {
    const decoder = new TextDecoder();
    let parts: Uint8Array[] = [];
    const flush = (last: Uint8Array) => {
      let line = last;
      if (parts.length > 0) {
        const size = parts.reduce((sum, part) => sum + part.length, last.length);
        line = new Uint8Array(size);
        let offset = 0;
        for (const part of [...parts, last]) {
          line.set(part, offset);
          offset += part.length;
        }
        parts = [];
      }
      worker.postMessage(decoder.decode(line));
    };
    try {
      for await (const chunk of D.stdin.readable) {
        let start = 0;
        let newline: number;
        while ((newline = chunk.indexOf(10, start)) !== -1) {
          flush(chunk.subarray(start, newline));
          start = newline + 1;
        }
        if (start < chunk.length) parts.push(chunk.slice(start));
      }
    } catch {
      // A broken stdin is a closed one.
    }
    // stdin closed: the host has stopped this plugin or has exited.
    exit(0);
  })();
}

/** The child bootstrap as one JavaScript program, for a `data:` URL. */
export function childSource(): string {
  return "(" + childMain.toString() + ")();\n";
}
