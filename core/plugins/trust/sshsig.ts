// SSH signatures (OpenSSH PROTOCOL.sshsig) with Ed25519 keys, in WebCrypto
// only, so one module serves node and deno: parse the armored signatures
// `ssh-keygen -Y sign` writes and verify them, and sign with an unencrypted
// OpenSSH private key, writing the same bytes ssh-keygen would (Ed25519 is
// deterministic). No node: or Deno imports here, by design.
import { problem, received, WardenError } from "../../errors.ts";

/** The SSHSIG namespace plugin manifests are signed in (`ssh-keygen -Y sign -n warden-plugin-v1`). */
export const PLUGIN_SIGNATURE_NAMESPACE = "warden-plugin-v1";

/** An Ed25519 SSH public key, the only type warden accepts. */
export interface SshPublicKey {
  readonly type: "ssh-ed25519";
  /** The 32-byte Ed25519 public key. */
  readonly raw: Uint8Array;
  /** The SSH wire encoding: string "ssh-ed25519", string raw. */
  readonly blob: Uint8Array;
  /** `SHA256:<unpadded base64>`, exactly as `ssh-keygen -l -E sha256` prints it. */
  readonly fingerprint: string;
  /** `ssh-ed25519 AAAA...`, without a comment: one text per key, so equal keys have equal texts. */
  readonly text: string;
}

/** An armored SSH signature, decoded and checked for form (not yet verified). */
export interface ParsedSignature {
  /** The key the signature claims to be made with; trusting it is the allowed_signers check's job. */
  readonly publicKey: SshPublicKey;
  /** The namespace the signature was made in. */
  readonly namespace: string;
  /** The hash the message was digested with before signing. */
  readonly hashAlgorithm: "sha256" | "sha512";
  /** The 64-byte Ed25519 signature over the SSHSIG signed data. */
  readonly signature: Uint8Array;
}

/** An unencrypted OpenSSH Ed25519 private key, ready to sign. */
export interface SshPrivateKey {
  readonly type: "ssh-ed25519";
  readonly publicKey: SshPublicKey;
  /** The comment stored in the key file (often user@host), possibly empty. */
  readonly comment: string;
  /** The non-extractable WebCrypto Ed25519 signing key. */
  readonly signingKey: CryptoKey;
}

const KEY_TYPE = "ssh-ed25519";
const MAGIC = "SSHSIG";
const SIG_VERSION = 1;
const BEGIN_SIGNATURE = "-----BEGIN SSH SIGNATURE-----";
const END_SIGNATURE = "-----END SSH SIGNATURE-----";
const BEGIN_PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----";
const END_PRIVATE = "-----END OPENSSH PRIVATE KEY-----";
const PRIVATE_MAGIC = "openssh-key-v1\0";
/** PKCS#8 PrivateKeyInfo for Ed25519 (RFC 8410) up to the 32-byte seed. */
const PKCS8_ED25519_PREFIX = Uint8Array.from(
  "302e020100300506032b657004220420".match(/../g) ?? [],
  (hex) => parseInt(hex, 16),
);

const SIGN_HINT =
  `sign the file again with "ssh-keygen -Y sign -f <key> -n ${PLUGIN_SIGNATURE_NAMESPACE} <file>" and give the .sig file it writes`;
const PUBLIC_KEY_HINT = "copy the whole line of the key's .pub file";
const PRIVATE_KEY_HINT = "give the private key file \"ssh-keygen -t ed25519 -N ''\" wrote (the one without .pub)";

const encoder = new TextEncoder();
const utf8 = new TextDecoder("utf-8", { fatal: true });

// ---------------------------------------------------------------- bytes

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/** An SSH wire `string`: uint32 length, then the bytes. */
function sshString(value: Uint8Array | string): Uint8Array {
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return concat(u32(bytes.length), bytes);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

function byteCount(n: number): string {
  return n === 1 ? "1 byte" : `${n} bytes`;
}

/** A copy backed by a plain ArrayBuffer, as WebCrypto's BufferSource wants. */
function own(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}

/**
 * `bytes` as WebCrypto's BufferSource: itself when a plain ArrayBuffer backs it (WebCrypto copies its input when
 * called), else a copy. Saves copying a whole manifest per digest.
 */
function bufferSource(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? bytes as Uint8Array<ArrayBuffer> : own(bytes);
}

function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    // apply, not spread: spreading a typed array walks an iterator, one object per byte when cold.
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000) as unknown as number[]);
  }
  return btoa(binary);
}

/**
 * Results worth keeping for the life of the process, keyed by bytes in base64: one signer usually signs every
 * plugin, so its fingerprint and its WebCrypto key are computed once, not per plugin. Bounded, in case every
 * plugin brings its own key.
 */
class BoundedCache<T> {
  readonly #entries = new Map<string, T>();
  constructor(private readonly limit: number) {}

  get(key: string): T | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: T): void {
    if (this.#entries.size >= this.limit) this.#entries.clear();
    this.#entries.set(key, value);
  }

  delete(key: string, value: T): void {
    if (this.#entries.get(key) === value) this.#entries.delete(key);
  }
}

/** `SHA256:...` fingerprints by key blob (base64). */
const fingerprints = new BoundedCache<string>(256);
/** Imported Ed25519 verification keys by raw key (base64); a key that fails to import is not kept. */
const verifyKeys = new BoundedCache<Promise<CryptoKey>>(256);

/** Strict base64 (padded, standard alphabet) to bytes, or null. */
function decodeBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function decodeBase64Url(text: string): Uint8Array | null {
  const standard = text.replaceAll("-", "+").replaceAll("_", "/");
  return decodeBase64(standard + "=".repeat((4 - (standard.length % 4)) % 4));
}

/** Reads SSH wire fields; `fail` words the error when the data ends early or is malformed. */
class WireReader {
  #at = 0;
  constructor(private readonly bytes: Uint8Array, private readonly fail: (detail: string) => never) {}

  get remaining(): number {
    return this.bytes.length - this.#at;
  }

  take(length: number, field: string): Uint8Array {
    if (length > this.remaining) this.fail(`the data ends inside the ${field}`);
    const out = this.bytes.subarray(this.#at, this.#at + length);
    this.#at += length;
    return out;
  }

  u32(field: string): number {
    const bytes = this.take(4, field);
    return new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0);
  }

  string(field: string): Uint8Array {
    return this.take(this.u32(field), field);
  }

  text(field: string): string {
    const bytes = this.string(field);
    try {
      return utf8.decode(bytes);
    } catch {
      return this.fail(`the ${field} is not valid UTF-8`);
    }
  }
}

// ---------------------------------------------------------------- keys

const SSH_KEY_TYPE =
  /^(ssh-(ed25519|rsa|dss)|ssh-xmss@openssh\.com|ecdsa-sha2-nistp(256|384|521)|sk-ecdsa-sha2-nistp256@openssh\.com|sk-ssh-ed25519@openssh\.com|(ssh-(ed25519|rsa|dss|xmss)|ecdsa-sha2-nistp(256|384|521)|sk-ecdsa-sha2-nistp256|sk-ssh-ed25519)-cert-v01@openssh\.com)$/;

/**
 * True when `word` is the name of an OpenSSH key or certificate type (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256,
 * sk-ssh-ed25519@openssh.com, ssh-ed25519-cert-v01@openssh.com, ...), whether or not warden supports it.
 */
export function isSshKeyType(word: string): boolean {
  return SSH_KEY_TYPE.test(word);
}

function unsupportedKeyType(type: string): string {
  return problem(
    "Unsupported SSH key type",
    `expected ssh-ed25519 (warden supports only Ed25519 keys), received ${received(type)}`,
    'make an Ed25519 key with "ssh-keygen -t ed25519"',
  );
}

async function fingerprintOf(blob: Uint8Array<ArrayBuffer>, base64: string): Promise<string> {
  const known = fingerprints.get(base64);
  if (known !== undefined) return known;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", blob));
  const fingerprint = "SHA256:" + encodeBase64(digest).replace(/=+$/, "");
  fingerprints.set(base64, fingerprint);
  return fingerprint;
}

/**
 * The key in an SSH wire blob. `fail` words malformed data; a well-formed key
 * of another type is `unsupported(type)`.
 */
async function keyFromBlob(
  blob: Uint8Array,
  fail: (detail: string) => never,
  unsupported: (type: string) => never,
): Promise<SshPublicKey> {
  const reader = new WireReader(blob, fail);
  const type = reader.text("key type");
  if (type !== KEY_TYPE) unsupported(type);
  const raw = reader.string("Ed25519 key");
  if (raw.length !== 32) fail(`the Ed25519 key is ${raw.length} bytes, expected 32`);
  if (reader.remaining !== 0) fail(`trailing data after the key: ${byteCount(reader.remaining)}`);
  const copy = own(blob);
  const base64 = encodeBase64(copy);
  return Object.freeze({
    type: KEY_TYPE,
    raw: copy.slice(copy.length - 32),
    blob: copy,
    fingerprint: await fingerprintOf(copy, base64),
    text: `${KEY_TYPE} ${base64}`,
  });
}

/**
 * Parses an Ed25519 public key as a `.pub` file holds it: `ssh-ed25519 AAAA... [comment]`.
 *
 * @throws WardenError `invalid_key` for another key type (ssh-rsa, ecdsa, security keys, certificates: only
 * Ed25519 is supported) and for anything that is not a well-formed key line.
 * @example
 * ```ts
 * const key = await parsePublicKey(pubFileText); // "ssh-ed25519 AAAAC3Nza... alice@example.com\n"
 * key.fingerprint // "SHA256:..." as `ssh-keygen -l -E sha256 -f alice.pub` prints it
 * key.text // "ssh-ed25519 AAAAC3Nza...", the comment dropped
 * ```
 */
export async function parsePublicKey(text: string): Promise<SshPublicKey> {
  const fail: (detail: string) => never = (detail) => {
    throw new WardenError("invalid_key", problem("Invalid SSH public key", detail, PUBLIC_KEY_HINT));
  };
  const unsupported: (type: string) => never = (type) => {
    throw new WardenError("invalid_key", unsupportedKeyType(type));
  };
  const trimmed = text.trim();
  const lines = trimmed.split(/\r?\n/);
  if (lines.length > 1) fail(`expected one key on one line, received ${lines.length} lines`);
  const [type, data] = trimmed.split(/[ \t]+/);
  if (type !== KEY_TYPE) {
    if (isSshKeyType(type)) unsupported(type);
    fail(`expected "ssh-ed25519 AAAA..." as in a .pub file, received ${received(trimmed)}`);
  }
  if (data === undefined) fail('the base64 key data after "ssh-ed25519" is missing');
  const blob = decodeBase64(data);
  if (blob === null) fail(`the key data is not valid base64, received ${received(data)}`);
  return await keyFromBlob(
    blob,
    fail,
    (blobType) => fail(`the key data is for ${received(blobType)}, not "ssh-ed25519" as the line says`),
  );
}

// ---------------------------------------------------------------- signatures

/**
 * Parses the armored signature `ssh-keygen -Y sign` writes (`-----BEGIN SSH SIGNATURE-----`, base64, `-----END SSH
 * SIGNATURE-----`; see OpenSSH PROTOCOL.sshsig). Checks the form only: call `verifySignature` to check it signs a
 * message, and the allowed_signers trust store to decide whether its key may sign.
 *
 * @throws WardenError `invalid_signature` naming what is wrong: missing armor, bad base64, wrong magic or version,
 * a key other than Ed25519, a hash other than sha256 or sha512, truncated or trailing data.
 */
export async function parseSignature(armored: string): Promise<ParsedSignature> {
  const fail: (detail: string) => never = (detail) => {
    throw new WardenError("invalid_signature", problem("Invalid SSH signature", detail, SIGN_HINT));
  };
  const text = armored.replace(/\r\n/g, "\n").trim();
  if (!text.startsWith(BEGIN_SIGNATURE + "\n")) {
    fail(`expected text starting with a "${BEGIN_SIGNATURE}" line, received ${received(text)}`);
  }
  const end = text.indexOf("\n" + END_SIGNATURE);
  if (end === -1) fail(`the "${END_SIGNATURE}" line is missing`);
  if (end + 1 + END_SIGNATURE.length !== text.length) fail(`there is text after the "${END_SIGNATURE}" line`);
  const body = text.slice(BEGIN_SIGNATURE.length + 1, end).replace(/\s+/g, "");
  const bytes = decodeBase64(body);
  if (bytes === null) fail("the text between the BEGIN and END lines is not valid base64");
  const reader = new WireReader(bytes, fail);
  if (!equalBytes(reader.take(MAGIC.length, "magic preamble"), encoder.encode(MAGIC))) {
    fail(`the data does not start with the "${MAGIC}" magic preamble`);
  }
  const version = reader.u32("version");
  if (version !== SIG_VERSION) fail(`unsupported signature version ${version}, expected ${SIG_VERSION}`);
  const publicKey = await keyFromBlob(
    reader.string("public key"),
    (detail) => fail(`its public key is malformed: ${detail}`),
    (type) => {
      throw new WardenError(
        "invalid_signature",
        problem(
          "Invalid SSH signature",
          `it was made with a ${received(type)} key, warden accepts only Ed25519 (ssh-ed25519) keys`,
          `sign the file again with an Ed25519 key (make one with "ssh-keygen -t ed25519")`,
        ),
      );
    },
  );
  const namespace = reader.text("namespace");
  reader.string("reserved field");
  const hashAlgorithm = reader.text("hash algorithm");
  if (hashAlgorithm !== "sha256" && hashAlgorithm !== "sha512") {
    fail(`unsupported hash algorithm ${received(hashAlgorithm)}, expected sha256 or sha512`);
  }
  const inner = new WireReader(reader.string("signature"), fail);
  if (reader.remaining !== 0) fail(`trailing data after the signature: ${byteCount(reader.remaining)}`);
  const sigType = inner.text("signature type");
  if (sigType !== KEY_TYPE) fail(`the signature is of type ${received(sigType)}, expected "ssh-ed25519"`);
  const signature = inner.string("Ed25519 signature");
  if (signature.length !== 64) fail(`the Ed25519 signature is ${signature.length} bytes, expected 64`);
  if (inner.remaining !== 0) fail(`trailing data after the Ed25519 signature: ${byteCount(inner.remaining)}`);
  return Object.freeze({
    publicKey,
    namespace,
    hashAlgorithm: hashAlgorithm as "sha256" | "sha512",
    signature: own(signature),
  });
}

/** The bytes an SSHSIG signature signs (PROTOCOL.sshsig): preamble, namespace, reserved "", hash name, H(message). */
async function signedData(
  message: Uint8Array,
  namespace: string,
  hashAlgorithm: "sha256" | "sha512",
): Promise<Uint8Array<ArrayBuffer>> {
  const digest = new Uint8Array(
    await crypto.subtle.digest(hashAlgorithm === "sha256" ? "SHA-256" : "SHA-512", bufferSource(message)),
  );
  return concat(
    encoder.encode(MAGIC),
    sshString(namespace),
    sshString(new Uint8Array(0)),
    sshString(hashAlgorithm),
    sshString(digest),
  );
}

/** The WebCrypto verification key of a raw Ed25519 public key, imported once per key. */
function verifyKey(raw: Uint8Array): Promise<CryptoKey> {
  const id = encodeBase64(raw);
  let key = verifyKeys.get(id);
  if (key === undefined) {
    const imported = crypto.subtle.importKey("raw", own(raw), { name: "Ed25519" }, false, ["verify"]);
    imported.catch(() => verifyKeys.delete(id, imported));
    verifyKeys.set(id, imported);
    key = imported;
  }
  return key;
}

/**
 * Checks that `sig` signs `message` in `namespace`, as `ssh-keygen -Y verify` does: the namespace must be the
 * expected one, and the Ed25519 signature must verify over the SSHSIG signed data (built, as OpenSSH builds it,
 * with an empty reserved field). Says nothing about whether the key is trusted.
 *
 * @example
 * ```ts
 * const result = await verifySignature(await parseSignature(sigText), manifestBytes, PLUGIN_SIGNATURE_NAMESPACE);
 * if (!result.ok) console.log(result.reason); // "wrong-namespace" or "bad-signature"
 * ```
 */
export async function verifySignature(
  sig: ParsedSignature,
  message: Uint8Array,
  namespace: string,
): Promise<{ ok: true } | { ok: false; reason: "wrong-namespace" | "bad-signature" }> {
  if (sig.namespace !== namespace) return { ok: false, reason: "wrong-namespace" };
  const data = await signedData(message, namespace, sig.hashAlgorithm);
  let valid: boolean;
  try {
    valid = await crypto.subtle.verify(
      { name: "Ed25519" },
      await verifyKey(sig.publicKey.raw),
      bufferSource(sig.signature),
      data,
    );
  } catch {
    valid = false; // a public key that is not a curve point cannot have signed anything
  }
  return valid ? { ok: true } : { ok: false, reason: "bad-signature" };
}

// ---------------------------------------------------------------- private keys and signing

/**
 * Parses an unencrypted OpenSSH Ed25519 private key, as `ssh-keygen -t ed25519 -N ''` writes it
 * (`-----BEGIN OPENSSH PRIVATE KEY-----`, openssh-key-v1, cipher "none"). Checks the two check integers, the
 * padding, and that the private key matches its public key.
 *
 * @throws WardenError `invalid_key` for an encrypted key (warden cannot decrypt it: sign with `ssh-keygen -Y sign`
 * instead, whose signatures warden accepts), another key type, or a malformed file.
 */
export async function parsePrivateKey(text: string): Promise<SshPrivateKey> {
  const fail: (detail: string) => never = (detail) => {
    throw new WardenError("invalid_key", problem("Invalid SSH private key", detail, PRIVATE_KEY_HINT));
  };
  const trimmed = text.replace(/\r\n/g, "\n").trim();
  if (!trimmed.startsWith(BEGIN_PRIVATE + "\n")) {
    fail(`expected an OpenSSH private key ("${BEGIN_PRIVATE}"), received ${received(trimmed.split("\n")[0])}`);
  }
  if (!trimmed.endsWith("\n" + END_PRIVATE)) fail(`the "${END_PRIVATE}" line is missing or not last`);
  const body = trimmed.slice(BEGIN_PRIVATE.length + 1, trimmed.length - END_PRIVATE.length - 1).replace(/\s+/g, "");
  const bytes = decodeBase64(body);
  if (bytes === null) fail("the text between the BEGIN and END lines is not valid base64");
  const reader = new WireReader(bytes, fail);
  const magic = reader.take(PRIVATE_MAGIC.length, "magic preamble");
  if (!equalBytes(magic, encoder.encode(PRIVATE_MAGIC))) fail('the data does not start with "openssh-key-v1"');
  const cipher = reader.text("cipher name");
  const kdf = reader.text("KDF name");
  reader.string("KDF options");
  if (cipher !== "none" || kdf !== "none") {
    throw new WardenError(
      "invalid_key",
      problem(
        "Cannot use an encrypted SSH private key",
        "warden cannot decrypt a key protected by a passphrase",
        `sign with "ssh-keygen -Y sign -f <key> -n ${PLUGIN_SIGNATURE_NAMESPACE} manifest.json" instead ` +
          "(warden accepts its signatures) or give a key without a passphrase",
      ),
    );
  }
  const count = reader.u32("key count");
  if (count !== 1) fail(`the file holds ${count} keys, expected 1`);
  const unsupported: (type: string) => never = (type) => {
    throw new WardenError("invalid_key", unsupportedKeyType(type));
  };
  const publicKey = await keyFromBlob(
    reader.string("public key"),
    (detail) => fail(`its public key is malformed: ${detail}`),
    unsupported,
  );
  const section = reader.string("private section");
  if (reader.remaining !== 0) fail(`trailing data after the private section: ${byteCount(reader.remaining)}`);
  if (section.length % 8 !== 0) fail(`the private section is ${section.length} bytes, not a multiple of 8`);
  const secret = new WireReader(section, fail);
  const check1 = secret.u32("check integers");
  const check2 = secret.u32("check integers");
  if (check1 !== check2) fail("its two check integers differ, so the file is corrupt");
  const type = secret.text("private key type");
  if (type !== KEY_TYPE) unsupported(type);
  const pub = secret.string("Ed25519 public key");
  const priv = secret.string("Ed25519 private key");
  const comment = secret.text("comment");
  if (!equalBytes(pub, publicKey.raw)) fail("the private section holds another public key than the file's header");
  if (priv.length !== 64 || !equalBytes(priv.subarray(32), pub)) {
    fail(`the Ed25519 private key is malformed (${priv.length} bytes, expected the 32-byte seed and the public key)`);
  }
  const padding = secret.take(secret.remaining, "padding");
  if (padding.some((byte, i) => byte !== i + 1)) fail("the padding after the key is not 1, 2, 3...");
  const pkcs8 = concat(PKCS8_ED25519_PREFIX, priv.subarray(0, 32));
  // The public key derived from the seed must be the one the file names.
  const probe = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", probe);
  const derived = jwk.x === undefined ? null : decodeBase64Url(jwk.x);
  if (derived === null || !equalBytes(derived, pub)) fail("the private key does not match its public key");
  const signingKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  pkcs8.fill(0);
  return Object.freeze({ type: KEY_TYPE, publicKey, comment, signingKey });
}

function armor(blob: Uint8Array): string {
  const base64 = encodeBase64(blob);
  const lines: string[] = [];
  for (let i = 0; i < base64.length; i += 70) lines.push(base64.slice(i, i + 70));
  return `${BEGIN_SIGNATURE}\n${lines.join("\n")}\n${END_SIGNATURE}\n`;
}

/**
 * Signs `message` in `namespace` and returns the armored SSHSIG text, byte for byte what
 * `ssh-keygen -Y sign -f <key> -n <namespace>` writes for the same key and message (sha512, base64 wrapped at 70
 * columns, trailing newline).
 *
 * @example
 * ```ts
 * const key = await parsePrivateKey(keyFileText);
 * const sigText = await signMessage(key, manifestBytes, PLUGIN_SIGNATURE_NAMESPACE); // write as manifest.json.sig
 * ```
 */
export async function signMessage(key: SshPrivateKey, message: Uint8Array, namespace: string): Promise<string> {
  const hashAlgorithm = "sha512";
  const data = await signedData(message, namespace, hashAlgorithm);
  const signature = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key.signingKey, data));
  const blob = concat(
    encoder.encode(MAGIC),
    u32(SIG_VERSION),
    sshString(key.publicKey.blob),
    sshString(namespace),
    sshString(new Uint8Array(0)),
    sshString(hashAlgorithm),
    sshString(concat(sshString(KEY_TYPE), sshString(signature))),
  );
  return armor(blob);
}
