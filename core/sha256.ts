// SHA-256, the one place warden computes it. `sha256Hex` is synchronous, for
// the ledger, which hashes every row on the call's path: the runtime's native
// hash once `loadNativeSha256` has loaded it, plain JavaScript before (deno
// loads node:crypto only on demand: its node layer costs start-up).
// `sha256Digest` is for large inputs off that path (the catalog, manifests,
// plugin bundles, paged answers): WebCrypto, native on both runtimes with no
// load cost, but asynchronous. scripts/bench/README.md has the measurements.
// Int32Array, not Uint32Array: words above 2³¹ would leave V8's small-integer path.
const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const W = new Int32Array(64);
const encoder = new TextEncoder();
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

// The padded message is built in one buffer kept between calls (grown when a
// longer message comes): the ledger hashes a few hundred bytes per call, and
// allocating and zeroing a fresh array each time cost measurably more.
let scratch = new Uint8Array(1024);

function room(size: number): Uint8Array {
  if (scratch.length < size) scratch = new Uint8Array(Math.max(size, scratch.length * 2));
  return scratch;
}

/** The runtime's one-shot native hash, once loaded. */
let native: ((data: string | Uint8Array) => string) | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads node:crypto's SHA-256 for `sha256Hex` (once; never rejects: without
 * it the JavaScript hash goes on). node has it loaded already; deno loads its
 * node layer for it, so only a process that hashes many texts asks.
 */
export function loadNativeSha256(): Promise<void> {
  loading ??= import("node:crypto").then(
    (crypto) => {
      // crypto.hash (node 20.12+, deno) is one call with no Hash object; a namespace lookup, not a named import,
      // since a named import would fail to link on node 20.0.
      const oneShot = (crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: "hex") => string })
        .hash;
      native = typeof oneShot === "function"
        ? (data) => oneShot("sha256", data, "hex")
        : (data) => crypto.createHash("sha256").update(data).digest("hex");
    },
    () => {},
  );
  return loading;
}

/** Lowercase hex SHA-256 of `data` (a string is hashed as UTF-8), synchronously. */
export function sha256Hex(data: string | Uint8Array): string {
  return native === undefined ? sha256Js(data) : native(data);
}

function sha256Js(data: string | Uint8Array): string {
  let length: number;
  let padded: Uint8Array;
  if (typeof data === "string") {
    // UTF-8 takes at most three bytes per UTF-16 code unit.
    padded = room(data.length * 3 + 72);
    length = encoder.encodeInto(data, padded).written;
  } else {
    length = data.length;
    padded = room(length + 72);
    padded.set(data);
  }
  const blocks = Math.ceil((length + 9) / 64);
  const end = blocks * 64;
  padded.fill(0, length, end);
  padded[length] = 0x80;
  const high = Math.floor(length / 0x20000000);
  const low = (length * 8) >>> 0;
  padded[end - 8] = high >>> 24;
  padded[end - 7] = high >>> 16;
  padded[end - 6] = high >>> 8;
  padded[end - 5] = high;
  padded[end - 4] = low >>> 24;
  padded[end - 3] = low >>> 16;
  padded[end - 2] = low >>> 8;
  padded[end - 1] = low;
  let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a;
  let h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
  for (let block = 0; block < blocks; block++) {
    const offset = block * 64;
    for (let i = 0, j = offset; i < 16; i++, j += 4) {
      W[i] = (padded[j] << 24) | (padded[j + 1] << 16) | (padded[j + 2] << 8) | padded[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], b = W[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  return hexWord(h0) + hexWord(h1) + hexWord(h2) + hexWord(h3) + hexWord(h4) + hexWord(h5) + hexWord(h6) + hexWord(h7);
}

function hexWord(word: number): string {
  return HEX[(word >>> 24) & 255] + HEX[(word >>> 16) & 255] + HEX[(word >>> 8) & 255] + HEX[word & 255];
}

/** `sha256:<hex>` of bytes, or of a text's UTF-8 bytes, through WebCrypto. */
export async function sha256Digest(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  let hex = "sha256:";
  for (let i = 0; i < digest.length; i++) hex += HEX[digest[i]];
  return hex;
}
