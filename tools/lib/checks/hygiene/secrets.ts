// hygiene/secrets: credentials the change adds, in the lines it adds. Three
// kinds of evidence, most certain first: a vendor's token shape (a fixed
// prefix and length: AWS, GitHub, Slack, Stripe, Google, a PEM private key), a
// value assigned to a name that says it is secret (`password = "…"`), and a
// string as random as a key (Shannon entropy). A finding never carries the
// value: a masked prefix and its length only.
import type { BuiltinCheck, Finding, Severity } from "../types.ts";

const CHECK = "hygiene/secrets";

/** One secret found in one line. */
export interface SecretMatch {
  /** Rule id: `aws-access-key-id`, `github-token`, …, `secret-assignment`, `high-entropy-base64`, `high-entropy-hex`. */
  readonly rule: string;
  readonly severity: Severity;
  /** 1-based column of the value. */
  readonly column: number;
  /** What was found, in words, with the value masked. */
  readonly message: string;
}

interface Shape {
  readonly rule: string;
  readonly what: string;
  readonly pattern: RegExp;
  /** How many leading characters are the shape's fixed prefix (shown unmasked). */
  readonly prefix: (value: string) => number;
  readonly severity: Severity;
}

const fixed = (n: number) => () => n;

/**
 * Vendor shapes, as the vendors document them and gitleaks' rules write them. Each is anchored on a boundary (no
 * letter, digit or `_` before), so that a token inside a longer base64 run (an integrity hash) is not one.
 */
const SHAPES: readonly Shape[] = [
  {
    rule: "private-key",
    what: "a private key",
    // The header where a key follows it: at the end of its line (a PEM file, a template literal, a YAML block) or
    // before an escaped newline and key material (a JSON or code string). The header alone in a string is a parser's
    // constant or a message, not a key.
    pattern:
      /-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|PGP|ENCRYPTED|SSH2) )?PRIVATE KEY(?: BLOCK)?-----(?=\s*$|\\n[A-Za-z0-9+/=]{16,})/g,
    // The header is not the secret, the lines after it are: shown whole.
    prefix: (value) => value.length,
    severity: "critical",
  },
  {
    rule: "aws-access-key-id",
    what: "an AWS access key id",
    pattern: /(?<![A-Za-z0-9_])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9_])/g,
    prefix: fixed(4),
    severity: "critical",
  },
  {
    rule: "github-token",
    what: "a GitHub token",
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})(?![A-Za-z0-9_])/g,
    prefix: (value) => value.startsWith("github_pat_") ? 11 : 4,
    severity: "critical",
  },
  {
    rule: "slack-token",
    what: "a Slack token",
    pattern: /(?<![A-Za-z0-9_])xox[abposr]-(?:[0-9]+-)+[A-Za-z0-9-]{8,}(?![A-Za-z0-9_])/g,
    prefix: fixed(5),
    severity: "critical",
  },
  {
    rule: "stripe-secret-key",
    what: "a Stripe live secret key",
    pattern: /(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{20,}(?![A-Za-z0-9_])/g,
    prefix: fixed(8),
    severity: "critical",
  },
  {
    rule: "google-api-key",
    what: "a Google API key",
    pattern: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g,
    prefix: fixed(4),
    severity: "critical",
  },
  {
    // A JWT is a signed claim: often short-lived and, in code, often a sample from a test or the docs; it is a
    // credential, but a guess at one, so high, not critical.
    rule: "jwt",
    what: "a JSON Web Token",
    pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?![A-Za-z0-9_-])/g,
    prefix: fixed(3),
    severity: "high",
  },
];

/**
 * Values written as stand-ins, in docs, examples and templates: AWS's documented example key, `xxxx`, `<token>`,
 * `${VAR}`, `{{ var }}`, `changeme`, a run of one character.
 */
function isPlaceholder(value: string): boolean {
  if (/EXAMPLE|example|placeholder|PLACEHOLDER|changeme|CHANGEME|redacted|REDACTED|dummy|DUMMY/.test(value)) {
    return true;
  }
  if (/\$\{|\{\{|%s|%\(|^<.*>$|^\$[A-Z_]+$|^\*+$/.test(value)) return true;
  if (/x{6,}|X{6,}|\*{4,}|\.{3}/.test(value)) return true;
  if (/^(?:your|my)[_-]/i.test(value) || /^(?:password|secret|token|passw0rd|pass|none|null|undefined)$/i.test(value)) {
    return true;
  }
  return new Set(value).size <= 2 || hasSequence(value);
}

/** A run of six characters in alphabet order (`012345`, `abcdef`): test data and alphabets, not a random key. */
function hasSequence(value: string): boolean {
  let run = 1;
  for (let i = 1; i < value.length; i++) {
    run = value.charCodeAt(i) === value.charCodeAt(i - 1) + 1 ? run + 1 : 1;
    if (run >= 6) return true;
  }
  return false;
}

/** A value with its first `keep` characters shown, the rest masked, and its length. */
export function mask(value: string, keep: number): string {
  const shown = value.slice(0, Math.max(0, Math.min(keep, value.length)));
  return shown.length === value.length ? shown : `${shown}${"*".repeat(4)} (${value.length} characters)`;
}

/** Shannon entropy of `text`, in bits per character. */
export function shannonEntropy(text: string): number {
  if (text.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * The least entropy a string of `length` characters must have to count as random, per alphabet. A random string's
 * entropy grows with its length (it cannot exceed log2 of it), so one fixed threshold either misses short keys or
 * flags long words: these are about the 5th percentile of uniformly random strings of that length (measured with
 * 2,000 draws per length), so about 95 of 100 random keys pass, and identifiers, paths and words (3.5–4.1 bits at
 * 20–35 characters) do not.
 */
export function entropyThreshold(alphabet: "base64" | "hex", length: number): number {
  const table: readonly (readonly [number, number])[] = alphabet === "hex"
    ? [[16, 2.8], [20, 3.0], [24, 3.1], [32, 3.3], [40, 3.4]]
    : [[16, 3.45], [20, 3.75], [24, 3.95], [32, 4.3], [40, 4.5]];
  let threshold = table[0][1];
  for (const [from, bits] of table) if (length >= from) threshold = bits;
  return threshold;
}

/** What any shape begins with. */
const SHAPE_PREFIX = /-----BEGIN|AKIA|ASIA|ABIA|ACCA|A3T|gh[pousr]_|github_pat_|xox|k_live_|AIza|eyJ/;
/** What any secret's name contains (SECRET_NAME, unanchored). */
const SECRET_WORD = /pass|pwd|secret|token|key|credential/i;

/** Names that say their value is a secret, as the end of an identifier (`dbPassword`, `GITHUB_TOKEN`, `api_key`). */
const SECRET_NAME =
  /(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)$/i;
/** `name = "value"`, `name: 'value'`, `"name": "value"`, `name := "value"`, `name => "value"`. */
const ASSIGNMENT = /([A-Za-z_$][\w$.-]*)["']?\s*(?::=|=>|=|:)\s*(["'`])([^"'`\s]+)\2/g;
/** In .env files values are unquoted: `NAME=value`. */
const ENV_ASSIGNMENT = /^\s*(?:export\s+)?([A-Za-z_][\w.]*)\s*=\s*([^\s"'#]+)\s*(?:#.*)?$/;

/** The base64 alphabet, standard and URL, by char code. */
const BASE64_CHAR = new Uint8Array(128);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-") {
  BASE64_CHAR[ch.charCodeAt(0)] = 1;
}

/**
 * Runs of the base64 alphabet 16 characters or longer, with their `=` padding, as [start, end). A loop over char
 * codes rather than a regular expression: `/[…]{16,}/g` tries every position of every line again (a few times slower
 * on source text, where most runs are short words).
 */
function longRuns(text: string): [number, number][] {
  const runs: [number, number][] = [];
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 0;
    if (code < 128 && BASE64_CHAR[code] === 1) continue;
    if (i - start >= 16) {
      let end = i;
      while (end < text.length && end - i < 2 && text.charCodeAt(end) === 61) end++;
      runs.push([start, end]);
    }
    start = i + 1;
  }
  return runs;
}

/**
 * Files whose added lines are machine output full of high-entropy runs that are not secrets: lockfiles (integrity
 * hashes), source maps (mappings), minified bundles and snapshots. Vendor shapes are still looked for there; entropy
 * is not.
 */
const NO_ENTROPY =
  /(?:^|\/)(?:package-lock\.json|npm-shrinkwrap\.json|pnpm-lock\.yaml|yarn\.lock|deno\.lock|bun\.lock|Cargo\.lock|poetry\.lock|Gemfile\.lock|composer\.lock|go\.sum)$|\.(?:map|min\.js|min\.css|snap)$/;

/**
 * Digests and public keys are not secrets: SRI `sha512-…`, OCI `sha256:…`, a `data:…;base64,` payload, an SSH public
 * key (`ssh-ed25519 AAAA…`, in authorized_keys, allowed_signers, .pub files).
 */
const DIGEST_BEFORE =
  /(?:sha(?:1|224|256|384|512)[-:]|md5[-:]|base64,|(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-[\w.@-]+)\s+)$/i;
const DIGEST_PREFIX = /^(?:sha(?:1|224|256|384|512)|md5)-/i;

let lastKind: { file: string; env: boolean; noEntropy: boolean } | undefined;
/** What the file's name says about its lines (asked once per file: the lines of a file come in a row). */
function kindOf(file: string): { env: boolean; noEntropy: boolean } {
  if (lastKind?.file !== file) {
    lastKind = { file, env: /(?:^|\/)\.env(?:\.[\w-]+)?$/.test(file), noEntropy: NO_ENTROPY.test(file) };
  }
  return lastKind;
}

/** What a line's assignments name: whether the line speaks of a secret. */
function namesSecret(line: string): boolean {
  for (const match of line.matchAll(/[A-Za-z_$][\w$-]*/g)) if (SECRET_NAME.test(match[0])) return true;
  return false;
}

/** Whether a value assigned to a secret's name looks like one: long enough, not a word, not a stand-in. */
function looksAssigned(name: string, value: string): boolean {
  if (isPlaceholder(value)) return false;
  if (/^(?:password|passwd|pwd)$/i.test(name) || /(?:password|passwd|pwd)$/i.test(name)) return value.length >= 6;
  // Other names (token, secret, key) name kinds and types as often as values (`tokenType: "keyword"`): a key has
  // digits and letters and some length.
  return value.length >= 12 && /\d/.test(value) && /[A-Za-z]/.test(value) && !/^[a-z]+(?:[-_.][a-z0-9]+)*$/.test(value);
}

/**
 * The secrets in one added line of `file`. Vendor shapes first; a span they cover is not reported again as an
 * assignment or by entropy.
 */
export function scanLine(file: string, text: string, { entropy = true }: { entropy?: boolean } = {}): SecretMatch[] {
  const found: SecretMatch[] = [];
  const covered: [number, number][] = [];
  const overlaps = (start: number, end: number) => covered.some(([s, e]) => start < e && end > s);
  // Most lines hold no shape's prefix, no secret's name and no long run: one test each rules them out.
  for (const shape of SHAPE_PREFIX.test(text) ? SHAPES : []) {
    shape.pattern.lastIndex = 0;
    for (const match of text.matchAll(shape.pattern)) {
      const value = match[0];
      const start = match.index;
      if (shape.rule !== "private-key" && isPlaceholder(value)) continue;
      // After a private key's header, the rest of the line is the key.
      covered.push([start, shape.rule === "private-key" ? text.length : start + value.length]);
      found.push({
        rule: shape.rule,
        severity: shape.severity,
        column: start + 1,
        message: `Added ${shape.what}: ${mask(value, shape.prefix(value))}; remove it from the change and revoke it`,
      });
    }
  }

  // The name is the evidence here, not the shape: severity high, a guess that a person confirms.
  const assignments: { name: string; value: string; start: number }[] = [];
  const named = SECRET_WORD.test(text);
  for (const match of named ? text.matchAll(ASSIGNMENT) : []) {
    const value = match[3];
    assignments.push({ name: match[1], value, start: match.index + match[0].length - value.length - 1 });
  }
  const kind = kindOf(file);
  if (named && kind.env) {
    const env = ENV_ASSIGNMENT.exec(text);
    if (env) assignments.push({ name: env[1], value: env[2], start: text.indexOf(env[2], env[0].indexOf("=")) });
  }
  for (const { name, value, start } of assignments) {
    const base = name.slice(name.lastIndexOf(".") + 1);
    if (!SECRET_NAME.test(base) || !looksAssigned(base, value) || overlaps(start, start + value.length)) continue;
    covered.push([start, start + value.length]);
    found.push({
      rule: "secret-assignment",
      severity: "high",
      column: start + 1,
      message: `Added a value for ${JSON.stringify(base)}: ${
        mask(value, value.length >= 12 ? 3 : 0)
      }; read it from the environment or a secret store instead`,
    });
  }

  if (!entropy || kind.noEntropy) return found;
  const keyword = named && namesSecret(text);
  for (const [runStart, runEnd] of longRuns(text)) {
    const run = text.slice(runStart, runEnd);
    if (DIGEST_PREFIX.test(run) || DIGEST_BEFORE.test(text.slice(0, runStart))) continue;
    // Strip the padding and what a run may carry at its ends (`==`, the `/` of a path, a `-` of a flag).
    const value = run.replace(/^[/+_-]+/, "").replace(/[=]+$/, "");
    const start = runStart + run.indexOf(value);
    if (value.length < 16 || overlaps(start, start + value.length)) continue;
    const hex = /^[0-9a-fA-F]+$/.test(value);
    // A random key of 16 or more characters over base64 has upper and lower case letters and digits (all but about 1
    // in 5,000): a run without them is a word, a path, a name. Hex has digits and letters.
    const mixed = hex ? /[a-fA-F]/.test(value) : /[A-Z]/.test(value) && /[a-z]/.test(value);
    if (!/\d/.test(value) || !mixed || isPlaceholder(value)) continue;
    // Hex runs are digests (commit ids, checksums, colours) unless the line names a secret; other runs must be
    // 32 characters or more without such a name, as long as the keys that leak without a telling name.
    if (hex ? !keyword : !keyword && value.length < 32) continue;
    const bits = shannonEntropy(value);
    if (bits < entropyThreshold(hex ? "hex" : "base64", value.length)) continue;
    covered.push([start, start + value.length]);
    found.push({
      rule: hex ? "high-entropy-hex" : "high-entropy-base64",
      severity: "high",
      column: start + 1,
      message: `Added a string as random as a key (${bits.toFixed(2)} bits per character over ${value.length}): ${
        mask(value, 3)
      }; if it is a secret, remove it and revoke it`,
    });
  }
  return found.sort((a, b) => a.column - b.column);
}

/** The check: every added line of every file of the change that is text. */
export function secretsCheck(): BuiltinCheck {
  return {
    name: CHECK,
    description:
      "Secrets in the lines the change adds: vendor token shapes (AWS access key ids, GitHub, Slack, Stripe live, Google API keys, private key headers: critical; JWTs: high), values assigned to names such as password, token or api_key (high), and strings as random as a key (high). Messages carry a masked prefix, never the value.",
    run(scope) {
      const findings: Finding[] = [];
      for (const file of scope.files) {
        if (file.binary || file.status === "deleted") continue;
        // Inside a PEM block (a key, a certificate, a signature) every line is random: the header is the finding, once.
        let inPem = false;
        for (const { line, text } of file.addedLines) {
          const begins = /-----BEGIN [A-Z0-9 ]+-----/.test(text);
          const matches = scanLine(file.path, text, { entropy: !inPem && !begins });
          if (begins) inPem = true;
          if (/-----END [A-Z0-9 ]+-----/.test(text)) inPem = false;
          for (const match of matches) {
            findings.push({
              check: CHECK,
              file: file.path,
              line,
              column: match.column,
              severity: match.severity,
              rule: match.rule,
              message: match.message,
            });
          }
        }
      }
      return Promise.resolve(findings);
    },
  };
}
