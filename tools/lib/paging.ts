// Pages of a tool's answer: every list in it cut to what fits in about 16 KB
// of text (or to `limit` rows), with totals kept whole, and a cursor to the
// next page. One module for every tool, so that a cursor means the same thing
// everywhere.
//
// A cursor is `w1.` and the base64url of {t: tool, a: digest of the other
// arguments, s: digest of the whole answer, o: offset in each list}. It is not
// signed: it is not a security boundary. The arguments decide what a call may
// read, and a cursor is honoured only with the arguments it was made for, so a
// forged one can only pick other rows of the same answer, which the same
// arguments with a large `limit` return anyway. No secret also means a cursor
// works in the next process (`warden call` starts one per call).
//
// `s` is a digest of the answer the pages are cut from, all rows of every
// list, less what changes from call to call alone (timings). A cursor is
// refused when the answer is no longer that one, whatever changed under the
// root, and honoured when it is (a file touched, or changed in a way this
// answer does not show): pages are then cut from the same rows, so following
// cursors reaches every row once, never one twice or none. The digest is
// computed only when a page leaves rows for later or a cursor is given, and
// kept in the graph's memo where the answer is a function of the graph.
import * as v from "valibot";
import { canonicalJson } from "../../core/canonical_json.ts";
import { problem, received, WardenError } from "../../core/errors.ts";
import { sha256Digest, sha256Hex } from "../../core/sha256.ts";

/** Most bytes of JSON text a page holds when the caller gives no `limit`. */
export const PAGE_BYTES = 16_000;

/** Largest `limit`: rows of each list on one page. */
export const MAX_LIMIT = 100_000;

/** Bumped when a cursor's content or the lists it indexes change meaning: older cursors are then refused. */
const VERSION = 1;

/** Hex digits of each digest a cursor carries: 96 bits bind it to its arguments and answer. */
const DIGEST_HEX = 24;

/** The `limit` and `cursor` arguments of a paged tool; `rows` names what a list holds, e.g. "findings". */
export function pageInput(rows: string) {
  return {
    limit: v.optional(v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(MAX_LIMIT),
      v.description(
        `Most ${rows} of each list on one page (default: as many as fit in about 16 KB of text); totals count all.`,
      ),
    )),
    cursor: v.optional(v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(4096),
      v.description(
        "The `nextCursor` of the previous answer, for the next page; every other argument as it was for the first.",
      ),
    )),
  };
}

/** Where a page is in one list. */
const PageCount = v.object({ offset: v.number(), returned: v.number(), total: v.number() });

/** The output fields every paged answer has: where the page is in each list, and the cursor to the next page. */
export const pageOutput = {
  page: v.pipe(
    v.record(v.string(), PageCount),
    v.description("For each list (by its path in the answer): the first row's index, rows returned, rows in all."),
  ),
  nextCursor: v.optional(v.pipe(
    v.string(),
    v.description("Present when rows are left: pass it as `cursor`, with the same arguments, for the next page."),
  )),
};

/** What paginate adds to an answer. */
export interface PageFields {
  page: Record<string, { offset: number; returned: number; total: number }>;
  nextCursor?: string;
}

/** What a paged call is, and which lists of its answer to cut. */
export interface PageRequest {
  /** The tool's name: a cursor is for the tool that made it. */
  readonly tool: string;
  /** The call's arguments as validated, `limit` and `cursor` included. */
  readonly args: { readonly limit?: number; readonly cursor?: string } & Readonly<Record<string, unknown>>;
  /** Paths of the lists (`files`, `blastRadius.dependents`), most useful first: they share a page, a row each in turn. */
  readonly lists: readonly string[];
  /** Lists that get rows only once every one of `lists` is on the page to its end (entry points, warnings). */
  readonly later?: readonly string[];
  /** Top-level keys that change from call to call while the rows stay the same (timings, cache hits). */
  readonly volatile?: readonly string[];
  /** Where to keep the answer's digest while its source stays the same (a graph's memo). */
  readonly memo?: Map<string, unknown>;
}

interface Cursor {
  readonly tool: string;
  readonly args: string;
  readonly state: string;
  readonly offsets: readonly number[];
}

/**
 * The page of `answer` that `request` asks for: each list sliced, `page` and,
 * when rows are left, `nextCursor` added. Throws `invalid_cursor` for a cursor
 * that is malformed or made by another tool, for other arguments or from
 * another answer.
 */
export async function paginate<T extends object>(answer: T, request: PageRequest): Promise<T & PageFields> {
  const paths = [...request.lists, ...(request.later ?? [])];
  const lists = paths.map((path) => listAt(answer, path));
  const args = argsDigest(request.args);
  let state: string | undefined;
  const stateDigest = async () => state ??= await answerDigest(answer, request, args);

  let offsets = lists.map(() => 0);
  if (request.args.cursor !== undefined) {
    const cursor = readCursor(request.tool, request.args.cursor);
    if (cursor.args !== args) {
      throw refused(
        "it was made for other arguments",
        "pass it with the arguments of the first page (only cursor changes), or re-run without cursor",
      );
    }
    if (cursor.offsets.length !== lists.length) throw refused("it was made by another version of warden");
    if (cursor.state !== await stateDigest()) {
      throw refused("the answer changed since it was made (files it reads changed)");
    }
    if (cursor.offsets.some((offset, i) => offset > lists[i].length)) throw malformed(request.args.cursor);
    offsets = [...cursor.offsets];
  }

  const counts = request.args.limit !== undefined
    ? lists.map((rows, i) => Math.min(request.args.limit!, rows.length - offsets[i]))
    : fill(lists, offsets, request.lists.length, PAGE_BYTES - skeletonBytes(answer, request.tool, paths, lists));
  let paged: T = answer;
  const page: PageFields["page"] = {};
  for (let i = 0; i < paths.length; i++) {
    paged = withList(paged, paths[i], lists[i].slice(offsets[i], offsets[i] + counts[i]));
    page[paths[i]] = { offset: offsets[i], returned: counts[i], total: lists[i].length };
  }
  const next = offsets.map((offset, i) => offset + counts[i]);
  if (next.every((offset, i) => offset === lists[i].length)) return { ...paged, page };
  const nextCursor = writeCursor({ tool: request.tool, args, state: await stateDigest(), offsets: next });
  return { ...paged, page, nextCursor };
}

/**
 * Rows of each list that fit in `room` bytes: a row of each list in turn, a list stopping at its first row that does
 * not fit, the `later` ones (from index `primary`) only once the others are through. At least one row, when any is
 * left, so that following cursors always gets somewhere.
 */
function fill(lists: readonly unknown[][], offsets: readonly number[], primary: number, room: number): number[] {
  const counts: number[] = lists.map(() => 0);
  let left = room;
  const order = Array.from(lists, (_, i) => i);
  const groups = [order.slice(0, primary), order.slice(primary)];
  for (const group of groups) {
    let open = group.filter((i) => offsets[i] < lists[i].length);
    while (open.length > 0) {
      const still: number[] = [];
      for (const i of open) {
        const at = offsets[i] + counts[i];
        // A comma before every row but the first: counted for all, to stay on the safe side.
        const size = utf8Length(JSON.stringify(lists[i][at])) + 1;
        if (size > left) continue;
        left -= size;
        counts[i]++;
        if (at + 1 < lists[i].length) still.push(i);
      }
      open = still;
    }
    if (group.some((i) => offsets[i] + counts[i] < lists[i].length)) break;
  }
  if (!counts.some((count) => count > 0)) {
    const first = lists.findIndex((rows, i) => offsets[i] < rows.length);
    if (first !== -1) counts[first] = 1;
  }
  return counts;
}

/** Bytes of the answer with every list empty, its `page` and the longest cursor it could carry. */
function skeletonBytes(answer: object, tool: string, paths: readonly string[], lists: readonly unknown[][]): number {
  let skeleton: object = answer;
  const page: PageFields["page"] = {};
  for (let i = 0; i < paths.length; i++) {
    skeleton = withList(skeleton, paths[i], []);
    const total = lists[i].length;
    page[paths[i]] = { offset: total, returned: total, total };
  }
  const filler = "0".repeat(DIGEST_HEX);
  const nextCursor = writeCursor({ tool, args: filler, state: filler, offsets: lists.map((rows) => rows.length) });
  return utf8Length(JSON.stringify({ ...skeleton, page, nextCursor }));
}

/** The list at a dotted path of the answer; an absent or null parent holds an empty one. */
function listAt(answer: object, path: string): unknown[] {
  let node: unknown = answer;
  for (const key of path.split(".")) node = (node as Record<string, unknown> | null | undefined)?.[key];
  if (node === undefined || node === null) return [];
  if (!Array.isArray(node)) throw new Error(`paginate: ${path} is not a list`);
  return node;
}

/** A copy of `answer` with `rows` at `path`, sharing everything off that path. */
function withList<T>(answer: T, path: string, rows: unknown[]): T {
  const [key, ...rest] = path.split(".");
  const record = answer as Record<string, unknown>;
  if (rest.length === 0) return { ...record, [key]: rows } as T;
  const inner = record[key];
  if (inner === null || inner === undefined) return answer;
  return { ...record, [key]: withList(inner, rest.join("."), rows) } as T;
}

/** Bytes of a string in UTF-8, without encoding it. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // Two bytes up to U+07FF, three for the rest of the BMP, four for a surrogate pair (two code units, 2 each).
    if (code >= 0x80) bytes += code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/**
 * The digest of every argument but the cursor, in canonical form (key order at every depth), absent ones left out. In
 * plain JavaScript: a few hundred bytes, where WebCrypto's trip through the thread pool cost a loaded machine
 * milliseconds a call.
 */
function argsDigest(args: Readonly<Record<string, unknown>>): string {
  const { cursor: _cursor, ...rest } = args;
  const given = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
  return sha256Hex(canonicalJson(given)).slice(0, DIGEST_HEX);
}

/** How many answers' digests a memo keeps: the last few queries, not one per module ever asked about. */
const RECENT_DIGESTS = 64;

/** The digest of the whole answer, less its volatile keys; the last few kept in `memo`, by tool and arguments. */
async function answerDigest(answer: object, request: PageRequest, args: string): Promise<string> {
  let recent = request.memo?.get("paging") as Map<string, string> | undefined;
  if (request.memo && !recent) request.memo.set("paging", recent = new Map());
  const key = `${request.tool}\0${args}`;
  const known = recent?.get(key);
  if (known !== undefined) return known;
  const stable: Record<string, unknown> = { ...answer };
  for (const volatile of request.volatile ?? []) delete stable[volatile];
  // WebCrypto for an answer that can be megabytes: native on both runtimes (sha256Hex may be plain JavaScript).
  const digest = (await sha256Digest(JSON.stringify(stable))).slice("sha256:".length, "sha256:".length + DIGEST_HEX);
  recent?.set(key, digest);
  if (recent && recent.size > RECENT_DIGESTS) recent.delete(recent.keys().next().value!);
  return digest;
}

function writeCursor(cursor: Cursor): string {
  const json = JSON.stringify({ t: cursor.tool, a: cursor.args, s: cursor.state, o: cursor.offsets });
  return `w${VERSION}.${btoa(json).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** A cursor's content, once it is known to be one of this version and for `tool`. */
function readCursor(tool: string, text: string): Cursor {
  const version = /^w(\d+)\./.exec(text);
  if (!version) throw malformed(text);
  if (Number(version[1]) !== VERSION) throw refused("it was made by another version of warden");
  let data: unknown;
  try {
    data = JSON.parse(atob(text.slice(version[0].length).replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    throw malformed(text);
  }
  const { t, a, s, o } = (data ?? {}) as Record<string, unknown>;
  if (
    typeof t !== "string" || !/^[a-z][a-z0-9_]{0,63}$/.test(t) || typeof a !== "string" || typeof s !== "string" ||
    !Array.isArray(o) ||
    !o.every((n) => Number.isSafeInteger(n) && n >= 0)
  ) {
    throw malformed(text);
  }
  if (t !== tool) throw refused(`it was made by ${t}, not ${tool}`, `pass it to ${t}, or re-run without cursor`);
  return { tool: t, args: a, state: s, offsets: o };
}

function refused(why: string, fix = "re-run without cursor to start from the first page"): WardenError {
  return new WardenError("invalid_cursor", problem('Invalid argument "cursor"', why, fix));
}

function malformed(text: string): WardenError {
  return refused(
    `${received(text)} is not a cursor warden made`,
    "pass the nextCursor of the previous answer as it is, or re-run without cursor to start from the first page",
  );
}
