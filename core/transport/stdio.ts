// Newline-delimited JSON-RPC over stdin/stdout. Unlike the SDK's transport it
// answers a line that is not JSON with -32700 and a malformed message with
// -32600 instead of dropping them, it keeps count of the requests it read and
// answers each one exactly once, and it writes a SerializedResult's text as is
// (the frozen catalog is serialized once) without serializing it again.
import { concatBytes } from "../bytes.ts";
import { received } from "../errors.ts";
import { platform } from "../platform/mod.ts";

/** A JSON-RPC 2.0 message as it travels; shape checked, contents not. */
export type JsonRpcMessage = Record<string, unknown>;

/** Longest line accepted; a longer one is answered with -32600 and dropped. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Deepest nesting accepted. Validators, hashes and error messages walk a
 * message recursively; a deeper one would overflow their stack halfway.
 */
export const MAX_DEPTH = 128;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INTERNAL_ERROR = -32603;

/**
 * A result whose JSON text is made already (the frozen catalog's tools/list, a tool's answer whose text content is
 * its structured content): a handler returns it in place of the value, and the transport writes that text as is
 * instead of serializing the value again. Should anything else serialize it, toJSON gives the value back.
 */
export class SerializedResult {
  constructor(readonly json: string) {}
  toJSON(): unknown {
    return JSON.parse(this.json);
  }
}

/** A JSON-RPC request id as JSON can carry it (JSON has no NaN or Infinity). */
export type RequestId = string | number;

export function isId(value: unknown): value is RequestId {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}

/** An id as a key: 1 and "1" are different ids, 1 and 1.0 the same one. */
function keyOf(id: RequestId): string {
  return typeof id === "string" ? `s${id}` : `n${id}`;
}

/** Whether `value` nests deeper than `limit` objects and arrays; without recursion, so at any depth. */
function deeperThan(value: unknown, limit: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const next = values.pop();
    const depth = depths.pop() as number;
    if (typeof next !== "object" || next === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(next) ? next : Object.values(next)) {
      if (typeof child === "object" && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Why a parsed value is not a JSON-RPC 2.0 message, or undefined when it is one. */
function shapeProblem(message: unknown, length: number): string | undefined {
  // Nesting deeper than the limit takes two characters a level: a short line cannot.
  if (length > 2 * MAX_DEPTH && deeperThan(message, MAX_DEPTH)) {
    return `the message nests objects and arrays deeper than ${MAX_DEPTH} levels`;
  }
  if (Array.isArray(message)) return "batches are not supported; send one message per line";
  if (typeof message !== "object" || message === null) return "expected a JSON object";
  const m = message as JsonRpcMessage;
  if (m.jsonrpc !== "2.0") return 'expected "jsonrpc": "2.0"';
  if ("method" in m) {
    if (typeof m.method !== "string") return "method must be a string";
    if ("id" in m && !isId(m.id)) return "id must be a string or an integer";
    if ("params" in m && (typeof m.params !== "object" || m.params === null || Array.isArray(m.params))) {
      return "params must be an object";
    }
    return undefined;
  }
  if (!isId(m.id) && m.id !== null) return "a response needs an id";
  if (!("result" in m) && !("error" in m)) return "expected a method, a result or an error";
  return undefined;
}

/**
 * The server's stdio transport. Structurally it is the SDK's `Transport`;
 * it imports nothing from the SDK so that the SDK stays in one module.
 */
export class StdioTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Called once a message is written out: work a response need not wait for goes here. */
  onsent?: () => void;
  /**
   * Called once at the end of input: no message follows, and the requests in
   * flight still get their answers. Without it, the end of input closes the transport.
   */
  onend?: () => void;

  /** Requests read and not answered yet, by id: each gets exactly one answer. */
  readonly #inFlight = new Map<string, RequestId>();
  #idleWaiters: (() => void)[] = [];
  #chunks: Uint8Array[] = [];
  #pending = 0;
  #discarding = false;
  #ended = false;
  #closed = false;
  /** Lines written in this run of microtasks, sent with one write once it ends. */
  #outgoing = "";
  readonly #decoder = new TextDecoder();

  start(): Promise<void> {
    platform().readStdin((chunk) => this.#read(chunk), () => this.#end());
    return Promise.resolve();
  }

  /** How many requests wait for their answer. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Whether the request with this id waits for its answer. */
  waiting(id: RequestId): boolean {
    return this.#inFlight.has(keyOf(id));
  }

  /** A request that gets no answer by design (the client cancelled it): stop waiting for one. */
  forget(id: RequestId): void {
    if (this.#inFlight.delete(keyOf(id))) this.#wakeIfIdle();
  }

  /** Resolves true once no request waits for its answer, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.#inFlight.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#idleWaiters = this.#idleWaiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      this.#idleWaiters.push(wake);
    });
  }

  /** Answers every request still in flight with this error: the last resort before the process ends. */
  abandon(code: number, message: string): void {
    for (const id of [...this.#inFlight.values()]) void this.send({ jsonrpc: "2.0", id, error: { code, message } });
  }

  #wakeIfIdle(): void {
    if (this.#inFlight.size > 0 || this.#idleWaiters.length === 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    // A last line without its newline is a message all the same.
    if (this.#chunks.length > 0 || this.#discarding) this.#line();
    if (this.onend) this.onend();
    else void this.close();
  }

  #read(chunk: Uint8Array): void {
    if (this.#ended) return;
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      this.#take(chunk.subarray(start, i));
      this.#line();
      start = i + 1;
    }
    // A partial line outlives this chunk, whose buffer the platform may reuse: copy it.
    if (start < chunk.length) this.#take(chunk.slice(start));
  }

  #take(part: Uint8Array): void {
    if (this.#discarding) return;
    this.#pending += part.length;
    if (this.#pending > MAX_LINE_BYTES) {
      this.#discarding = true;
      this.#chunks = [];
      this.#write({
        jsonrpc: "2.0",
        id: null,
        error: { code: INVALID_REQUEST, message: `Invalid Request: line longer than ${MAX_LINE_BYTES} bytes` },
      });
      return;
    }
    if (part.length > 0) this.#chunks.push(part);
  }

  #line(): void {
    const chunks = this.#chunks;
    const discarding = this.#discarding;
    this.#chunks = [];
    this.#pending = 0;
    this.#discarding = false;
    if (discarding) return;
    let text = chunks.length === 1 ? this.#decoder.decode(chunks[0]) : this.#decoder.decode(concatBytes(chunks));
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.#write({
        jsonrpc: "2.0",
        id: null,
        error: { code: PARSE_ERROR, message: `Parse error: ${(error as Error).message}` },
      });
      return;
    }
    const problem = shapeProblem(message, text.length);
    if (problem) {
      const id = (message as JsonRpcMessage | null)?.id;
      this.#write({
        jsonrpc: "2.0",
        id: isId(id) ? id : null,
        error: { code: INVALID_REQUEST, message: `Invalid Request: ${problem}` },
      });
      return;
    }
    const m = message as JsonRpcMessage;
    const id = m.id;
    const isRequest = "method" in m && isId(id);
    if (isRequest) {
      const key = keyOf(id);
      if (this.#inFlight.has(key)) {
        // Its answer could not be told from the other one's, nor could a cancellation.
        this.#write({
          jsonrpc: "2.0",
          id,
          error: {
            code: INVALID_REQUEST,
            message: `Invalid Request: id ${
              received(id)
            } is already used by a request in flight; give each request its own id`,
          },
        });
        return;
      }
      this.#inFlight.set(key, id);
    }
    try {
      this.onmessage?.(m);
    } catch (error) {
      this.onerror?.(error as Error);
      if (isRequest && this.waiting(id)) {
        void this.send({
          jsonrpc: "2.0",
          id,
          error: { code: INTERNAL_ERROR, message: `Internal error: ${(error as Error)?.message ?? String(error)}` },
        });
      }
    }
  }

  #write(message: JsonRpcMessage): void {
    const result = message.result;
    const cached = result instanceof SerializedResult ? result.json : undefined;
    let line: string;
    try {
      line = cached === undefined
        ? JSON.stringify(message)
        : `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${cached}}`;
    } catch (error) {
      // A value JSON cannot hold (a BigInt, a cycle): the request still gets its one answer.
      line = JSON.stringify({
        jsonrpc: "2.0",
        id: isId(message.id) ? message.id : null,
        error: {
          code: INTERNAL_ERROR,
          message: `Internal error: the answer could not be written as JSON (${(error as Error)?.message})`,
        },
      });
    }
    if (this.#outgoing === "") queueMicrotask(() => this.flush());
    this.#outgoing += line + "\n";
  }

  /** Writes the lines queued: answers released together (a ledger batch) share one write. */
  flush(): void {
    if (this.#outgoing === "") return;
    const text = this.#outgoing;
    this.#outgoing = "";
    platform().writeStdout(text);
    this.onsent?.();
  }

  send(message: JsonRpcMessage): Promise<void> {
    const id = message.id;
    if (!("method" in message) && isId(id)) {
      // An answer: the one its request gets, or none when the request was answered already.
      if (!this.#inFlight.delete(keyOf(id))) {
        this.onerror?.(new Error(`A second answer to request ${received(id)} was not sent`));
        return Promise.resolve();
      }
      this.#write(message);
      this.#wakeIfIdle();
      return Promise.resolve();
    }
    this.#write(message);
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.onclose?.();
    return Promise.resolve();
  }
}
