// Newline-delimited JSON-RPC over stdin/stdout. Unlike the SDK's transport it
// answers a line that is not JSON with -32700 and a malformed message with
// -32600 instead of dropping them, and it writes results that were
// serialized once (the frozen catalog) without serializing them again.
import { concatBytes } from "./bytes.ts";
import { platform } from "./platform/mod.ts";

/** A JSON-RPC 2.0 message as it travels; shape checked, contents not. */
export type JsonRpcMessage = Record<string, unknown>;

/** Longest line accepted; a longer one is answered with -32600 and dropped. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

function isId(value: unknown): value is string | number {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}

/** Why a parsed value is not a JSON-RPC 2.0 message, or undefined when it is one. */
function shapeProblem(message: unknown): string | undefined {
  if (Array.isArray(message)) return "batches are not supported; send one message per line";
  if (typeof message !== "object" || message === null) return "expected a JSON object";
  const m = message as JsonRpcMessage;
  if (m.jsonrpc !== "2.0") return 'expected "jsonrpc": "2.0"';
  if ("method" in m) {
    if (typeof m.method !== "string") return "method must be a string";
    if ("id" in m && !isId(m.id)) return "id must be a string or a number";
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

  readonly #preserialized = new WeakMap<object, string>();
  #chunks: Uint8Array[] = [];
  #pending = 0;
  #discarding = false;
  #closed = false;
  readonly #decoder = new TextDecoder();

  /** Registers the one JSON text of a result that no longer changes, sent as is whenever that result is. */
  preserialize(result: object, json: string): void {
    this.#preserialized.set(result, json);
  }

  start(): Promise<void> {
    platform().readStdin((chunk) => this.#read(chunk), () => void this.close());
    return Promise.resolve();
  }

  #read(chunk: Uint8Array): void {
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
    const problem = shapeProblem(message);
    if (problem) {
      const id = (message as JsonRpcMessage | null)?.id;
      this.#write({
        jsonrpc: "2.0",
        id: isId(id) ? id : null,
        error: { code: INVALID_REQUEST, message: `Invalid Request: ${problem}` },
      });
      return;
    }
    try {
      this.onmessage?.(message as JsonRpcMessage);
    } catch (error) {
      this.onerror?.(error as Error);
    }
  }

  #write(message: JsonRpcMessage): void {
    const result = message.result;
    const cached = typeof result === "object" && result !== null ? this.#preserialized.get(result) : undefined;
    const line = cached === undefined
      ? JSON.stringify(message)
      : `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${cached}}`;
    platform().writeStdout(line + "\n");
    this.onsent?.();
  }

  send(message: JsonRpcMessage): Promise<void> {
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
