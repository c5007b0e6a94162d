// The OpenSSH allowed_signers trust store (ssh-keygen(1), "ALLOWED SIGNERS")
// and a plain list of revoked keys, read the way ssh-keygen -Y verify reads
// them, and the decision whether a key may sign in a namespace at a time.
// Runtime-neutral: text in, decisions out.
import { problem, received, WardenError } from "../../errors.ts";
import { isSshKeyType, parsePublicKey, type SshPublicKey } from "./sshsig.ts";

/** One key line of an allowed_signers file. */
export interface AllowedSigner {
  /** The principals field, split on commas, as written: patterns with `*`, `?` and `!` negation. */
  readonly principals: readonly string[];
  /** The `namespaces="..."` pattern-list, split on commas; null when the line does not restrict namespaces. */
  readonly namespaces: readonly string[] | null;
  /** `valid-after="..."`: the key may sign from this instant on; null when absent. */
  readonly validAfter: Date | null;
  /** `valid-before="..."`: the key may sign up to this instant; null when absent. */
  readonly validBefore: Date | null;
  /** `cert-authority`: the key signs certificates; warden verifies plain-key signatures only, so it never matches. */
  readonly certAuthority: boolean;
  readonly key: SshPublicKey;
  /** Where the line came from, for messages: the source name and the 1-based line number. */
  readonly source: string;
  readonly line: number;
}

/** What `checkSigner` decided about a key. */
export type SignerDecision =
  | { status: "trusted"; principal: string }
  | { status: "revoked" | "unknown-signer" | "key-expired" | "wrong-namespace" };

const FORM_HINT =
  'write principals, then optional options, then the key: alice@example.com namespaces="warden-plugin-v1" ' +
  "ssh-ed25519 AAAA... (see ALLOWED SIGNERS in ssh-keygen(1))";
const OPTIONS_HINT = 'the options are cert-authority, namespaces="...", valid-after="..." and valid-before="...", ' +
  "separated by commas without spaces, values in double quotes";
const TIME_HINT =
  'write a date as YYYYMMDD or a time as YYYYMMDDHHMM or YYYYMMDDHHMMSS, local time or ending in Z for UTC, e.g. "20250101Z"';

/** Why a line is refused: a detail and what to do. */
class LineProblem {
  constructor(readonly detail: string, readonly fix?: string) {}
}

function refuse(detail: string, fix?: string): never {
  throw new LineProblem(detail, fix);
}

// ---------------------------------------------------------------- patterns

/** Compiled patterns: `checkSigner` matches the same namespace patterns once per plugin. */
const patternCache = new Map<string, RegExp>();

function patternRegExp(pattern: string): RegExp {
  const known = patternCache.get(pattern);
  if (known !== undefined) return known;
  if (patternCache.size >= 256) patternCache.clear();
  const body = [...pattern].map((ch) =>
    ch === "*" ? "[\\s\\S]*" : ch === "?" ? "[\\s\\S]" : ch.replace(/[.+^${}()|[\]\\]/g, "\\$&")
  ).join("");
  const compiled = new RegExp(`^${body}$`, "u");
  patternCache.set(pattern, compiled);
  return compiled;
}

/**
 * OpenSSH `match_pattern_list` (ssh_config(5) PATTERNS), case-sensitive: true when `value` matches a pattern and no
 * negated (`!`) pattern.
 */
function matchPatternList(value: string, patterns: readonly string[]): boolean {
  let matched = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith("!");
    if (patternRegExp(negated ? pattern.slice(1) : pattern).test(value)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function splitPatternList(text: string, what: string): string[] {
  const items = text.split(",");
  if (items.some((item) => item === "" || item === "!")) {
    refuse(`${what} ${received(text)} has an empty entry`, `separate ${what} with single commas, without spaces`);
  }
  return items;
}

// ---------------------------------------------------------------- time

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** ssh-keygen's `parse_absolute_time`: YYYYMMDD[HHMM[SS]], local time unless it ends in Z (or UTC). */
function parseTimestamp(option: string, value: string): Date {
  const fail: () => never = () => refuse(`${option} expects a timestamp, received ${received(value)}`, TIME_HINT);
  const match = /^(\d{8}|\d{12}|\d{14})(Z|UTC)?$/i.exec(value);
  if (match === null) return fail();
  const field = (from: number, length = 2) => Number(match[1].slice(from, from + length) || "0");
  const [year, month, day, hour, minute, second] = [field(0, 4), field(4), field(6), field(8), field(10), field(12)];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = month === 2 && !leap ? 28 : DAYS_IN_MONTH[month - 1];
  if (month < 1 || month > 12 || day < 1 || day > monthDays || hour > 23 || minute > 59 || second > 59) fail();
  const date = new Date(0);
  if (match[2] === undefined) {
    date.setFullYear(year, month - 1, day);
    date.setHours(hour, minute, second, 0);
  } else {
    date.setUTCFullYear(year, month - 1, day);
    date.setUTCHours(hour, minute, second, 0);
  }
  // ssh-keygen refuses times at or before the epoch.
  if (date.getTime() <= 0) refuse(`${option} ${received(value)} is not after 1970`, TIME_HINT);
  return date;
}

// ---------------------------------------------------------------- lines

/** Reads one whitespace-delimited token at `at`, honouring double quotes as OpenSSH does; returns it and the rest. */
function token(line: string, at: number, what: string): { text: string; next: number } {
  let i = at;
  let quoted = false;
  while (i < line.length && (quoted || (line[i] !== " " && line[i] !== "\t"))) {
    if (line[i] === "\\" && line[i + 1] === '"') i++;
    else if (line[i] === '"') quoted = !quoted;
    i++;
  }
  if (quoted) refuse(`the ${what} ${received(line.slice(at))} has no closing quote`, FORM_HINT);
  let next = i;
  while (next < line.length && (line[next] === " " || line[next] === "\t")) next++;
  return { text: line.slice(at, i), next };
}

interface Options {
  certAuthority: boolean;
  namespaces: string[] | null;
  validAfter: Date | null;
  validBefore: Date | null;
}

const OPTION_NAMES = ["cert-authority", "namespaces", "valid-after", "valid-before"] as const;

/** ssh-keygen's `sshsigopt_parse`: comma-separated, names case-insensitive, values in double quotes. */
function parseOptions(text: string): Options {
  const options: Options = { certAuthority: false, namespaces: null, validAfter: null, validBefore: null };
  const values = new Map<string, string>();
  let rest = text;
  while (rest !== "") {
    const name = OPTION_NAMES.find((known) => {
      const head = rest.slice(0, known.length).toLowerCase();
      return head === known && (known === "cert-authority" || rest[known.length] === "=");
    });
    if (name === undefined) return refuse(`unknown option ${received(rest.split(",")[0])}`, OPTIONS_HINT);
    if (values.has(name)) refuse(`the option ${name} is given twice`, "keep one of them");
    rest = rest.slice(name.length);
    let value = "";
    if (name !== "cert-authority") {
      rest = rest.slice(1); // "="
      if (!rest.startsWith('"')) {
        refuse(
          `the value of ${name} must be in double quotes, received ${received(`${name}=${rest.split(",")[0]}`)}`,
          `write ${name}="..."`,
        );
      }
      let i = 1;
      while (i < rest.length && rest[i] !== '"') {
        if (rest[i] === "\\" && rest[i + 1] === '"') i++;
        value += rest[i++];
      }
      if (i >= rest.length) refuse(`the value of ${name} has no closing quote`, `write ${name}="..."`);
      rest = rest.slice(i + 1);
    }
    values.set(name, value);
    if (name === "cert-authority") options.certAuthority = true;
    else if (name === "namespaces") options.namespaces = splitPatternList(value, "namespaces");
    else if (name === "valid-after") options.validAfter = parseTimestamp(name, value);
    else options.validBefore = parseTimestamp(name, value);
    if (rest === "") break;
    if (!rest.startsWith(",")) refuse(`unknown option ${received(rest.split(",")[0])}`, OPTIONS_HINT);
    rest = rest.slice(1);
    if (rest === "") refuse("the options end with a comma", OPTIONS_HINT);
  }
  if (options.validAfter && options.validBefore && options.validBefore <= options.validAfter) {
    refuse(
      `valid-before ${received(values.get("valid-before"))} is not after valid-after ${
        received(values.get("valid-after"))
      }`,
      "correct one of them",
    );
  }
  return options;
}

async function readKey(type: string, data: string | undefined): Promise<SshPublicKey> {
  if (type !== "ssh-ed25519") {
    refuse(
      `key type ${received(type)} is not supported, warden accepts only Ed25519 (ssh-ed25519) keys`,
      'replace the key with an Ed25519 one (made by "ssh-keygen -t ed25519") or delete the line',
    );
  }
  try {
    return await parsePublicKey(data === undefined ? type : `${type} ${data}`);
  } catch (error) {
    if (error instanceof WardenError) refuse(error.message);
    throw error;
  }
}

async function parseLine(line: string): Promise<Omit<AllowedSigner, "source" | "line">> {
  const principalsToken = token(line, 0, "principals");
  const principalsText = principalsToken.text.startsWith('"') && principalsToken.text.endsWith('"')
    ? principalsToken.text.slice(1, -1)
    : principalsToken.text;
  if (principalsToken.next >= line.length) {
    refuse(`expected principals and a key, received only ${received(line)}`, FORM_HINT);
  }
  if (isSshKeyType(principalsText) && line.slice(principalsToken.next).startsWith("AAAA")) {
    refuse(`the line starts with the key type ${received(principalsText)}`, "put the principals first, " + FORM_HINT);
  }
  const principals = splitPatternList(principalsText, "principals");
  if (principals.every((p) => p.startsWith("!"))) {
    refuse(`principals ${received(principalsText)} only negates, so it names no one`, FORM_HINT);
  }
  let at = principalsToken.next;
  let options: Options = { certAuthority: false, namespaces: null, validAfter: null, validBefore: null };
  let typeToken = token(line, at, "options");
  if (!isSshKeyType(typeToken.text)) {
    options = parseOptions(typeToken.text);
    at = typeToken.next;
    if (at >= line.length) refuse("the key is missing after the options", FORM_HINT);
    typeToken = token(line, at, "key type");
    if (!isSshKeyType(typeToken.text)) {
      refuse(`expected the key type ssh-ed25519 after the options, received ${received(typeToken.text)}`, FORM_HINT);
    }
  }
  const data = typeToken.next < line.length ? token(line, typeToken.next, "key").text : undefined;
  const key = await readKey(typeToken.text, data);
  return {
    ...options,
    principals: Object.freeze(principals),
    namespaces: options.namespaces && Object.freeze(options.namespaces),
    key,
  };
}

function lineError(kind: string, number: number, source: string, reason: LineProblem): WardenError {
  return new WardenError(
    "invalid_trust_store",
    problem(`Invalid ${kind} line ${number} in ${source}`, reason.detail, reason.fix),
  );
}

/** The lines that carry something: number and text without leading whitespace; blank and # lines skipped. */
function contentLines(text: string): { number: number; text: string }[] {
  return text.split(/\r?\n/).map((line, i) => ({ number: i + 1, text: line.replace(/^[ \t]+/, "").trimEnd() }))
    .filter((line) => line.text !== "" && !line.text.startsWith("#"));
}

/**
 * Parses an OpenSSH allowed_signers file (ssh-keygen(1), "ALLOWED SIGNERS"): per line, comma-separated principals
 * (patterns with `*`, `?` and `!`, optionally in double quotes), optional comma-separated options
 * (`cert-authority`, `namespaces="<pattern-list>"`, `valid-after="<time>"`, `valid-before="<time>"`; names
 * case-insensitive, values quoted as ssh-keygen requires), then `ssh-ed25519 <base64>` and an optional comment.
 * Blank lines and lines starting with `#` are skipped.
 *
 * Times are `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`; ending in `Z` (or `UTC`) they are UTC, otherwise local
 * time of this process, as ssh-keygen reads them. Every key must be Ed25519, `cert-authority` lines too.
 *
 * @param source names the file in messages, e.g. its path.
 * @throws WardenError `invalid_trust_store`: `Invalid allowed_signers line <n> in <source>: <what>; <fix>`.
 */
export async function parseAllowedSigners(text: string, source: string): Promise<AllowedSigner[]> {
  const signers: AllowedSigner[] = [];
  for (const line of contentLines(text)) {
    try {
      signers.push(Object.freeze({ ...(await parseLine(line.text)), source, line: line.number }));
    } catch (error) {
      if (error instanceof LineProblem) throw lineError("allowed_signers", line.number, source, error);
      throw error;
    }
  }
  return signers;
}

/**
 * Parses a revoked-keys file in the plain-text form `ssh-keygen -Y verify -r` accepts: one public key per line
 * (`ssh-ed25519 AAAA... [comment]`), blank lines and `#` comments allowed. Keys of other types (ssh-rsa, ecdsa, ...)
 * are skipped: warden never trusts them, so revoking them changes nothing, and such a list is often shared.
 *
 * @param source names the file in messages, e.g. its path.
 * @throws WardenError `invalid_trust_store`: `Invalid revoked keys line <n> in <source>: <what>; <fix>`.
 */
export async function parseRevokedKeys(text: string, source: string): Promise<SshPublicKey[]> {
  const keys: SshPublicKey[] = [];
  for (const line of contentLines(text)) {
    const type = line.text.split(/[ \t]/)[0];
    if (type !== "ssh-ed25519" && isSshKeyType(type)) continue;
    try {
      keys.push(await parsePublicKey(line.text));
    } catch (error) {
      if (error instanceof WardenError) {
        throw lineError("revoked keys", line.number, source, new LineProblem(error.message));
      }
      throw error;
    }
  }
  return keys;
}

function withinValidity(signer: AllowedSigner, now: Date): boolean {
  // ssh-keygen compares whole seconds: valid from valid-after on, up to and including valid-before.
  const second = Math.floor(now.getTime() / 1000);
  if (signer.validAfter !== null && second < signer.validAfter.getTime() / 1000) return false;
  if (signer.validBefore !== null && second > signer.validBefore.getTime() / 1000) return false;
  return true;
}

/**
 * Decides whether `key` may sign in `namespace` at `now`, as `ssh-keygen -Y verify` would for a plain (non
 * certificate) key, without asking for a principal. `key` is the signature's key, once `verifySignature` has said
 * the signature is good.
 *
 * - `revoked`: the key is in `revoked`; this wins over everything else.
 * - `trusted`: a line lists the key (not as `cert-authority`), allows the namespace and is valid at `now`;
 *   `principal` is the first (non-negated) principal of the first such line, as written, even a pattern.
 * - `unknown-signer`: no line lists the key (a `cert-authority` line does not count).
 * - `key-expired`: lines list the key for this namespace but `now` is outside their validity, after valid-before or
 *   before valid-after (not yet valid counts as expired too).
 * - `wrong-namespace`: lines list the key, but only for other namespaces.
 */
export function checkSigner(
  signers: readonly AllowedSigner[],
  revoked: readonly SshPublicKey[],
  key: SshPublicKey,
  namespace: string,
  now: Date,
): SignerDecision {
  if (revoked.some((r) => r.text === key.text)) return { status: "revoked" };
  let listed = false;
  let namespaceAllowed = false;
  for (const signer of signers) {
    if (signer.certAuthority || signer.key.text !== key.text) continue;
    listed = true;
    if (signer.namespaces !== null && !matchPatternList(namespace, signer.namespaces)) continue;
    namespaceAllowed = true;
    if (!withinValidity(signer, now)) continue;
    return { status: "trusted", principal: signer.principals.find((p) => !p.startsWith("!")) as string };
  }
  if (!listed) return { status: "unknown-signer" };
  return { status: namespaceAllowed ? "key-expired" : "wrong-namespace" };
}
