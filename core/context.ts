// Builds the context a tool receives, by risk class. The context is the only
// door a tool has to files, processes and the network; each class gets the
// capabilities it is allowed and no others.
import type { RootFs } from "./roots.ts";
import type { ClientLogLevel, ContextByRisk, HostFacts, ReadContext, RiskClass } from "./tool.ts";

/** What the host supplies for one call. */
export interface ContextParts {
  /** Made on first use (see call.ts). */
  readonly signal: () => AbortSignal;
  readonly fs: RootFs;
  readonly host: HostFacts;
  /** Present when the client sent a progress token. */
  readonly sendProgress?: (progress: number, total?: number, message?: string) => Promise<void>;
  readonly sendLog?: (level: ClientLogLevel, data: unknown) => void;
}

/**
 * The `read` context. A class rather than an object of closures: one is made
 * per call, and this keeps a trivial call's overhead to a few allocations.
 */
class ReadCallContext implements ReadContext {
  readonly #parts: ContextParts;
  #lastProgress = -Infinity;
  readonly fs: RootFs;
  readonly host: HostFacts;

  constructor(parts: ContextParts) {
    this.#parts = parts;
    this.fs = parts.fs;
    this.host = parts.host;
  }

  get signal(): AbortSignal {
    return this.#parts.signal();
  }

  progress(progress: number, total?: number, message?: string): Promise<void> {
    const { sendProgress } = this.#parts;
    // The protocol requires strictly increasing progress; a stale value is not an error worth failing a call for.
    if (!sendProgress || !Number.isFinite(progress) || progress <= this.#lastProgress || this.signal.aborted) {
      return Promise.resolve();
    }
    this.#lastProgress = progress;
    return sendProgress(progress, total, message).catch(() => {});
  }

  log(level: ClientLogLevel, data: unknown): void {
    this.#parts.sendLog?.(level, data);
  }
}

const BUILDERS: { [R in RiskClass]: (parts: ContextParts) => ContextByRisk[R] } = {
  read: (parts) => new ReadCallContext(parts),
  // gate and external-side-effect add spawn, write and fetch in their own issue;
  // until then they receive exactly the read capabilities.
  gate: (parts) => new ReadCallContext(parts),
  "external-side-effect": (parts) => new ReadCallContext(parts),
};

/** The context for a tool of class `risk`. */
export function createContext<R extends RiskClass>(risk: R, parts: ContextParts): ContextByRisk[R] {
  return BUILDERS[risk](parts);
}
