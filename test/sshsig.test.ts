// SSH signatures and the allowed_signers trust store, checked against the
// real ssh-keygen in both directions: its signatures verify here, ours verify
// there (and are byte-identical: Ed25519 is deterministic), fingerprints
// agree, and a trust decision here matches what `ssh-keygen -Y verify` decides.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { WardenError } from "../core/errors.ts";
import {
  type AllowedSigner,
  checkSigner,
  parseAllowedSigners,
  parseRevokedKeys,
  type SignerDecision,
} from "../core/plugins/trust/allowed_signers.ts";
import {
  isSshKeyType,
  parsePrivateKey,
  parsePublicKey,
  parseSignature,
  PLUGIN_SIGNATURE_NAMESPACE,
  signMessage,
  type SshPublicKey,
  verifySignature,
} from "../core/plugins/trust/sshsig.ts";
import { runtimeName, tempDir } from "./helpers.ts";

const NS = PLUGIN_SIGNATURE_NAMESPACE;
const SIGN_FIX =
  'sign the file again with "ssh-keygen -Y sign -f <key> -n warden-plugin-v1 <file>" and give the .sig file it writes';
const PUBLIC_FIX = "copy the whole line of the key's .pub file";
const PRIVATE_FIX = "give the private key file \"ssh-keygen -t ed25519 -N ''\" wrote (the one without .pub)";
const UNSUPPORTED_RSA =
  'Unsupported SSH key type: expected ssh-ed25519 (warden supports only Ed25519 keys), received "ssh-rsa"; ' +
  'make an Ed25519 key with "ssh-keygen -t ed25519"';
const ENCRYPTED = "Cannot use an encrypted SSH private key: warden cannot decrypt a key protected by a passphrase; " +
  'sign with "ssh-keygen -Y sign -f <key> -n warden-plugin-v1 manifest.json" instead (warden accepts its signatures) ' +
  "or give a key without a passphrase";
const FORM_FIX =
  'write principals, then optional options, then the key: alice@example.com namespaces="warden-plugin-v1" ' +
  "ssh-ed25519 AAAA... (see ALLOWED SIGNERS in ssh-keygen(1))";
const OPTIONS_FIX = 'the options are cert-authority, namespaces="...", valid-after="..." and valid-before="...", ' +
  "separated by commas without spaces, values in double quotes";
const TIME_FIX =
  "write a date as YYYYMMDD or a time as YYYYMMDDHHMM or YYYYMMDDHHMMSS, local time or ending in Z for " +
  'UTC, e.g. "20250101Z"';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real ssh-keygen in `cwd`, with `input` (if any) on stdin. */
function sshKeygen(cwd: string, args: string[], input?: string | Uint8Array): Promise<Run> {
  const child = spawn("ssh-keygen", args, { cwd, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  // A command that exits without reading all of stdin is judged by its exit code, not by EPIPE.
  child.stdin?.on("error", () => {});
  child.stdin?.end(input);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** An SSH wire string. */
function wire(value: string | Uint8Array): Buffer {
  const bytes = Buffer.from(value);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** Armor as ssh-keygen writes it: base64 wrapped at 70 columns. */
function armorWith(begin: string, end: string, bytes: Uint8Array): string {
  const base64 = Buffer.from(bytes).toString("base64");
  return `${begin}\n${base64.match(/.{1,70}/g)?.join("\n") ?? ""}\n${end}\n`;
}

function dearmor(text: string): Buffer {
  return Buffer.from(text.split("\n").filter((line) => line !== "" && !line.startsWith("-----")).join(""), "base64");
}

/** An allowed_signers line: principals, options (if any), the key. */
function signerLine(principals: string, options: string, key: SshPublicKey): string {
  return [principals, options, key.text].filter((part) => part !== "").join(" ");
}

async function rejectsWith(promise: Promise<unknown>, code: string, message: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WardenError, `expected a WardenError, got ${String(error)}`);
    assert.equal(error.message, message);
    assert.equal(error.code, code);
    return true;
  });
}

describe(`sshsig and allowed_signers (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  const file = (name: string) => path.join(work.dir, name);
  const read = (name: string) => readFileSync(file(name), "utf8");
  let manifest: Uint8Array;
  let alice: SshPublicKey;
  let bob: SshPublicKey;
  let carol: SshPublicKey;

  before(async () => {
    work = tempDir("warden-sshsig-");
    const keys: [string, string[]][] = [
      ["alice", ["-t", "ed25519", "-N", "", "-C", "alice@example.com"]],
      ["bob", ["-t", "ed25519", "-N", "", "-C", "bob@example.com"]],
      ["carol", ["-t", "ed25519", "-N", "", "-C", ""]],
      ["locked", ["-t", "ed25519", "-N", "correct horse battery staple"]],
      ["rsa", ["-t", "rsa", "-b", "2048", "-N", ""]],
      ["ecdsa", ["-t", "ecdsa", "-N", ""]],
    ];
    for (const [name, args] of keys) {
      const run = await sshKeygen(work.dir, ["-q", ...args, "-f", name]);
      assert.equal(run.code, 0, run.stderr);
    }
    manifest = new TextEncoder().encode('{"name":"demo","tools":["ünïcode"]}\n');
    writeFileSync(file("manifest.json"), manifest);
    alice = await parsePublicKey(read("alice.pub"));
    bob = await parsePublicKey(read("bob.pub"));
    carol = await parsePublicKey(read("carol.pub"));
  });
  after(() => work.remove());

  /** `ssh-keygen -Y sign` over stdin; the armored signature it prints. */
  async function keygenSign(key: string, namespace: string, message: Uint8Array, extra: string[] = []) {
    const run = await sshKeygen(work.dir, ["-Y", "sign", "-f", key, "-n", namespace, ...extra], message);
    assert.equal(run.code, 0, run.stderr);
    return run.stdout;
  }

  describe("public keys", () => {
    it("parses a .pub line with the fingerprint ssh-keygen -l prints", async () => {
      for (const name of ["alice", "bob", "carol"]) {
        const line = read(`${name}.pub`);
        const key = await parsePublicKey(line);
        const listed = await sshKeygen(work.dir, ["-l", "-E", "sha256", "-f", `${name}.pub`]);
        assert.equal(listed.code, 0, listed.stderr);
        assert.match(key.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
        assert.equal(key.fingerprint, listed.stdout.split(" ")[1]);
        const [type, data] = line.trim().split(" ");
        assert.equal(key.type, "ssh-ed25519");
        assert.equal(key.text, `${type} ${data}`);
        assert.deepEqual(Buffer.from(key.blob), Buffer.from(data, "base64"));
        assert.deepEqual(Buffer.from(key.raw), Buffer.from(data, "base64").subarray(-32));
        assert.equal(key.raw.length, 32);
      }
      assert.notEqual(alice.fingerprint, bob.fingerprint);
    });

    it("ignores the comment and surrounding whitespace", async () => {
      const [type, data] = read("alice.pub").split(" ");
      const bare = await parsePublicKey(`  ${type}\t${data}\n`);
      assert.equal(bare.text, alice.text);
      assert.equal(bare.fingerprint, alice.fingerprint);
      // Several spaces and tabs between the fields, as a hand-edited line may have.
      const spaced = await parsePublicKey(`${type} \t  ${data} \t alice's  laptop`);
      assert.equal(spaced.text, alice.text);
    });

    it("refuses RSA and ECDSA keys, saying only Ed25519 is supported and how to make one", async () => {
      await rejectsWith(parsePublicKey(read("rsa.pub")), "invalid_key", UNSUPPORTED_RSA);
      await rejectsWith(
        parsePublicKey(read("ecdsa.pub")),
        "invalid_key",
        'Unsupported SSH key type: expected ssh-ed25519 (warden supports only Ed25519 keys), received "ecdsa-sha2-nistp256"; make an Ed25519 key with "ssh-keygen -t ed25519"',
      );
      assert.ok(isSshKeyType("ssh-ed25519-cert-v01@openssh.com") && isSshKeyType("sk-ssh-ed25519@openssh.com"));
      assert.ok(!isSshKeyType("ssh-deploy") && !isSshKeyType("alice@example.com"));
      // The whole word names a type, not a part of it.
      assert.ok(!isSshKeyType("my-ssh-rsa") && !isSshKeyType("ssh-ed25519x") && !isSshKeyType("xssh-ed25519"));
    });

    it("refuses malformed key lines, naming the problem", async () => {
      const data = read("alice.pub").split(" ")[1];
      const blob = Buffer.from(data, "base64");
      const rsaData = read("rsa.pub").split(" ")[1];
      const cases: [string, string][] = [
        ["", 'expected "ssh-ed25519 AAAA..." as in a .pub file, received ""'],
        ["hello world", 'expected "ssh-ed25519 AAAA..." as in a .pub file, received "hello world"'],
        ["ssh-ed25519", 'the base64 key data after "ssh-ed25519" is missing'],
        ["ssh-ed25519 AAAA!AAA", 'the key data is not valid base64, received "AAAA!AAA"'],
        ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE", 'the key data is not valid base64, received "AAAAC3NzaC1lZDI1NTE"'],
        ["ssh-ed25519 AAAA====", 'the key data is not valid base64, received "AAAA===="'],
        [`ssh-ed25519 ${rsaData}`, 'the key data is for "ssh-rsa", not "ssh-ed25519" as the line says'],
        [
          `ssh-ed25519 ${Buffer.concat([wire("ssh-ed25519"), wire(blob.subarray(-31))]).toString("base64")}`,
          "the Ed25519 key is 31 bytes, expected 32",
        ],
        [
          `ssh-ed25519 ${Buffer.concat([blob, Buffer.from([0, 0, 0])]).toString("base64")}`,
          "trailing data after the key: 3 bytes",
        ],
        [`ssh-ed25519 ${blob.subarray(0, 40).toString("base64")}`, "the data ends inside the Ed25519 key"],
        [`ssh-ed25519 ${data}\nssh-ed25519 ${data}`, "expected one key on one line, received 2 lines"],
      ];
      for (const [text, detail] of cases) {
        await rejectsWith(parsePublicKey(text), "invalid_key", `Invalid SSH public key: ${detail}; ${PUBLIC_FIX}`);
      }
    });
  });

  describe("signatures", () => {
    it("verifies what ssh-keygen -Y sign writes, with sha512 and with sha256", async () => {
      const run = await sshKeygen(work.dir, ["-Y", "sign", "-f", "alice", "-n", NS, "manifest.json"]);
      assert.equal(run.code, 0, run.stderr);
      const sig = await parseSignature(read("manifest.json.sig"));
      assert.equal(sig.publicKey.fingerprint, alice.fingerprint);
      assert.equal(sig.namespace, NS);
      assert.equal(sig.hashAlgorithm, "sha512");
      assert.equal(sig.signature.length, 64);
      assert.deepEqual(await verifySignature(sig, manifest, NS), { ok: true });

      const sha256 = await parseSignature(await keygenSign("bob", NS, manifest, ["-O", "hashalg=sha256"]));
      assert.equal(sha256.hashAlgorithm, "sha256");
      assert.equal(sha256.publicKey.text, bob.text);
      assert.deepEqual(await verifySignature(sha256, manifest, NS), { ok: true });
    });

    it("signMessage writes byte for byte what ssh-keygen -Y sign writes", async () => {
      const key = await parsePrivateKey(read("alice"));
      assert.equal(key.publicKey.text, alice.text);
      assert.equal(key.comment, "alice@example.com");
      assert.equal((await parsePrivateKey(read("carol"))).comment, "");
      assert.equal(key.signingKey.extractable, false, "the signing key cannot be read back out of WebCrypto");
      for (const message of [manifest, new Uint8Array(0), new Uint8Array(100_000).fill(7)]) {
        const ours = await signMessage(key, message, NS);
        assert.equal(ours, await keygenSign("alice", NS, message));
        assert.match(ours, /^-----BEGIN SSH SIGNATURE-----\n([A-Za-z0-9+/=]{70}\n)+[A-Za-z0-9+/=]{1,70}\n-----END SSH/);
        assert.ok(ours.endsWith("\n-----END SSH SIGNATURE-----\n"));
      }
      // A namespace of 39 characters makes the base64 exactly 4 lines of 70: no empty line before the END line.
      const even = await signMessage(key, manifest, "n".repeat(39));
      assert.equal(even, await keygenSign("alice", "n".repeat(39), manifest));
      assert.equal(even.split("\n").filter((line) => line.length === 70).length, 4);
    });

    it("ssh-keygen -Y verify accepts a signature from signMessage, and refuses it in another namespace", async () => {
      const key = await parsePrivateKey(read("bob"));
      writeFileSync(file("bob.sig"), await signMessage(key, manifest, NS));
      writeFileSync(file("bob_signers"), `bob@example.com ${read("bob.pub")}`);
      const verify = (namespace: string, message: Uint8Array) =>
        sshKeygen(work.dir, [
          "-Y",
          "verify",
          "-f",
          "bob_signers",
          "-I",
          "bob@example.com",
          "-n",
          namespace,
          "-s",
          "bob.sig",
        ], message);
      const good = await verify(NS, manifest);
      assert.equal(good.code, 0, good.stderr);
      assert.equal(
        good.stdout,
        `Good "${NS}" signature for bob@example.com with ED25519 key ${bob.fingerprint}\n`,
      );
      const otherNamespace = await verify("git", manifest);
      assert.notEqual(otherNamespace.code, 0);
      assert.match(otherNamespace.stderr, /namespace/);
      const tampered = await verify(NS, Buffer.concat([manifest, Buffer.from(" ")]));
      assert.notEqual(tampered.code, 0);
    });

    it("a changed message, key or hash algorithm is a bad signature", async () => {
      const sig = await parseSignature(await keygenSign("alice", NS, manifest));
      assert.deepEqual(await verifySignature(sig, manifest, NS), { ok: true });
      const flipped = Uint8Array.from(manifest);
      flipped[3] ^= 1;
      const bad = { ok: false, reason: "bad-signature" };
      assert.deepEqual(await verifySignature(sig, flipped, NS), bad);
      assert.deepEqual(await verifySignature(sig, manifest.subarray(0, manifest.length - 1), NS), bad);
      assert.deepEqual(await verifySignature(sig, new Uint8Array(0), NS), bad);
      assert.deepEqual(await verifySignature({ ...sig, publicKey: bob }, manifest, NS), bad);
      assert.deepEqual(await verifySignature({ ...sig, hashAlgorithm: "sha256" }, manifest, NS), bad);
      const broken = Uint8Array.from(sig.signature);
      broken[10] ^= 0x40;
      assert.deepEqual(await verifySignature({ ...sig, signature: broken }, manifest, NS), bad);
    });

    it("a signature made in another namespace is wrong-namespace", async () => {
      const git = await parseSignature(await keygenSign("alice", "git", manifest));
      assert.equal(git.namespace, "git");
      assert.deepEqual(await verifySignature(git, manifest, NS), { ok: false, reason: "wrong-namespace" });
      assert.deepEqual(await verifySignature(git, manifest, "git"), { ok: true });
      const ours = await parseSignature(await signMessage(await parsePrivateKey(read("bob")), manifest, "file"));
      assert.deepEqual(await verifySignature(ours, manifest, NS), { ok: false, reason: "wrong-namespace" });
      assert.deepEqual(await verifySignature(ours, manifest, "file"), { ok: true });
    });

    it("accepts CRLF line endings and surrounding whitespace in the armor", async () => {
      const text = await keygenSign("alice", NS, manifest);
      const sig = await parseSignature(`\n${text.replaceAll("\n", "\r\n")}  \n`);
      assert.deepEqual(await verifySignature(sig, manifest, NS), { ok: true });
    });

    it("refuses a signature made with an RSA key", async () => {
      await rejectsWith(
        parseSignature(await keygenSign("rsa", NS, manifest)),
        "invalid_signature",
        'Invalid SSH signature: it was made with a "ssh-rsa" key, warden accepts only Ed25519 (ssh-ed25519) keys; ' +
          'sign the file again with an Ed25519 key (make one with "ssh-keygen -t ed25519")',
      );
    });

    it("refuses malformed armor and signature data, naming what is wrong", async () => {
      const begin = "-----BEGIN SSH SIGNATURE-----";
      const end = "-----END SSH SIGNATURE-----";
      const real = dearmor(await keygenSign("alice", NS, manifest));
      const sigBytes = real.subarray(real.length - 64);
      const blob = (fields: {
        magic?: string;
        version?: number;
        hash?: string;
        sigType?: string;
        sig?: Uint8Array;
        tail?: Uint8Array;
        innerTail?: Uint8Array;
        key?: Uint8Array;
        inner?: Uint8Array;
      }) =>
        Buffer.concat([
          Buffer.from(fields.magic ?? "SSHSIG"),
          u32(fields.version ?? 1),
          wire(fields.key ?? alice.blob),
          wire(NS),
          wire(""),
          wire(fields.hash ?? "sha512"),
          wire(
            fields.inner ??
              Buffer.concat([
                wire(fields.sigType ?? "ssh-ed25519"),
                wire(fields.sig ?? sigBytes),
                fields.innerTail ?? Buffer.alloc(0),
              ]),
          ),
          fields.tail ?? Buffer.alloc(0),
        ]);
      const armored = (bytes: Uint8Array) => armorWith(begin, end, bytes);
      // The builder reproduces ssh-keygen's bytes, so each case below changes only what it names.
      assert.deepEqual(blob({}), real);
      const cases: [string, string][] = [
        ["", `expected text starting with a "${begin}" line, received ""`],
        [
          "-----BEGIN SSH SIGNATURE----- U1NIU0lH",
          `expected text starting with a "${begin}" line, received "-----BEGIN SSH SIGNATURE----- U1NIU0lH"`,
        ],
        [`${begin}\nU1NIU0lH\n`, `the "${end}" line is missing`],
        [`${armored(real)}${begin}\n`, `there is text after the "${end}" line`],
        [`${begin}\nU1NIU0lH*AAAA\n${end}\n`, "the text between the BEGIN and END lines is not valid base64"],
        [armored(blob({ magic: "SSHSIH" })), 'the data does not start with the "SSHSIG" magic preamble'],
        [armored(blob({ version: 2 })), "unsupported signature version 2, expected 1"],
        [armored(blob({ version: 0 })), "unsupported signature version 0, expected 1"],
        [armored(real.subarray(0, 70)), "the data ends inside the namespace"],
        [armored(real.subarray(0, 8)), "the data ends inside the version"],
        [armored(real.subarray(0, real.length - 1)), "the data ends inside the signature"],
        [armored(blob({ tail: Buffer.from([0, 0]) })), "trailing data after the signature: 2 bytes"],
        [armored(blob({ hash: "sha1" })), 'unsupported hash algorithm "sha1", expected sha256 or sha512'],
        [armored(blob({ sigType: "rsa-sha2-512" })), 'the signature is of type "rsa-sha2-512", expected "ssh-ed25519"'],
        [armored(blob({ sig: sigBytes.subarray(1) })), "the Ed25519 signature is 63 bytes, expected 64"],
        [armored(blob({ innerTail: Buffer.from([1]) })), "trailing data after the Ed25519 signature: 1 byte"],
      ];
      for (const [text, detail] of cases) {
        await rejectsWith(parseSignature(text), "invalid_signature", `Invalid SSH signature: ${detail}; ${SIGN_FIX}`);
      }
    });

    it("names the field a truncated or malformed signature ends in, and what is wrong with its public key", async () => {
      const begin = "-----BEGIN SSH SIGNATURE-----";
      const end = "-----END SSH SIGNATURE-----";
      const real = dearmor(await keygenSign("alice", NS, manifest));
      const armored = (bytes: Uint8Array) => armorWith(begin, end, bytes);
      const keyRaw = alice.raw;
      // Offsets in ssh-keygen's bytes: magic (6), version (4), the public key, the namespace, the reserved field.
      const afterKey = 6 + 4 + 4 + alice.blob.length;
      const afterNamespace = afterKey + 4 + NS.length;
      const afterReserved = afterNamespace + 4;
      const withKey = (key: Uint8Array) =>
        Buffer.concat([Buffer.from("SSHSIG"), u32(1), wire(key), real.subarray(afterKey)]);
      const withInner = (inner: Uint8Array) =>
        Buffer.concat([real.subarray(0, afterReserved), wire("sha512"), wire(inner)]);
      const malformedKey = "its public key is malformed: ";
      const cases: [Uint8Array, string][] = [
        [real.subarray(0, 3), "the data ends inside the magic preamble"],
        [real.subarray(0, 12), "the data ends inside the public key"],
        [real.subarray(0, afterKey - 1), "the data ends inside the public key"],
        [real.subarray(0, afterNamespace + 2), "the data ends inside the reserved field"],
        [real.subarray(0, afterReserved + 6), "the data ends inside the hash algorithm"],
        [withInner(Buffer.concat([u32(11), Buffer.from("ssh-ed")])), "the data ends inside the signature type"],
        [
          withInner(Buffer.concat([wire("ssh-ed25519"), u32(64), Buffer.alloc(10)])),
          "the data ends inside the Ed25519 signature",
        ],
        [
          withKey(Buffer.concat([wire("ssh-ed25519"), wire(keyRaw.subarray(1))])),
          `${malformedKey}the Ed25519 key is 31 bytes, expected 32`,
        ],
        [
          withKey(Buffer.concat([wire("ssh-ed25519"), wire(keyRaw), Buffer.from([7])])),
          `${malformedKey}trailing data after the key: 1 byte`,
        ],
        [withKey(Buffer.concat([wire("ssh-ed25519"), u32(32)])), `${malformedKey}the data ends inside the Ed25519 key`],
        [withKey(Buffer.concat([u32(11), Buffer.from("ssh-ed")])), `${malformedKey}the data ends inside the key type`],
        [
          withKey(Buffer.concat([wire(Buffer.from([0xff, 0xfe])), wire(keyRaw)])),
          `${malformedKey}the key type is not valid UTF-8`,
        ],
        [Buffer.concat([real.subarray(0, afterKey), wire(Buffer.from([0xc3]))]), "the namespace is not valid UTF-8"],
      ];
      // The builders reproduce ssh-keygen's bytes, so each case changes only what it names.
      assert.deepEqual(withKey(alice.blob), real);
      assert.deepEqual(withInner(real.subarray(afterReserved + 4 + 6 + 4)), real);
      for (const [bytes, detail] of cases) {
        await rejectsWith(
          parseSignature(armored(bytes)),
          "invalid_signature",
          `Invalid SSH signature: ${detail}; ${SIGN_FIX}`,
        );
      }
    });
  });

  describe("private keys", () => {
    const begin = "-----BEGIN OPENSSH PRIVATE KEY-----";
    const end = "-----END OPENSSH PRIVATE KEY-----";

    it("reads a key file with CRLF line endings", async () => {
      const key = await parsePrivateKey(read("alice").replaceAll("\n", "\r\n"));
      assert.equal(key.publicKey.text, alice.text);
      assert.equal(key.comment, "alice@example.com");
    });

    it("derives the public key from any seed, whatever characters its base64url form has", async () => {
      // WebCrypto exports the derived public key as base64url: the first seeds (counting up from 0) whose key has
      // both "-" and "_" there, so that each must be read as "+" and "/".
      let found: { seed: Uint8Array; pub: Uint8Array } | undefined;
      for (let i = 0; found === undefined; i++) {
        const seed = new Uint8Array(32).fill(i % 256);
        seed[0] = i >> 8;
        const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
        const probe = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, true, ["sign"]);
        const x = (await crypto.subtle.exportKey("jwk", probe)).x ?? "";
        if (x.includes("-") && x.includes("_")) found = { seed, pub: Buffer.from(x, "base64url") };
      }
      const { seed, pub } = found;
      const blob = Buffer.concat([wire("ssh-ed25519"), wire(pub)]);
      const section = Buffer.concat([
        u32(7),
        u32(7),
        wire("ssh-ed25519"),
        wire(pub),
        wire(Buffer.concat([seed, pub])),
        wire("seeded"),
      ]);
      const padded = Buffer.concat([
        section,
        Buffer.from([1, 2, 3, 4, 5, 6, 7].slice(0, (8 - (section.length % 8)) % 8)),
      ]);
      const bytes = Buffer.concat([
        Buffer.from("openssh-key-v1\0"),
        wire("none"),
        wire("none"),
        wire(""),
        u32(1),
        wire(blob),
        wire(padded),
      ]);
      const key = await parsePrivateKey(armorWith(begin, end, bytes));
      assert.equal(key.publicKey.text, `ssh-ed25519 ${blob.toString("base64")}`);
      const sig = await parseSignature(await signMessage(key, manifest, NS));
      assert.deepEqual(await verifySignature(sig, manifest, NS), { ok: true });
    });

    it("refuses an encrypted key, pointing at ssh-keygen -Y sign", async () => {
      assert.match(read("locked"), /^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
      await rejectsWith(parsePrivateKey(read("locked")), "invalid_key", ENCRYPTED);
    });

    it("refuses an RSA private key as an unsupported type", async () => {
      await rejectsWith(parsePrivateKey(read("rsa")), "invalid_key", UNSUPPORTED_RSA);
    });

    it("refuses a key whose check integers differ, or whose private half is another key's", async () => {
      const bytes = dearmor(read("alice"));
      // openssh-key-v1\0 (15), "none" (8), "none" (8), "" (4), count (4), public key (4 + 51), section length (4).
      const checkAt = 15 + 8 + 8 + 4 + 4 + 55 + 4;
      assert.equal(bytes.readUInt32BE(checkAt), bytes.readUInt32BE(checkAt + 4));
      const corrupt = Buffer.from(bytes);
      corrupt[checkAt + 7] ^= 1;
      await rejectsWith(
        parsePrivateKey(armorWith(begin, end, corrupt)),
        "invalid_key",
        `Invalid SSH private key: its two check integers differ, so the file is corrupt; ${PRIVATE_FIX}`,
      );
      // Alice's seed under Bob's public key, everywhere the file names it.
      const swapped = Buffer.from(bytes);
      const aliceRaw = Buffer.from(alice.raw);
      let replaced = 0;
      for (let at = swapped.indexOf(aliceRaw); at !== -1; at = swapped.indexOf(aliceRaw, at + 32)) {
        swapped.set(bob.raw, at);
        replaced++;
      }
      assert.equal(replaced, 3);
      await rejectsWith(
        parsePrivateKey(armorWith(begin, end, swapped)),
        "invalid_key",
        `Invalid SSH private key: the private key does not match its public key; ${PRIVATE_FIX}`,
      );
    });

    it("refuses a malformed key file, naming the field and what is wrong with it", async () => {
      const real = dearmor(read("alice"));
      // The file's fields as ssh-keygen wrote them (PROTOCOL.key), read back to build each variant from.
      let at = 0;
      const take = (n: number) => real.subarray(at, at += n);
      const field = () => take(take(4).readUInt32BE(0));
      take(15);
      const [cipher, kdf, kdfOptions] = [field(), field(), field()];
      const count = take(4).readUInt32BE(0);
      const publicBlob = field();
      const section = field();
      assert.equal(at, real.length);
      const check = real.subarray(real.length - section.length, real.length - section.length + 4);
      at = real.length - section.length + 8;
      const [type, pub, priv, comment] = [field(), field(), field(), field()];
      assert.deepEqual(
        [cipher, kdf, kdfOptions].map(String).concat(String(count), String(type), String(comment)),
        ["none", "none", "", "1", "ssh-ed25519", "alice@example.com"],
      );
      const pad = (bytes: Buffer) =>
        Buffer.concat([bytes, Buffer.from(Array.from({ length: (8 - (bytes.length % 8)) % 8 }, (_, i) => i + 1))]);
      const inner = (fields: { pub?: Uint8Array; priv?: Uint8Array; type?: string; comment?: Uint8Array } = {}) =>
        Buffer.concat([
          check,
          check,
          wire(fields.type ?? "ssh-ed25519"),
          wire(fields.pub ?? pub),
          wire(fields.priv ?? priv),
          wire(fields.comment ?? comment),
        ]);
      const file = (fields: {
        cipher?: string;
        kdf?: string;
        count?: number;
        publicBlob?: Uint8Array;
        section?: Uint8Array;
        tail?: Uint8Array;
      } = {}) =>
        Buffer.concat([
          Buffer.from("openssh-key-v1\0"),
          wire(fields.cipher ?? "none"),
          wire(fields.kdf ?? "none"),
          wire(""),
          u32(fields.count ?? 1),
          wire(fields.publicBlob ?? publicBlob),
          wire(fields.section ?? pad(inner())),
          fields.tail ?? Buffer.alloc(0),
        ]);
      /** A section that ends inside the field after `prefix`: its length says 1000 bytes, then zeros up to a multiple of 8. */
      const endsAfter = (prefix: Uint8Array) => {
        const body = Buffer.concat([prefix, u32(1000)]);
        return Buffer.concat([body, Buffer.alloc((8 - (body.length % 8)) % 8)]);
      };
      // The builders reproduce ssh-keygen's bytes, so each case changes only what it names.
      assert.deepEqual(file(), real);
      const otherHalf = Buffer.concat([priv.subarray(0, 32), bob.raw]);
      const cases: [Uint8Array, string][] = [
        [real.subarray(0, 10), "the data ends inside the magic preamble"],
        [real.subarray(0, 15 + 6), "the data ends inside the cipher name"],
        [real.subarray(0, 15 + 8 + 6), "the data ends inside the KDF name"],
        [real.subarray(0, 15 + 16 + 2), "the data ends inside the KDF options"],
        [real.subarray(0, 15 + 20 + 2), "the data ends inside the key count"],
        [real.subarray(0, 15 + 24 + 20), "the data ends inside the public key"],
        [real.subarray(0, real.length - 3), "the data ends inside the private section"],
        [file({ count: 2 }), "the file holds 2 keys, expected 1"],
        [file({ count: 0 }), "the file holds 0 keys, expected 1"],
        [
          file({ publicBlob: Buffer.concat([wire("ssh-ed25519"), wire(alice.raw.subarray(1))]) }),
          "its public key is malformed: the Ed25519 key is 31 bytes, expected 32",
        ],
        [file({ tail: Buffer.from([0, 0]) }), "trailing data after the private section: 2 bytes"],
        [file({ section: inner() }), `the private section is ${inner().length} bytes, not a multiple of 8`],
        [file({ section: Buffer.alloc(0) }), "the data ends inside the check integers"],
        [file({ section: endsAfter(Buffer.concat([check, check])) }), "the data ends inside the private key type"],
        [
          file({ section: endsAfter(Buffer.concat([check, check, wire("ssh-ed25519")])) }),
          "the data ends inside the Ed25519 public key",
        ],
        [
          file({ section: endsAfter(Buffer.concat([check, check, wire("ssh-ed25519"), wire(pub)])) }),
          "the data ends inside the Ed25519 private key",
        ],
        [
          file({ section: endsAfter(Buffer.concat([check, check, wire("ssh-ed25519"), wire(pub), wire(priv)])) }),
          "the data ends inside the comment",
        ],
        [file({ section: pad(inner({ comment: Buffer.from([0xc3, 0x28]) })) }), "the comment is not valid UTF-8"],
        [
          file({ section: pad(inner({ pub: bob.raw })) }),
          "the private section holds another public key than the file's header",
        ],
        [
          file({ section: pad(inner({ priv: priv.subarray(0, 63) })) }),
          "the Ed25519 private key is malformed (63 bytes, expected the 32-byte seed and the public key)",
        ],
        [
          file({ section: pad(inner({ priv: otherHalf })) }),
          "the Ed25519 private key is malformed (64 bytes, expected the 32-byte seed and the public key)",
        ],
        [
          file({ section: Buffer.concat([inner(), Buffer.from([1, 2, 3, 5])]) }),
          "the padding after the key is not 1, 2, 3...",
        ],
      ];
      assert.equal(inner().length % 8, 4, "alice's section needs 4 bytes of padding, which the cases above rely on");
      for (const [bytes, detail] of cases) {
        await rejectsWith(
          parsePrivateKey(armorWith(begin, end, bytes)),
          "invalid_key",
          `Invalid SSH private key: ${detail}; ${PRIVATE_FIX}`,
        );
      }
      // Either name other than "none" is an encrypted key; another type in the private section is unsupported.
      for (const variant of [file({ cipher: "aes256-ctr" }), file({ kdf: "bcrypt" })]) {
        await rejectsWith(parsePrivateKey(armorWith(begin, end, variant)), "invalid_key", ENCRYPTED);
      }
      await rejectsWith(
        parsePrivateKey(armorWith(begin, end, file({ section: pad(inner({ type: "ssh-rsa" })) }))),
        "invalid_key",
        UNSUPPORTED_RSA,
      );
    });

    it("refuses what is not an OpenSSH private key", async () => {
      const cases: [string, string][] = [
        [
          "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
          'expected an OpenSSH private key ("-----BEGIN OPENSSH PRIVATE KEY-----"), received "-----BEGIN PRIVATE KEY-----"',
        ],
        [`${begin}\nb3BlbnNzaC1rZXktdjEA\n`, `the "${end}" line is missing or not last`],
        [`${begin}\nb3BlbnNzaC1rZXktdjEA${end}\n`, `the "${end}" line is missing or not last`],
        [
          `${begin}b3Bl\nbnNzaC1rZXktdjEA\n${end}\n`,
          `expected an OpenSSH private key ("${begin}"), received "${begin}b3Bl"`,
        ],
        [`${begin}\n#\n${end}\n`, "the text between the BEGIN and END lines is not valid base64"],
        [armorWith(begin, end, Buffer.from("openssh-key-v2\0")), 'the data does not start with "openssh-key-v1"'],
      ];
      for (const [text, detail] of cases) {
        await rejectsWith(parsePrivateKey(text), "invalid_key", `Invalid SSH private key: ${detail}; ${PRIVATE_FIX}`);
      }
    });
  });

  describe("allowed_signers", () => {
    it("parses principals, options, comments and blank lines", async () => {
      const text = [
        "# team signers",
        "",
        `alice@example.com,*@ops.example.com ${alice.text} alice's laptop`,
        `   bob@example.com NAMESPACES="warden-*,!warden-test",Valid-After="20250102Z",valid-before="20300101123000Z" ${bob.text}`,
        `\t# indented comment`,
        `"carol smith@example.com" cert-authority ${carol.text}\r`,
        `ci-?@example.com valid-after="202501021530UTC" ${carol.text}`,
        // Tabs and spaces between fields; a quoted part that is not the whole token is kept as written; a principal
        // named like a key type, since a key follows it; a namespace holding an escaped quote.
        `dave@example.com \t namespaces="a\\"b,warden-plugin-v1"\t\t${alice.text.replace(" ", "\t")}`,
        `"eve smith"@example.com ${bob.text}`,
        `ssh-ed25519 ${carol.text}`,
        // A quoted part at the end of a token that does not start with one; a backslash escapes a quote only, so one
        // before a blank ends its token, and one before another character is kept, in a principal and in a value.
        `eve@example.com,x"y z" ${bob.text}`,
        `frank\\ ${carol.text}`,
        `grace@example.com namespaces="warden\\-x" ${alice.text}`,
        "",
      ].join("\n");
      const signers = await parseAllowedSigners(text, "team_signers");
      const view = (s: AllowedSigner) => ({
        principals: s.principals,
        namespaces: s.namespaces,
        validAfter: s.validAfter?.toISOString() ?? null,
        validBefore: s.validBefore?.toISOString() ?? null,
        certAuthority: s.certAuthority,
        fingerprint: s.key.fingerprint,
        at: `${s.source}:${s.line}`,
      });
      assert.deepEqual(signers.map(view), [
        {
          principals: ["alice@example.com", "*@ops.example.com"],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: alice.fingerprint,
          at: "team_signers:3",
        },
        {
          principals: ["bob@example.com"],
          namespaces: ["warden-*", "!warden-test"],
          validAfter: "2025-01-02T00:00:00.000Z",
          validBefore: "2030-01-01T12:30:00.000Z",
          certAuthority: false,
          fingerprint: bob.fingerprint,
          at: "team_signers:4",
        },
        {
          principals: ["carol smith@example.com"],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: true,
          fingerprint: carol.fingerprint,
          at: "team_signers:6",
        },
        {
          principals: ["ci-?@example.com"],
          namespaces: null,
          validAfter: "2025-01-02T15:30:00.000Z",
          validBefore: null,
          certAuthority: false,
          fingerprint: carol.fingerprint,
          at: "team_signers:7",
        },
        {
          principals: ["dave@example.com"],
          namespaces: ['a"b', "warden-plugin-v1"],
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: alice.fingerprint,
          at: "team_signers:8",
        },
        {
          principals: ['"eve smith"@example.com'],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: bob.fingerprint,
          at: "team_signers:9",
        },
        {
          principals: ["ssh-ed25519"],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: carol.fingerprint,
          at: "team_signers:10",
        },
        {
          principals: ["eve@example.com", 'x"y z"'],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: bob.fingerprint,
          at: "team_signers:11",
        },
        {
          principals: ["frank\\"],
          namespaces: null,
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: carol.fingerprint,
          at: "team_signers:12",
        },
        {
          principals: ["grace@example.com"],
          namespaces: ["warden\\-x"],
          validAfter: null,
          validBefore: null,
          certAuthority: false,
          fingerprint: alice.fingerprint,
          at: "team_signers:13",
        },
      ]);
      // What checkSigner reads cannot be changed behind its back.
      for (const signer of signers) {
        assert.ok(Object.isFrozen(signer) && Object.isFrozen(signer.principals));
        assert.ok(signer.namespaces === null || Object.isFrozen(signer.namespaces));
      }
      assert.deepEqual(await parseAllowedSigners("# nothing\n\n", "empty"), []);
    });

    it("reads times as UTC with Z and as local time without, as ssh-keygen does", async () => {
      const cases: [string, string, string][] = [
        ["Asia/Kolkata", "20250102Z", "2025-01-02T00:00:00.000Z"],
        ["Asia/Kolkata", "20250102utc", "2025-01-02T00:00:00.000Z"],
        ["Asia/Kolkata", "202501021530Z", "2025-01-02T15:30:00.000Z"],
        ["Asia/Kolkata", "20250102153045z", "2025-01-02T15:30:45.000Z"],
        ["Asia/Kolkata", "20240229Z", "2024-02-29T00:00:00.000Z"],
        ["Asia/Kolkata", "20000229Z", "2000-02-29T00:00:00.000Z"],
        ["Asia/Kolkata", "20251231235959Z", "2025-12-31T23:59:59.000Z"],
        ["Asia/Kolkata", "20250102", "2025-01-01T18:30:00.000Z"],
        ["Asia/Kolkata", "20250102153045", "2025-01-02T10:00:45.000Z"],
        ["America/New_York", "20250102", "2025-01-02T05:00:00.000Z"],
        ["America/New_York", "202507021530", "2025-07-02T19:30:00.000Z"],
        ["America/New_York", "202507021530Z", "2025-07-02T15:30:00.000Z"],
      ];
      const saved = process.env.TZ;
      try {
        for (const [zone, value, expected] of cases) {
          process.env.TZ = zone;
          const [signer] = await parseAllowedSigners(signerLine("a@b", `valid-before="${value}"`, alice), "times");
          assert.equal(signer.validBefore?.toISOString(), expected, `${value} in ${zone}`);
        }
      } finally {
        if (saved === undefined) delete process.env.TZ;
        else process.env.TZ = saved;
      }
    });

    it("refuses malformed lines with the source, the line number and a fix", async () => {
      const rsa = read("rsa.pub").trim();
      const data = alice.text.split(" ")[1];
      const cases: [string, string][] = [
        [`alice@example.com namespace="x" ${alice.text}`, `unknown option "namespace=\\"x\\""; ${OPTIONS_FIX}`],
        [
          `alice@example.com cert-authority,verify-required ${alice.text}`,
          `unknown option "verify-required"; ${OPTIONS_FIX}`,
        ],
        [
          `alice@example.com valid-after=20250101 ${alice.text}`,
          'the value of valid-after must be in double quotes, received "valid-after=20250101"; write valid-after="..."',
        ],
        [
          `alice@example.com namespaces="warden ${alice.text}`,
          `the options ${
            JSON.stringify(`namespaces="warden ${alice.text}`).slice(0, 77)
          }... has no closing quote; ${FORM_FIX}`,
        ],
        [
          `alice@example.com namespaces="a",namespaces="b" ${alice.text}`,
          "the option namespaces is given twice; keep one of them",
        ],
        [`alice@example.com cert-authority, ${alice.text}`, `the options end with a comma; ${OPTIONS_FIX}`],
        [
          `alice@example.com valid-after="2025-01-01" ${alice.text}`,
          `valid-after expects a timestamp, received "2025-01-01"; ${TIME_FIX}`,
        ],
        [
          `alice@example.com valid-before="20250230Z" ${alice.text}`,
          `valid-before expects a timestamp, received "20250230Z"; ${TIME_FIX}`,
        ],
        [
          `alice@example.com valid-before="20250101X" ${alice.text}`,
          `valid-before expects a timestamp, received "20250101X"; ${TIME_FIX}`,
        ],
        ...[
          "120250101Z",
          "21000229Z",
          "20250229Z",
          "20250001Z",
          "20251301Z",
          "20250100Z",
          "20250431Z",
          "20250631Z",
          "20251131Z",
        ].map((
          value,
        ): [string, string] => [
          `alice@example.com valid-after="${value}" ${alice.text}`,
          `valid-after expects a timestamp, received "${value}"; ${TIME_FIX}`,
        ]),
        ...["202501012400Z", "202501010060Z", "20250101000060Z"].map((value): [string, string] => [
          `alice@example.com valid-before="${value}" ${alice.text}`,
          `valid-before expects a timestamp, received "${value}"; ${TIME_FIX}`,
        ]),
        [
          `alice@example.com namespaces-extra="x" ${alice.text}`,
          `unknown option "namespaces-extra=\\"x\\""; ${OPTIONS_FIX}`,
        ],
        [
          `alice@example.com valid-after="19700101Z" ${alice.text}`,
          `valid-after "19700101Z" is not after 1970; ${TIME_FIX}`,
        ],
        [
          `alice@example.com valid-after="20250101Z",valid-before="20250101Z" ${alice.text}`,
          'valid-before "20250101Z" is not after valid-after "20250101Z"; correct one of them',
        ],
        ["alice@example.com", `expected principals and a key, received only "alice@example.com"; ${FORM_FIX}`],
        ["alice@example.com \t ", `expected principals and a key, received only "alice@example.com"; ${FORM_FIX}`],
        ['alice@example.com namespaces="x"', `the key is missing after the options; ${FORM_FIX}`],
        [
          `alice@example.com namespaces="x" ${data}`,
          `expected the key type ssh-ed25519 after the options, received "${data}"; ${FORM_FIX}`,
        ],
        [alice.text, `the line starts with the key type "ssh-ed25519"; put the principals first, ${FORM_FIX}`],
        [
          `alice@example.com,,bob@example.com ${alice.text}`,
          'principals "alice@example.com,,bob@example.com" has an empty entry; separate principals with single commas, without spaces',
        ],
        [
          `alice@example.com namespaces="" ${alice.text}`,
          'namespaces "" has an empty entry; separate namespaces with single commas, without spaces',
        ],
        [
          `alice@example.com namespaces="warden-*,!" ${alice.text}`,
          'namespaces "warden-*,!" has an empty entry; separate namespaces with single commas, without spaces',
        ],
        [
          `!mallory@example.com ${alice.text}`,
          `principals "!mallory@example.com" only negates, so it names no one; ${FORM_FIX}`,
        ],
        [
          `alice@example.com ${rsa}`,
          'key type "ssh-rsa" is not supported, warden accepts only Ed25519 (ssh-ed25519) keys; replace the key with an Ed25519 one (made by "ssh-keygen -t ed25519") or delete the line',
        ],
        [
          `alice@example.com ssh-ed25519 AAAA!`,
          `Invalid SSH public key: the key data is not valid base64, received "AAAA!"; ${PUBLIC_FIX}`,
        ],
        [
          `alice@example.com ssh-ed25519`,
          `Invalid SSH public key: the base64 key data after "ssh-ed25519" is missing; ${PUBLIC_FIX}`,
        ],
        // Text after an option's closing quote is no option either.
        [`alice@example.com namespaces="a"x ${alice.text}`, `unknown option "x"; ${OPTIONS_FIX}`],
        [`alice@example.com namespaces="a"xy,cert-authority ${alice.text}`, `unknown option "xy"; ${OPTIONS_FIX}`],
        // Each field's unclosed quote is named by the field.
        [
          `"alice@example.com ${alice.text}`,
          `the principals ${
            JSON.stringify(`"alice@example.com ${alice.text}`).slice(0, 77)
          }... has no closing quote; ${FORM_FIX}`,
        ],
        [
          `alice@example.com namespaces="x" "ssh-ed25519 ${data}`,
          `the key type ${JSON.stringify(`"ssh-ed25519 ${data}`).slice(0, 77)}... has no closing quote; ${FORM_FIX}`,
        ],
        [
          `alice@example.com ssh-ed25519 "${data}`,
          `the key ${JSON.stringify(`"${data}`)} has no closing quote; ${FORM_FIX}`,
        ],
      ];
      for (const [bad, message] of cases) {
        const text = `# signers\n\n${signerLine("bob@example.com", "", bob)}\n${bad}\n${
          signerLine("carol@example.com", "", carol)
        }\n`;
        await rejectsWith(
          parseAllowedSigners(text, "team_signers"),
          "invalid_trust_store",
          `Invalid allowed_signers line 4 in team_signers: ${message}`,
        );
      }
    });

    it("reads revoked keys one per line, skipping comments and key types warden never trusts", async () => {
      const text = [
        "# revoked 2025-01",
        read("bob.pub").trim(),
        "",
        read("rsa.pub").trim(),
        read("ecdsa.pub").trim().replace(" ", "\t"),
        `  ${carol.text}  `,
      ].join("\n");
      const revoked = await parseRevokedKeys(text, "revoked.txt");
      assert.deepEqual(revoked.map((key) => key.fingerprint), [bob.fingerprint, carol.fingerprint]);
      await rejectsWith(
        parseRevokedKeys(`${bob.text}\n\nnot a key\n`, "revoked.txt"),
        "invalid_trust_store",
        `Invalid revoked keys line 3 in revoked.txt: Invalid SSH public key: expected "ssh-ed25519 AAAA..." as in a .pub file, received "not a key"; ${PUBLIC_FIX}`,
      );
      await rejectsWith(
        parseRevokedKeys(`# x\nssh-ed25519 AAAA!`, "revoked.txt"),
        "invalid_trust_store",
        `Invalid revoked keys line 2 in revoked.txt: Invalid SSH public key: the key data is not valid base64, received "AAAA!"; ${PUBLIC_FIX}`,
      );
    });
  });

  describe("checkSigner", () => {
    const now = new Date("2026-06-15T12:00:00Z");

    it("decides each status", async () => {
      const cases: {
        name: string;
        signers: string[];
        revoked?: SshPublicKey[];
        key?: SshPublicKey;
        namespace?: string;
        at?: Date;
        expected: SignerDecision;
      }[] = [
        {
          name: "listed without options",
          signers: [signerLine("alice@example.com,alice@work.example.com", "", alice)],
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "a wildcard principal, as written",
          signers: [signerLine("*@example.com,bob", "", alice)],
          expected: { status: "trusted", principal: "*@example.com" },
        },
        {
          name: "the first principal that is not negated",
          signers: [signerLine("!eve@example.com,alice@example.com", "", alice)],
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "the first matching line wins",
          signers: [
            signerLine("bob@example.com", "", bob),
            signerLine("old@example.com", 'valid-before="20200101Z"', alice),
            signerLine("git@example.com", 'namespaces="git"', alice),
            signerLine("second@example.com", "", alice),
            signerLine("third@example.com", "", alice),
          ],
          expected: { status: "trusted", principal: "second@example.com" },
        },
        {
          name: "a namespace pattern that matches",
          signers: [signerLine("alice@example.com", 'namespaces="git,warden-*"', alice)],
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "inside the validity window",
          signers: [signerLine("alice@example.com", 'valid-after="20260101Z",valid-before="20270101Z"', alice)],
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "revoked wins over a trusting line",
          signers: [signerLine("alice@example.com", "", alice)],
          revoked: [bob, alice],
          expected: { status: "revoked" },
        },
        {
          name: "revoked even when not listed",
          signers: [],
          revoked: [alice],
          expected: { status: "revoked" },
        },
        {
          name: "another key is listed",
          signers: [signerLine("bob@example.com", "", bob)],
          revoked: [carol],
          expected: { status: "unknown-signer" },
        },
        {
          name: "listed only as a certificate authority",
          signers: [signerLine("*@example.com", "cert-authority", alice)],
          expected: { status: "unknown-signer" },
        },
        {
          name: "listed for other namespaces only",
          signers: [signerLine("alice@example.com", 'namespaces="git,file"', alice)],
          expected: { status: "wrong-namespace" },
        },
        {
          name: "a namespace excluded by negation",
          signers: [signerLine("alice@example.com", 'namespaces="*,!warden-plugin-v1"', alice)],
          expected: { status: "wrong-namespace" },
        },
        {
          name: "a namespace pattern is not a prefix match",
          signers: [signerLine("alice@example.com", 'namespaces="warden"', alice)],
          expected: { status: "wrong-namespace" },
        },
        {
          name: "a namespace of the same length is not a match",
          signers: [signerLine("alice@example.com", 'namespaces="warden-plugin-v2"', alice)],
          expected: { status: "wrong-namespace" },
        },
        {
          name: "a namespace pattern's other characters are literal, not a regular expression",
          signers: [
            signerLine(
              "alice@example.com",
              'namespaces="warden-plugin-v1.,warden-plugin-v1+,(warden)-plugin-v1"',
              alice,
            ),
          ],
          expected: { status: "wrong-namespace" },
        },
        {
          name: "?, then literal regular-expression characters, match as written",
          signers: [signerLine("alice@example.com", 'namespaces="warden-plugin-v?,team.v1+(x)"', alice)],
          namespace: "team.v1+(x)",
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "after valid-before",
          signers: [signerLine("alice@example.com", 'valid-before="20260615115959Z"', alice)],
          expected: { status: "key-expired" },
        },
        {
          name: "before valid-after (not yet valid)",
          signers: [signerLine("alice@example.com", 'valid-after="202606151201Z"', alice)],
          expected: { status: "key-expired" },
        },
        {
          name: "expired for this namespace beats listed for another",
          signers: [
            signerLine("alice@example.com", 'namespaces="git"', alice),
            signerLine("alice@example.com", 'valid-before="20250101Z"', alice),
          ],
          expected: { status: "key-expired" },
        },
        {
          name: "valid-before is inclusive to the second",
          signers: [signerLine("alice@example.com", 'valid-before="20260615120000Z"', alice)],
          at: new Date("2026-06-15T12:00:00.999Z"),
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "one second after valid-before",
          signers: [signerLine("alice@example.com", 'valid-before="20260615120000Z"', alice)],
          at: new Date("2026-06-15T12:00:01Z"),
          expected: { status: "key-expired" },
        },
        {
          name: "valid from the second of valid-after",
          signers: [signerLine("alice@example.com", 'valid-after="20260615120000Z"', alice)],
          expected: { status: "trusted", principal: "alice@example.com" },
        },
        {
          name: "a millisecond before valid-after",
          signers: [signerLine("alice@example.com", 'valid-after="20260615120000Z"', alice)],
          at: new Date("2026-06-15T11:59:59.999Z"),
          expected: { status: "key-expired" },
        },
        {
          name: "another namespace asked",
          signers: [signerLine("alice@example.com", 'namespaces="warden-plugin-v1"', alice)],
          namespace: "git",
          expected: { status: "wrong-namespace" },
        },
      ];
      for (const c of cases) {
        const signers = await parseAllowedSigners(c.signers.join("\n"), "cases");
        const decision = checkSigner(signers, c.revoked ?? [], c.key ?? alice, c.namespace ?? NS, c.at ?? now);
        assert.deepEqual(decision, c.expected, c.name);
      }
    });

    it("trusts exactly what ssh-keygen -Y verify accepts", async () => {
      const signature = await keygenSign("alice", NS, manifest);
      writeFileSync(file("agree.sig"), signature);
      writeFileSync(file("revoked_keys"), `# revoked\n${read("alice.pub")}`);
      const cases: { options: string; principals?: string; revoke?: boolean; trusted: boolean }[] = [
        { options: "", trusted: true },
        { options: "", principals: "*@example.com", trusted: true },
        { options: 'namespaces="warden-*"', trusted: true },
        { options: 'NameSpaces="git,warden-plugin-v?"', trusted: true },
        { options: 'namespaces="git"', trusted: false },
        { options: 'namespaces="*,!warden-plugin-v1"', trusted: false },
        { options: 'valid-before="20000101Z"', trusted: false },
        { options: 'valid-after="29990101"', trusted: false },
        { options: 'valid-after="20000101",valid-before="299901011200Z"', trusted: true },
        { options: "cert-authority", trusted: false },
        { options: "", revoke: true, trusted: false },
      ];
      const sig = await parseSignature(signature);
      assert.deepEqual(await verifySignature(sig, manifest, NS), { ok: true });
      for (const c of cases) {
        const text = `${signerLine(c.principals ?? "alice@example.com", c.options, alice)}\n`;
        writeFileSync(file("agree_signers"), text);
        const revokedText = c.revoke ? read("revoked_keys") : "";
        const ours = checkSigner(
          await parseAllowedSigners(text, "agree_signers"),
          await parseRevokedKeys(revokedText, "revoked_keys"),
          sig.publicKey,
          NS,
          new Date(),
        );
        const args = ["-Y", "verify", "-f", "agree_signers", "-I", "alice@example.com", "-n", NS, "-s", "agree.sig"];
        const theirs = await sshKeygen(work.dir, c.revoke ? [...args, "-r", "revoked_keys"] : args, manifest);
        const label = `${c.options || "(no options)"}${c.revoke ? " revoked" : ""}`;
        assert.equal(theirs.code === 0, c.trusted, `ssh-keygen on ${label}: ${theirs.stderr}`);
        assert.equal(ours.status === "trusted", c.trusted, `checkSigner on ${label}: ${ours.status}`);
      }
    });
  });
});
