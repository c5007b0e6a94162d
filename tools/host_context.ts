// host_context (read): what this server is — name, version, runtime,
// transport, negotiated protocol, catalog digest, tools by class, root ids,
// gate isolation, runtime confinement, and where each path setting came from.
import * as v from "valibot";
import { defineTool } from "../core/tool.ts";

const RiskCounts = v.object({ read: v.number(), gate: v.number(), "external-side-effect": v.number() });

/**
 * Risk class `read`; it touches nothing but the host facts in its context:
 * no host paths, no environment values.
 */
export const tool = defineTool({
  name: "host_context",
  title: "Host context",
  description:
    "Describes this warden server: name and version, runtime, transport, negotiated MCP protocol version, catalog digest, tool counts by risk class, the ids of the roots tools can read, what confines the programs gate tools run (and which checks the operator lets run without it), and whether the runtime itself (deno's permissions, node's permission model) holds the server to what its catalog and settings need (never claiming more than is in force), and where each path setting (plugins, trust files, lock, project directory, ledger, jobs) came from: its flag, its variable, or a default, named by its base (`<user config>/plugins`, `<root default>/.warden`) and never as a host path. Call it first to learn which roots exist.",
  risk: "read",
  input: v.strictObject({}),
  output: v.object({
    server: v.object({ name: v.string(), version: v.string() }),
    runtime: v.object({ name: v.string(), version: v.string() }),
    transport: v.string(),
    protocolVersion: v.nullable(v.string()),
    catalogDigest: v.string(),
    toolsByRisk: RiskCounts,
    roots: v.array(v.string()),
    gate: v.object({
      isolation: v.object({ kind: v.string(), network: v.string(), writes: v.string(), detail: v.string() }),
      programs: v.record(v.string(), v.picklist(["found", "missing"])),
      allowUnisolated: v.pipe(
        v.array(v.string()),
        v.description(
          "Checks the operator lets run_checks run without isolation where none is in force (--allow-unisolated).",
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
  handler: async (_args, ctx) => {
    const { host } = ctx;
    const isolation = await host.gateIsolation();
    return {
      server: { name: host.name, version: host.version },
      runtime: { name: host.runtime.name, version: host.runtime.version },
      transport: host.transport,
      protocolVersion: host.protocolVersion,
      catalogDigest: host.catalogDigest,
      toolsByRisk: { ...host.toolsByRisk },
      roots: [...host.rootIds],
      gate: {
        isolation: { ...isolation },
        programs: Object.fromEntries(
          Object.entries(host.programs).map(([name, found]) => [name, found ? "found" : "missing"] as const),
        ),
        allowUnisolated: [...host.allowUnisolated],
      },
      confinement: { ...host.confinement, open: [...host.confinement.open] },
      settings: Object.fromEntries(Object.entries(host.settings).map(([flag, setting]) => [flag, { ...setting }])),
    };
  },
});
