// What external-side-effect tools may do beyond reading: write files under
// the roots they declare (atomically, never through a symlink) and fetch
// from the origins they declare (checked again after every redirect and
// against what the name resolves to: a name that leads to a loopback or
// private address is refused unless that address itself was declared; the
// connection goes to the addresses checked, never to a second lookup's).
import { concatBytes } from "../bytes.ts";
import { problem, received, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
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

function isNonPublicIpv4(a: number, b: number): boolean {
  return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 198 && (b === 18 || b === 19)) ||
    a >= 224;
}

/** The eight 16-bit groups of an IPv6 address in any of its written forms (`::`, a dotted IPv4 tail), or null. */
function ipv6Groups(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (const [i, piece] of pieces.entries()) {
      const v4 = i === pieces.length - 1 ? /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(piece) : null;
      if (v4) {
        const [a, b, c, d] = v4.slice(1).map(Number);
        if (Math.max(a, b, c, d) > 255) return null;
        out.push((a << 8) | b, (c << 8) | d);
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) {
        out.push(parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groupsOf(halves[0]);
  const tail = halves.length === 2 ? groupsOf(halves[1]) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  return [...head, ...new Array(missing).fill(0), ...tail];
}

/**
 * Is `address` loopback, private, link-local, unspecified or otherwise not the public internet? IPv6 forms that
 * carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address, in any written form; IPv4-compatible,
 * Teredo, discard-only, unique-local, link- and site-local and multicast addresses are refused, and so is anything
 * that does not read as an address.
 */
export function isNonPublicAddress(address: string): boolean {
  const text = address.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) return isNonPublicIpv4(Number(v4[1]), Number(v4[2]));
  const g = ipv6Groups(text);
  if (!g) return true;
  const embedded = (high: number) => isNonPublicIpv4(high >> 8, high & 0xff);
  const zeroUpTo = (n: number) => g.slice(0, n).every((group) => group === 0);
  if (zeroUpTo(5) && g[5] === 0xffff) return embedded(g[6]); // ::ffff:0:0/96, IPv4-mapped
  if (zeroUpTo(6)) return true; // ::/96: unspecified, loopback, IPv4-compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    return g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0 ? embedded(g[6]) : true; // NAT64
  }
  if (g[0] === 0x2002) return embedded(g[1]); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo
  if (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return true; // discard-only
  return (g[0] & 0xfe00) === 0xfc00 || (g[0] & 0xff80) === 0xfe80 || (g[0] & 0xff00) === 0xff00;
}

function isIpLiteral(host: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith("[");
}

/**
 * Checks one URL against the declared origins and what its name resolves to;
 * returns the addresses the request may connect to, and only those.
 */
async function checkUrl(who: string, netHosts: readonly string[], url: URL): Promise<readonly string[]> {
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
  if (isIpLiteral(host)) return [bare(host)]; // The address itself was declared.
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
  return addresses;
}

/** An IPv6 literal without its URL brackets. */
function bare(host: string): string {
  return host.startsWith("[") ? host.slice(1, -1) : host;
}

/** Request headers a tool may not set: the connection's own (as fetch forbids them). */
const CONNECTION_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "keep-alive",
  "upgrade",
]);

/** A response whose body has not been read yet. */
interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Reads at most `maxBytes` of the body; a longer one is cut and the connection dropped. */
  read(maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }>;
  discard(): void;
}

/**
 * One HTTP exchange with the connection pinned to `addresses`, the answer
 * the check saw: a name is never resolved a second time, so DNS that changes
 * its answer between the check and the connect (rebinding) reaches nothing
 * else. The name still goes out as Host and as the TLS server name, and the
 * certificate is verified against it. Redirects are the caller's.
 */
async function exchange(
  url: URL,
  addresses: readonly string[],
  method: string,
  headers: Readonly<Record<string, string>> | undefined,
  body: string | undefined,
  signal: AbortSignal,
): Promise<Answer> {
  const { request } = url.protocol === "https:" ? await import("node:https") : await import("node:http");
  const pinned = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  const outgoing: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!CONNECTION_HEADERS.has(name.toLowerCase())) outgoing[name] = value;
  }
  return await new Promise<Answer>((resolve, reject) => {
    const failed = (error: Error) =>
      reject(
        signal.aborted ? signal.reason : new WardenError(
          "tool_failed",
          problem(`Fetch from ${url.origin} failed`, (error as { code?: string }).code ?? error.message),
        ),
      );
    const req = request(
      {
        protocol: url.protocol,
        hostname: bare(url.hostname),
        port: url.port || (url.protocol === "https:" ? 443 : 80),
        path: url.pathname + url.search,
        method,
        headers: outgoing,
        signal,
        // Answered on a later tick, as a real lookup is: called back at once, a failed connect would be emitted
        // before this request has its error listener, and crash the process.
        lookup: (_host, options, callback) =>
          queueMicrotask(() =>
            options?.all ? callback(null, pinned) : callback(null, pinned[0].address, pinned[0].family)
          ),
      },
      (res) => {
        const answerHeaders: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) answerHeaders[name] = Array.isArray(value) ? value.join(", ") : value;
        }
        resolve({
          status: res.statusCode ?? 0,
          headers: answerHeaders,
          discard: () => res.destroy(),
          read: (maxBytes) =>
            new Promise((done, fail) => {
              const chunks: Uint8Array[] = [];
              let kept = 0;
              let settled = false;
              const settle = (truncated: boolean) => {
                settled = true;
                done({ bytes: concatBytes(chunks, kept), truncated });
              };
              res.on("data", (chunk: Uint8Array) => {
                if (settled) return;
                const room = maxBytes - kept;
                if (chunk.length > room) {
                  if (room > 0) chunks.push(chunk.subarray(0, room));
                  kept = maxBytes;
                  settle(true);
                  res.destroy();
                  return;
                }
                chunks.push(chunk);
                kept += chunk.length;
              });
              res.on("end", () => settle(false));
              res.on("close", () => {
                if (settled) return;
                settled = true;
                fail(
                  signal.aborted ? signal.reason : new WardenError(
                    "tool_failed",
                    problem(`Fetch from ${url.origin} failed`, "the connection closed before the body ended"),
                  ),
                );
              });
            }),
        });
      },
    );
    req.on("error", failed);
    req.end(body);
  });
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
    const addresses = await checkUrl(who, netHosts, url);
    const answer = await exchange(url, addresses, method, request.headers, body, signal);
    const location = answer.headers["location"];
    if (answer.status >= 300 && answer.status < 400 && location) {
      answer.discard();
      if (redirects >= MAX_REDIRECTS) {
        throw new WardenError(
          "capability_denied",
          problem(`Too many redirects from ${target}`, `more than ${MAX_REDIRECTS}`),
        );
      }
      url = new URL(location, url);
      if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      continue;
    }
    const { bytes, truncated } = await answer.read(maxBytes);
    return {
      url: url.href,
      status: answer.status,
      headers: answer.headers,
      body: new TextDecoder().decode(bytes),
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
