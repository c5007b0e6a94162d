// host_context (read): the check an agent makes first. What this server is —
// name, version, instance, runtime, transport, negotiated protocol, catalog
// digest, tools by class — which projects the caller may read and how a call
// that names none is settled (with an optional probe of one), gate isolation,
// runtime confinement, and where each path setting came from.
import * as v from "valibot";
import { defineTool, type ReadContext } from "../core/tool.ts";
import { listedProjects, PROJECT_HEADER, resolveProject, selectionMode } from "../core/call/projects.ts";
import { messageOf, WardenError } from "../core/errors.ts";

const RiskCounts = v.object({ read: v.number(), gate: v.number(), "external-side-effect": v.number() });

/**
 * Risk class `read`; it touches nothing but the host facts in its context:
 * no host paths, no environment values.
 */
export const tool = defineTool({
  name: "host_context",
  title: "Host context",
  description:
    "Describes this warden server: name, version and instance id (one per server process: it tells replicas and restarts apart), runtime, transport, negotiated MCP protocol version, catalog digest, tool counts by risk class, the projects you may read, what confines the programs gate tools run (and which checks the operator lets run without it), whether the runtime itself (deno's permissions, node's permission model) holds the server to what its catalog and settings need (never claiming more than is in force), and where each path setting (plugins, trust files, lock, project directory, ledger, jobs) came from: its flag, its variable, or a default, named by its base (`<user config>/plugins`, `<root default>/.warden`) and never as a host path. Call it first on a connection: `projects.ids` are the ids you may pass as project_id (at most 64; `truncated` when there are more), `selection` says how a call that names none is settled (single; default: the first; strict: you must name one; none), `implicit` is the project such a call reads now (or why none), and `probe` checks one project id: known, and readable now.",
  risk: "read",
  input: v.strictObject({
    probe: v.optional(v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(256),
      v.description("A project id to check: whether this server knows it and can read it now."),
    )),
  }),
  output: v.object({
    server: v.object({ name: v.string(), version: v.string(), instanceId: v.string() }),
    runtime: v.object({ name: v.string(), version: v.string() }),
    transport: v.string(),
    protocolVersion: v.nullable(v.string()),
    catalogDigest: v.string(),
    toolsByRisk: RiskCounts,
    projects: v.object({
      ids: v.pipe(v.array(v.string()), v.description("The project ids you may pass as project_id, at most 64.")),
      truncated: v.boolean(),
      selection: v.picklist(["none", "single", "default", "strict"]),
      implicit: v.pipe(
        v.union([
          v.object({ project_id: v.string(), from: v.picklist(["header", "default"]) }),
          v.object({ error_code: v.string(), reason: v.nullable(v.string()) }),
        ]),
        v.description(
          `The project a call without project_id reads now: from the ${PROJECT_HEADER} header of this request, or the default; or why none.`,
        ),
      ),
    }),
    probe: v.optional(v.object({
      project_id: v.string(),
      known: v.boolean(),
      readable: v.boolean(),
      problem: v.pipe(v.nullable(v.string()), v.description("Why not, when it is not known or not readable.")),
    })),
    gate: v.object({
      isolation: v.object({ kind: v.string(), network: v.string(), writes: v.string(), detail: v.string() }),
      programs: v.record(v.string(), v.picklist(["found", "missing"])),
      allowUnisolated: v.pipe(
        v.array(v.string()),
        v.description(
          "Checks the operator lets run_checks run without isolation where none is in force (--allow-unisolated).",
        ),
      ),
      requireApproval: v.pipe(
        v.array(v.string()),
        v.description(
          "run_checks groups the operator runs only as approved plans (--require-approval): ask with checks_request.",
        ),
      ),
    }),
    confinement: v.object({
      runtime: v.string(),
      inForce: v.boolean(),
      open: v.array(v.string()),
      detail: v.string(),
    }),
    settings: v.pipe(
      v.record(v.string(), v.object({ file: v.nullable(v.string()), from: v.string() })),
      v.description(
        "Each path setting by flag: where it came from (the flag, the variable, or the default: project, user config, user state) and a default's file by its base; null when a setting gave the path (`warden doctor` prints it).",
      ),
    ),
  }),
  handler: async ({ probe }, ctx) => {
    const { host } = ctx;
    const isolation = await host.gateIsolation();
    // The operator's policy engine may show this caller fewer projects than the server has.
    const ids = host.visibleProjects ? await host.visibleProjects(ctx.fs.rootIds) : ctx.fs.rootIds;
    const listed = listedProjects(ids);
    return {
      server: { name: host.name, version: host.version, instanceId: host.instanceId },
      runtime: { name: host.runtime.name, version: host.runtime.version },
      transport: host.transport,
      protocolVersion: host.protocolVersion,
      catalogDigest: host.catalogDigest,
      toolsByRisk: { ...host.toolsByRisk },
      projects: {
        ids: listed.projects,
        truncated: listed.truncated,
        selection: selectionMode(ids, host.strictProjectSelection),
        implicit: implicitProject(ctx),
      },
      ...(probe === undefined ? {} : { probe: await probeProject(ctx, probe, ids) }),
      gate: {
        isolation: { ...isolation },
        programs: Object.fromEntries(
          Object.entries(host.programs).map(([name, found]) => [name, found ? "found" : "missing"] as const),
        ),
        allowUnisolated: [...host.allowUnisolated],
        requireApproval: [...host.requireApproval],
      },
      confinement: { ...host.confinement, open: [...host.confinement.open] },
      settings: Object.fromEntries(Object.entries(host.settings).map(([flag, setting]) => [flag, { ...setting }])),
    };
  },
});

/** What a call that names no project reads over this connection now, or why it would fail. */
function implicitProject(ctx: ReadContext) {
  const { host } = ctx;
  try {
    const id = resolveProject(ctx.fs.rootIds, undefined, {
      strict: host.strictProjectSelection,
      header: host.projectHeader,
    });
    return { project_id: id, from: host.projectHeader === null ? "default" as const : "header" as const };
  } catch (error) {
    if (!(error instanceof WardenError)) throw error;
    const reason = error.details?.reason;
    return { error_code: error.code, reason: typeof reason === "string" ? reason : null };
  }
}

/**
 * Whether `id` is a project of this server the caller may see (`visible`) and its directory can be read now (it may
 * have gone since the start). One the policy engine hides is answered as one the server does not have.
 */
async function probeProject(ctx: ReadContext, id: string, visible: readonly string[]) {
  if (!visible.includes(id)) {
    return {
      project_id: id,
      known: false,
      readable: false,
      problem: "not a project of this server: pass one of projects.ids",
    };
  }
  try {
    await ctx.fs.list(id);
    return { project_id: id, known: true, readable: true, problem: null };
  } catch (error) {
    return { project_id: id, known: true, readable: false, problem: messageOf(error) };
  }
}
