// Builds the context a tool receives, by risk class. The context is the only
// door a tool has to files, processes and the network; each class gets the
// capabilities it is allowed and no others.
import type { RootFs } from "./roots.ts";
import type { BaseContext, ClientLogLevel, ContextByRisk, HostFacts, ReadContext, RiskClass } from "./tool.ts";

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

function baseContext(parts: ContextParts): BaseContext {
  let last = -Infinity;
  return {
    get signal() {
      return parts.signal();
    },
    host: parts.host,
    progress(progress, total, message) {
      // The protocol requires strictly increasing progress; a stale value is not an error worth failing a call for.
      if (!parts.sendProgress || !Number.isFinite(progress) || progress <= last || parts.signal().aborted) {
        return Promise.resolve();
      }
      last = progress;
      return parts.sendProgress(progress, total, message).catch(() => {});
    },
    log(level, data) {
      parts.sendLog?.(level, data);
    },
  };
}

/** Object.assign onto the base keeps its lazy `signal` getter (a spread would call it). */
function readContext(parts: ContextParts): ReadContext {
  return Object.freeze(Object.assign(baseContext(parts), { fs: parts.fs }));
}

const BUILDERS: { [R in RiskClass]: (parts: ContextParts) => ContextByRisk[R] } = {
  read: (parts) => readContext(parts),
  // gate and external-side-effect add spawn, write and fetch in their own issue;
  // until then they receive exactly the read capabilities.
  gate: (parts) => readContext(parts),
  "external-side-effect": (parts) => readContext(parts),
};

/** The frozen context for a tool of class `risk`. */
export function createContext<R extends RiskClass>(risk: R, parts: ContextParts): ContextByRisk[R] {
  return BUILDERS[risk](parts);
}
