// Finds the built-in tools at startup (tools/*.ts from source, tools/*.js in
// the build), imports each and checks it. Every problem names the file and
// the fix; all are reported together so one run shows them all.
import { toJsonSchema } from "@valibot/to-json-schema";
import { CAPABILITY_NAMES, classesWords, holds, ruleOf } from "./capabilities.ts";
import { messageOf, problem, WardenError } from "./errors.ts";
import { platform } from "./platform/mod.ts";
import { declaredOrigin } from "./doors/egress.ts";
import { PROGRAM_NAME } from "./doors/spawn.ts";
import { isTool, RISK_CLASSES, type Tool, TOOL_NAME_PATTERN } from "./tool.ts";

/** A JSON Schema object, as published in the catalog. */
export type JsonSchema = Record<string, unknown>;

/** A tool that passed every check, with its schemas in JSON Schema 2020-12. */
export interface LoadedTool {
  readonly file: string;
  readonly tool: Tool;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
}

/** The JSON Schema 2020-12 the catalog publishes for a valibot schema. */
export function convert(schema: Parameters<typeof toJsonSchema>[0]): JsonSchema {
  return toJsonSchema(schema, { target: "draft-2020-12" }) as JsonSchema;
}

/** Checks one module's `tool` export; returns the problems found, or the tool. */
export function checkTool(file: string, exported: unknown): LoadedTool | string[] {
  const stem = file.replace(/\.[a-z]+$/, "");
  if (!isTool(exported)) {
    return [problem(`${file}`, "no `tool` export made by defineTool", "add `export const tool = defineTool({ ... })`")];
  }
  const tool = exported;
  const problems: string[] = [];
  if (!TOOL_NAME_PATTERN.test(tool.name)) {
    problems.push(
      problem(
        file,
        `tool name "${tool.name}" does not match ${TOOL_NAME_PATTERN.source}`,
        "use lowercase letters, digits and _",
      ),
    );
  } else if (tool.name !== stem) {
    problems.push(
      problem(
        file,
        `tool name "${tool.name}" differs from the file name`,
        `rename the file to ${tool.name}.ts or the tool to "${stem}"`,
      ),
    );
  }
  if (!RISK_CLASSES.includes(tool.risk)) {
    problems.push(
      problem(file, `risk "${String(tool.risk)}" is not a risk class`, `use one of ${RISK_CLASSES.join(", ")}`),
    );
  }
  for (const key of ["title", "description"] as const) {
    if (typeof tool[key] !== "string" || tool[key].trim() === "") {
      problems.push(problem(file, `${key} is empty`, `give the tool a ${key}`));
    }
  }
  if (typeof tool.handler !== "function") {
    problems.push(problem(file, "handler is not a function", "add handler(args, ctx)"));
  }
  // What a job tool alone may declare: asked by its job (and approval) tools.
  for (const [hook, returns] of [["precheck", "void"], ["planState", "PlanState"]] as const) {
    if (tool[hook] === undefined || (typeof tool[hook] === "function" && tool.job === true)) continue;
    problems.push(
      problem(
        file,
        typeof tool[hook] !== "function" ? `${hook} is not a function` : `${hook} is only asked of a job tool`,
        typeof tool[hook] !== "function"
          ? `make it async (args, ctx) => ${returns}, or drop it`
          : `add job: true, or drop ${hook}`,
      ),
    );
  }
  const caps = tool.capabilities ?? {};
  for (const capability of CAPABILITY_NAMES) {
    const key = ruleOf(capability).toolKey;
    if (key && (caps[key]?.length ?? 0) > 0 && !holds(tool.risk, capability)) {
      const classes = classesWords(capability);
      problems.push(
        problem(
          file,
          `capability ${key} needs risk class ${classes}, the tool is "${tool.risk}"`,
          `declare risk: ${classes} or drop ${key}`,
        ),
      );
    }
  }
  for (const name of caps.spawn ?? []) {
    if (!PROGRAM_NAME.test(name)) {
      problems.push(
        problem(
          file,
          `spawn allowlist entry ${JSON.stringify(name)} is not a program name`,
          "name programs (e.g. git), never paths",
        ),
      );
    }
  }
  for (const host of caps.netHosts ?? []) {
    if (declaredOrigin(host) !== host) {
      problems.push(
        problem(
          file,
          `netHosts entry ${JSON.stringify(host)} is not an origin`,
          'write it as "https://host" or "https://host:port"',
        ),
      );
    }
  }
  if (tool.input?.type !== "strict_object") {
    problems.push(problem(file, "input is not a valibot strictObject", "declare input as v.strictObject({ ... })"));
  }
  if (problems.length > 0) return problems;
  let inputSchema: JsonSchema;
  let outputSchema: JsonSchema | undefined;
  try {
    inputSchema = convert(tool.input);
  } catch (error) {
    return [
      problem(
        file,
        `input does not convert to JSON Schema (${messageOf(error)})`,
        "keep input schemas declarative: no transform, check or custom",
      ),
    ];
  }
  if (tool.output) {
    if (tool.output.type !== "object" && tool.output.type !== "strict_object") {
      return [problem(file, "output is not a valibot object schema", "declare output as v.object({ ... })")];
    }
    try {
      outputSchema = convert(tool.output);
    } catch (error) {
      return [
        problem(
          file,
          `output does not convert to JSON Schema (${messageOf(error)})`,
          "keep output schemas declarative",
        ),
      ];
    }
  }
  return { file, tool, inputSchema, outputSchema };
}

/**
 * Loads every tool file of `dir` whose name ends in one of `extensions` and
 * does not start with `_` (private helpers) or end in `.test` and the extension
 * (a unit test beside a tool); throws one error listing every problem.
 */
/**
 * The build's one module of the built-in tools (scripts/build.mjs), in a directory that has it: each tool's module by
 * its file's name. node loads it as one file where a module per tool, with their shared chunks, was 47.
 */
export const BUILTIN_BUNDLE = "_builtin.js";

async function importBundle(dir: URL): Promise<[string, Record<string, unknown>][] | null> {
  const url = new URL(BUILTIN_BUNDLE, dir);
  if (!(await platform().fs.stat(platform().fromFileUrl(url)).then((info) => info.isFile, () => false))) return null;
  try {
    const { BUILTIN_TOOLS } = await import(url.href) as { BUILTIN_TOOLS: [string, Record<string, unknown>][] };
    return BUILTIN_TOOLS;
  } catch (error) {
    throw new WardenError(
      "tool_load_failed",
      problem(`Cannot load ${BUILTIN_BUNDLE}`, messageOf(error).split("\n")[0], "rebuild with npm run build"),
    );
  }
}

export async function loadTools(dir: URL, extensions: readonly string[]): Promise<LoadedTool[]> {
  let files: string[];
  try {
    files = (await platform().fs.readDir(platform().fromFileUrl(dir)))
      .filter((entry) =>
        entry.kind === "file" && !entry.name.startsWith("_") &&
        extensions.some((ext) => entry.name.endsWith(ext) && !entry.name.endsWith(`.test${ext}`))
      )
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    throw new WardenError(
      "tool_load_failed",
      problem("Cannot list the tools directory", messageOf(error), "reinstall with npm install"),
    );
  }
  const problems: string[] = [];
  const loaded: LoadedTool[] = [];
  const byName = new Map<string, string>();
  const bundled = await importBundle(dir);
  if (bundled) files = bundled.map(([file]) => file);
  const modules = bundled ? bundled.map(([, module]) => module) : await Promise.all(files.map(async (file) => {
    try {
      return (await import(new URL(file, dir).href)) as Record<string, unknown>;
    } catch (error) {
      // First line only: deno adds the source location on the next lines.
      return problem(file, `failed to import (${messageOf(error).split("\n")[0]})`, "fix the module so it loads");
    }
  }));
  files.forEach((file, i) => {
    const module = modules[i];
    if (typeof module === "string") {
      problems.push(module);
      return;
    }
    const checked = checkTool(file, module.tool);
    if (Array.isArray(checked)) {
      problems.push(...checked);
      return;
    }
    const clash = byName.get(checked.tool.name);
    if (clash) {
      problems.push(
        problem(file, `tool name "${checked.tool.name}" is also used by ${clash}`, "give each tool its own name"),
      );
      return;
    }
    byName.set(checked.tool.name, file);
    loaded.push(checked);
  });
  if (problems.length > 0) {
    throw new WardenError("tool_load_failed", `Cannot load the built-in tools:\n  ${problems.join("\n  ")}`);
  }
  return loaded;
}
