// What an agent reads when a call goes wrong before or around its tool: an
// argument problem, a timeout, a cancellation. Each names what was wrong and
// how to fix it.
import type { CatalogEntry } from "../catalog.ts";
import { problem, WardenError } from "../errors.ts";
import type { SchemaIssue } from "../json_schema.ts";

export function issuePath(path: readonly (string | number)[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : out === "" ? key : `.${key}`;
  return out;
}

/** The one sentence an agent reads for an argument problem. */
export function describeIssue(tool: CatalogEntry, issue: SchemaIssue): string {
  const where = issuePath(issue.path);
  if (where === "") {
    return problem("Invalid arguments", `expected an object of named arguments, received ${issue.received}`);
  }
  if (issue.kind === "unknown-key") {
    // The keys of the object the unknown one sits in, read from the published schema.
    type Node = { properties?: Record<string, Node>; items?: Node; anyOf?: Node[] };
    let node: Node | undefined = tool.descriptor.inputSchema as Node;
    for (const key of issue.path.slice(0, -1)) {
      node = typeof key === "number"
        ? node?.items
        : node?.properties?.[key] ?? node?.anyOf?.find((n) => n.properties)?.properties?.[key];
    }
    const accepted = Object.keys(node?.properties ?? {});
    const parent = issue.path.length > 1 ? ` in "${issuePath(issue.path.slice(0, -1))}"` : "";
    // Tools named their project `root` before projects had a name of their own.
    if (where === "root" && accepted.includes("project_id")) {
      return problem(
        'Unknown argument "root"',
        `${tool.descriptor.name} names its project project_id now`,
        "pass project_id instead (host_context lists the ids)",
      );
    }
    return problem(
      `Unknown argument "${where}"`,
      `${tool.descriptor.name} does not take it`,
      accepted.length ? `it accepts ${accepted.join(", ")}${parent}` : `it takes no arguments${parent}`,
    );
  }
  if (issue.kind === "missing") return problem(`Missing argument "${where}"`, `expected ${issue.expected}`);
  return problem(`Invalid argument "${where}"`, `expected ${issue.expected} but received ${issue.received}`);
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

export function stoppedError(name: string, why: string): WardenError {
  return new WardenError("cancelled", problem(`Tool "${name}" was cancelled`, why));
}

export function timeoutError(name: string, ms: number): WardenError {
  return new WardenError(
    "timeout",
    problem(
      `Tool "${name}" timed out`,
      `no result after ${formatSeconds(ms)}`,
      "narrow the request or raise --call-timeout",
    ),
  );
}

/** Every problem of a call's arguments, one line each, each said once. */
export function argumentsProblem(tool: CatalogEntry, issues: readonly SchemaIssue[]): string {
  return [...new Set(issues.map((issue) => describeIssue(tool, issue)))].join("\n");
}
