// What external-side-effect tools may do beyond reading: write files under
// the roots they declare (atomically, never through a symlink) and fetch
// from the origins they declare (checked again after every redirect and
// against what the name resolves to: a name that leads to a loopback or
// private address is refused unless that address itself was declared).
import { problem, received, WardenError } from "./errors.ts";
import { platform } from "./platform/mod.ts";
import { type RootFs, writableTarget } from "./roots.ts";

/** What ctx.fs.write returns. */
export interface WriteResult {
  readonly root: string;
  readonly path: string;
  readonly bytes: number;
}

/** What a tool may ask of ctx.fetch. */
export interface FetchRequest {
  readonly method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Largest body kept (default 1 MiB, at most 16 MiB); more is cut and `truncated` says so. */
  readonly maxBytes?: number;
}

/** What ctx.fetch returns: plain data, the same for built-in tools and plugins. */
export interface FetchResult {
  readonly url: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly truncated: boolean;
  readonly redirects: number;
}

/** Writes `data` to `file` in `root` for a tool that declared `writeRoots`. */
export async function writeFile(
  who: string,
  writeRoots: readonly string[],
  fs: RootFs,
  root: string,
  file: string,
  data: string | Uint8Array,
): Promise<WriteResult> {
  if (!writeRoots.includes(root)) {
    throw new WardenError(
      "capability_denied",
      problem(
        `${who} may not write in root ${received(root)}`,
        writeRoots.length ? `it declared ${writeRoots.join(", ")}` : "it declared no write root",
      ),
    );
  }
  if (typeof data !== "string" && !(data instanceof Uint8Array)) {
    throw new WardenError(
      "capability_denied",
      problem("Invalid data", `expected a string or bytes, received ${received(data)}`),
    );
  }
  const target = await writableTarget(fs, root, file);
  // Beside the target, then renamed over it: readers see the old file or the new one, never half.
  await platform().fs.writeFileAtomic(target.real, data);
  return {
    root,
    path: target.display,
    bytes: typeof data === "string" ? new TextEncoder().encode(data).length : data.length,
  };
}

/** Is `address` loopback, private, link-local, unspecified or otherwise not the public internet? */
export function isNonPublicAddress(address: string): boolean {
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address.replace(/^::ffff:/i, ""));
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 198 && (b === 18 || b === 19)) ||
      a >= 224;
  }
  const v6 = address.toLowerCase().replace(/^\[|\]$/g, "");
  return v6 === "::" || v6 === "::1" || v6.startsWith("fc") || v6.startsWith("fd") || v6.startsWith("fe8") ||
    v6.startsWith("fe9") || v6.startsWith("fea") || v6.startsWith("feb") || v6.startsWith("ff");
}

function isIpLiteral(host: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith("[");
}

/** Checks one URL against the declared origins and what its name resolves to. */
async function checkUrl(who: string, netHosts: readonly string[], url: URL): Promise<void> {
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new WardenError(
      "capability_denied",
      problem(`${who} may not fetch ${received(url.href)}`, "only http and https URLs"),
    );
  }
  if (url.username || url.password) {
    throw new WardenError(
      "capability_denied",
      problem(`${who} may not fetch ${received(url.origin)}`, "credentials in the URL are refused; send a header"),
    );
  }
  if (!netHosts.includes(url.origin)) {
    throw new WardenError(
      "capability_denied",
      problem(
        `${who} may not fetch from ${url.origin}`,
        netHosts.length ? `it declared ${netHosts.join(", ")}` : "it declared no host",
      ),
    );
  }
  const host = url.hostname;
  if (isIpLiteral(host)) return; // The address itself was declared.
  let addresses: string[];
  try {
    addresses = await platform().resolveHost(host);
  } catch {
    throw new WardenError("not_found", problem(`Cannot fetch from ${url.origin}`, `${host} does not resolve`));
  }
  const hidden = addresses.find(isNonPublicAddress);
  if (hidden) {
    throw new WardenError(
      "capability_denied",
      problem(
        `${who} may not fetch from ${url.origin}`,
        `${host} resolves to the non-public address ${hidden}`,
        `declare ${url.protocol}//${hidden.includes(":") ? `[${hidden}]` : hidden}${
          url.port ? `:${url.port}` : ""
        } to allow it`,
      ),
    );
  }
}

const MAX_REDIRECTS = 5;

/** Fetches for a tool that declared `netHosts`, following redirects only to declared origins. */
export async function fetchFor(
  who: string,
  netHosts: readonly string[],
  target: string,
  request: FetchRequest,
  signal: AbortSignal,
): Promise<FetchResult> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new WardenError("capability_denied", problem("Invalid URL", received(target)));
  }
  const maxBytes = Math.max(1, Math.min(request.maxBytes ?? 1024 * 1024, 16 * 1024 * 1024));
  let method = request.method ?? "GET";
  let body = request.body;
  for (let redirects = 0;; redirects++) {
    await checkUrl(who, netHosts, url);
    const response = await fetch(url, { method, headers: request.headers, body, redirect: "manual", signal });
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      if (redirects >= MAX_REDIRECTS) {
        throw new WardenError(
          "capability_denied",
          problem(`Too many redirects from ${target}`, `more than ${MAX_REDIRECTS}`),
        );
      }
      url = new URL(location, url);
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      continue;
    }
    const chunks: Uint8Array[] = [];
    let kept = 0;
    let truncated = false;
    const reader = response.body?.getReader();
    while (reader) {
      const { value, done } = await reader.read();
      if (done) break;
      const room = maxBytes - kept;
      if (value.length > room) {
        if (room > 0) chunks.push(value.subarray(0, room));
        kept = maxBytes;
        truncated = true;
        await reader.cancel();
        break;
      }
      chunks.push(value);
      kept += value.length;
    }
    const all = new Uint8Array(kept);
    let offset = 0;
    for (const chunk of chunks) {
      all.set(chunk, offset);
      offset += chunk.length;
    }
    return {
      url: url.href,
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: new TextDecoder().decode(all),
      truncated,
      redirects,
    };
  }
}

/** Normalises a declared origin; null when it is not one. */
export function declaredOrigin(entry: string): string | null {
  try {
    const url = new URL(entry);
    if (
      (url.protocol !== "https:" && url.protocol !== "http:") || url.pathname !== "/" || url.search || url.hash ||
      url.username
    ) return null;
    return url.origin === entry.replace(/\/$/, "") ? url.origin : null;
  } catch {
    return null;
  }
}
