// What the runtime itself enforces on this process: deno's permissions
// (Deno.permissions.querySync) or node's permission model (process.permission).
// Queries only: no permission is requested, none is revoked.
import type { PermissionNeeds } from "../confinement.ts";

/** Whether the runtime holds this process to what it needs, as `host_context` reports it. */
export interface Confinement {
  readonly runtime: "node" | "deno";
  /** True when the runtime enforces a permission model on this process and it limits file access to the needs. */
  readonly inForce: boolean;
  /** Permissions the runtime leaves wider than the needs (`read`, `write`, `run`, `net`, `env`, `sys`, `ffi`...). */
  readonly open: readonly string[];
  /** One sentence: what holds, what does not and why. */
  readonly detail: string;
}

type DenoState = "granted" | "prompt" | "denied";
interface DenoPermissions {
  querySync(descriptor: Record<string, string>): { state: DenoState };
}
interface NodePermission {
  has(scope: string, reference?: string): boolean;
}

const denoPermissions = () => (globalThis as unknown as { Deno?: { permissions: DenoPermissions } }).Deno?.permissions;
const nodePermission = () =>
  (globalThis as unknown as { process?: { permission?: NodePermission } }).process?.permission;

const under = (file: string, dirs: readonly string[]) =>
  dirs.some((dir) => file === dir || file.startsWith(dir.endsWith("/") ? dir : dir + "/"));

/** Paths outside everything `needs` grants, to ask the runtime about. */
function outsidePaths(needs: PermissionNeeds, tempDir: string): string[] {
  const granted = [...needs.read, ...needs.write];
  return ["/", "/etc/passwd", `${tempDir}/warden-confinement-probe`].filter((p) => !under(p, granted));
}

/** Each permission in `needs` the running deno does not grant, as "read /path", "env NAME"...; none off deno. */
export function denoMissing(needs: Partial<PermissionNeeds>): string[] {
  const permissions = denoPermissions();
  if (!permissions) return [];
  const granted = (descriptor: Record<string, string>) => permissions.querySync(descriptor).state === "granted";
  return [
    ...(needs.read ?? []).filter((p) => !granted({ name: "read", path: p })).map((p) => `read ${p}`),
    ...(needs.write ?? []).filter((p) => !granted({ name: "write", path: p })).map((p) => `write ${p}`),
    ...(needs.run === "all"
      ? (granted({ name: "run" }) ? [] : ["run (unrestricted)"])
      : (needs.run ?? []).filter((c) => !granted({ name: "run", command: c })).map((c) => `run ${c}`)),
    ...(needs.net === "all"
      ? (granted({ name: "net" }) ? [] : ["net (unrestricted)"])
      : (needs.net ?? []).filter((h) => !granted({ name: "net", host: h })).map((h) => `net ${h}`)),
    ...(needs.env ?? []).filter((v) => !granted({ name: "env", variable: v })).map((v) => `env ${v}`),
    ...(needs.sys ?? []).filter((k) => !granted({ name: "sys", kind: k })).map((k) => `sys ${k}`),
  ];
}

/**
 * What the running deno grants beyond or short of `needs`: `missing` names each needed permission not granted
 * (the server cannot work without them), `state` says whether confinement is in force.
 */
export function denoConfinement(
  needs: PermissionNeeds,
  tempDir: string,
): { state: Confinement; missing: string[] } | null {
  const permissions = denoPermissions();
  if (!permissions) return null;
  const granted = (descriptor: Record<string, string>) => permissions.querySync(descriptor).state === "granted";
  const missing = denoMissing(needs);
  const outside = outsidePaths(needs, tempDir);
  const open: string[] = [];
  if (granted({ name: "read" }) || outside.some((p) => granted({ name: "read", path: p }))) open.push("read");
  if (granted({ name: "write" }) || outside.some((p) => granted({ name: "write", path: p }))) open.push("write");
  if (
    needs.run !== "all" &&
    (granted({ name: "run" }) ||
      ["/bin/sh", "sh"].some((c) => !needs.run.includes(c) && granted({ name: "run", command: c })))
  ) open.push("run");
  const netList = needs.net;
  if (
    netList !== "all" &&
    (granted({ name: "net" }) ||
      ["127.0.0.1:9", "example.com:443"].some((h) => !netList.includes(h) && granted({ name: "net", host: h })))
  ) open.push("net");
  if (
    granted({ name: "env" }) ||
    ["HOME", "WARDEN_CONFINEMENT_PROBE"].some((v) => !needs.env.includes(v) && granted({ name: "env", variable: v }))
  ) open.push("env");
  if (
    granted({ name: "sys" }) ||
    ["hostname", "osRelease", "networkInterfaces"].some((k) =>
      !needs.sys.includes(k) && granted({ name: "sys", kind: k })
    )
  ) open.push("sys");
  for (const name of ["ffi", "import"]) if (granted({ name })) open.push(name);
  // Said without paths: host_context shows no host path.
  const programs = needs.run === "all" ? [] : needs.run.map((p) => p.slice(p.lastIndexOf("/") + 1));
  const caveats = [
    ...(needs.run === "all" ? [`run is unrestricted because ${needs.runAllWhy}`] : []),
    ...(programs.length > 0
      ? [`it may start ${programs.join(" and ")}, and a tool that starts one itself chooses its arguments`]
      : []),
    ...(needs.write.includes(tempDir) ? ["it may write in the OS temp directory, where gate calls get scratch"] : []),
    ...(needs.net === "all" ? [`net is unrestricted because ${needs.netAllWhy}`] : []),
  ];
  const inForce = open.length === 0;
  const detail = inForce
    ? `deno grants only what this catalog and these settings need${caveats.length ? `; ${caveats.join("; ")}` : ""}`
    : `deno grants more than this server needs (${
      open.join(", ")
    }): start it with the command in its startup line ("warden command" prints it)`;
  return { state: Object.freeze({ runtime: "deno", inForce, open: Object.freeze(open), detail }), missing };
}

/** What node's permission model (when the process was started with it) holds to `needs`. */
export function nodeConfinement(needs: PermissionNeeds, tempDir: string, nodeVersion: string): Confinement {
  const permission = nodePermission();
  const major = Number(nodeVersion.split(".")[0]);
  const envAndNet = major >= 25 ? ["env"] : ["env", "net"];
  if (!permission) {
    return Object.freeze({
      runtime: "node",
      inForce: false,
      open: Object.freeze(["read", "write", "run", "worker", ...envAndNet]),
      detail: `node ${nodeVersion} runs without its permission model (${
        major >= 22 ? "--permission" : "--experimental-permission"
      }): nothing but ctx limits a built-in tool`,
    });
  }
  // Not "/": node 20 answers true for it once three paths are granted, though no file under it is readable.
  const outside = outsidePaths(needs, tempDir).filter((p) => p !== "/");
  const open = [
    ...(outside.some((p) => permission.has("fs.read", p)) ? ["read"] : []),
    ...(outside.some((p) => permission.has("fs.write", p)) ? ["write"] : []),
    ...(permission.has("child") ? ["run"] : []),
    ...(permission.has("worker") ? ["worker"] : []),
    ...envAndNet,
  ];
  const fsHeld = !open.includes("read") && !open.includes("write");
  return Object.freeze({
    runtime: "node",
    inForce: fsHeld,
    open: Object.freeze(open),
    detail: `node's permission model is on${
      fsHeld ? " and holds file access to what this server needs" : ""
    }; it leaves ${open.join(", ")} open (node has no per-variable or${
      major >= 25 ? "" : " network or"
    } per-program permissions)`,
  });
}
