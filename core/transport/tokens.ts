// Bearer tokens for the HTTP transport. The tokens file holds hashes, never
// tokens: `sha256:<hex> <principal>` a line, so a copy of the file (a backup,
// a dotfiles repository) lets nobody in. `warden token add` makes a token,
// prints it once and keeps its hash.
import path from "node:path";
import { messageOf, problem, received, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { sha256Hex } from "../sha256.ts";

/** Who a token belongs to: the principal every call made with it is recorded and judged as. */
export interface TokenEntry {
  readonly hash: string;
  readonly principal: string;
}

const LINE = /^sha256:([0-9a-f]{64})\s+(\S{1,200})$/;
/** One word, as `--principal` takes it. */
const PRINCIPAL = /^\S{1,200}$/;
/** The largest tokens file read: thousands of lines fit many times over. */
const MAX_TOKENS_FILE_BYTES = 1 << 20;

/** The entries of a tokens file's text; a malformed line is refused by number, with the form it should take. */
export function parseTokens(text: string, file: string): readonly TokenEntry[] {
  const entries: TokenEntry[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Invalid tokens file ${file}, line ${index + 1}`,
          `expected "sha256:<64 lowercase hex digits> <principal>", received ${received(line.slice(0, 80))}`,
          'make a token with "warden token add <principal>"; the file keeps hashes, never tokens',
        ),
      );
    }
    if (seen.has(match[1])) {
      throw new WardenError(
        "config_invalid",
        problem(
          `Invalid tokens file ${file}, line ${index + 1}`,
          "this token hash is on an earlier line too",
          "keep one line per token",
        ),
      );
    }
    seen.add(match[1]);
    entries.push(Object.freeze({ hash: match[1], principal: match[2] }));
  }
  return Object.freeze(entries);
}

/** The tokens file's text, and its entries; none when the file is absent. */
async function readTokensFile(file: string): Promise<{ text: string; entries: readonly TokenEntry[] }> {
  let text: string;
  try {
    text = await platform().fs.readTextFile(file, MAX_TOKENS_FILE_BYTES);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return { text: "", entries: Object.freeze([]) };
    throw new WardenError(
      "config_invalid",
      problem(
        `Cannot read the tokens file ${file}`,
        messageOf(error).split("\n")[0],
        "fix it, or name another with --tokens",
      ),
    );
  }
  return { text, entries: parseTokens(text, file) };
}

/** The tokens file's entries; none when the file is absent. */
export async function readTokens(file: string): Promise<readonly TokenEntry[]> {
  return (await readTokensFile(file)).entries;
}

/** Whether two equal-length hex texts are equal, in time that depends on their length only. */
function sameHex(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i % b.length);
  return difference === 0;
}

/**
 * The principal of a presented token, or null. Every entry is compared, whole, whatever matched: the time taken says
 * nothing about which hash, or how much of one, a guess came close to.
 */
export function principalOfToken(entries: readonly TokenEntry[], token: string): string | null {
  const hash = sha256Hex(token);
  let found: string | null = null;
  for (const entry of entries) {
    if (sameHex(entry.hash, hash) && found === null) found = entry.principal;
  }
  return found;
}

/** A new token: 32 random bytes, base64url, with a prefix that secret scanners and people recognise. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return "wdn_" + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const TOKEN_HELP = `warden token: bearer tokens for "warden serve --http"

  warden token add <principal>      make a token for <principal>, print it once, keep its hash
  warden token list                 the principals and their tokens' hash prefixes
  warden token remove <principal>   remove every token of <principal>

The tokens file (--tokens, WARDEN_TOKENS) holds "sha256:<hex> <principal>" lines.
`;

/** `warden token ...`: prints to stdout (the token itself, once) and returns the exit code. */
export async function tokenCommand(file: string, args: readonly string[]): Promise<number> {
  const [sub, principal, ...extra] = args;
  const out = (text: string) => platform().writeStdout(text);
  if (sub === undefined || sub === "help" || sub === "--help") {
    out(TOKEN_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== "add" && sub !== "list" && sub !== "remove") {
    throw new WardenError("config_invalid", `Unknown "warden token ${sub}": expected add, list or remove`);
  }
  if (extra.length > 0) {
    throw new WardenError("config_invalid", `Unexpected argument "${extra[0]}" for "warden token ${sub}"`);
  }
  const { text, entries } = await readTokensFile(file);
  if (sub === "list") {
    if (principal !== undefined) {
      throw new WardenError("config_invalid", `Unexpected argument "${principal}" for "warden token list"`);
    }
    if (entries.length === 0) out(`No tokens in ${file}: HTTP serves loopback only, without tokens\n`);
    for (const entry of entries) out(`${entry.principal} sha256:${entry.hash.slice(0, 12)}…\n`);
    return 0;
  }
  if (principal === undefined || !PRINCIPAL.test(principal)) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid principal for "warden token ${sub}"`,
        `expected one word (an email, a name), received ${received(principal)}`,
        `for example: warden token ${sub} alice@example.com`,
      ),
    );
  }
  // The file as it is, comments kept (it parsed, above).
  const lines = text.split("\n").filter((line) => line !== "");
  if (sub === "remove") {
    const kept = lines.filter((line) => LINE.exec(line.trim())?.[2] !== principal);
    if (kept.length === lines.length) {
      throw new WardenError("not_found", `No token of "${principal}" in ${file}: run "warden token list"`);
    }
    await platform().fs.writeFileAtomic(file, kept.map((line) => line + "\n").join(""));
    out(`Removed ${lines.length - kept.length} token(s) of ${principal} from ${file}\n`);
    return 0;
  }
  const token = newToken();
  await platform().fs.mkdir(path.dirname(file));
  await platform().fs.writeFileAtomic(file, [...lines, `sha256:${sha256Hex(token)} ${principal}`, ""].join("\n"));
  out(token + "\n");
  platform().writeStderr(
    `The token of ${principal} is above; it is shown once and ${file} keeps only its hash. Clients send it as "Authorization: Bearer <token>".\n`,
  );
  return 0;
}
