// run_checks (gate): runs a check group (tsc, eslint or deno lint, warden's
// own hygiene checks) over a root's change and says PASS, FAIL or ERROR.
import * as v from "valibot";
import { defineTool } from "../core/tool.ts";
import { CHECK_PROGRAMS, RUN_INPUT, RUN_OUTPUT } from "./lib/checks/request.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

/**
 * Risk class `gate`: it runs git and the check programs (node for a project's own tsc or eslint, tsc, eslint, deno)
 * through ctx.spawn, confined; a check that runs the repository's code runs only under bubblewrap.
 */
export const tool = defineTool({
  name: "run_checks",
  title: "Run checks",
  description:
    "Runs a check group over a root's change before you ship it and answers PASS, FAIL or ERROR: `typescript` (tsc --noEmit for each tsconfig.json), `lint` (eslint where the project has it, deno lint for deno projects), `hygiene` (warden's own checks), `repo` (the repository's signed, pinned manifest) or `default` (all that apply), on the staged change (default), the working tree or a range (`diff`), narrowed by file/dir/exclude globs. FAIL means a finding met `fail_on` (default high); ERROR means the run cannot be trusted (a check could not run, isolation missing); only PASS is safe. A check manifest in the repository (.warden/checks.json) is refused unless an allowed signer signed it and the operator pinned it; then its checks are group `repo` (and part of `default`). For a run that may take long, run_checks_start runs it as a job (or call it as an MCP task). A group the operator or the repository's manifest marks approval: required is refused here (approval_required; host_context's gate.requireApproval names them): ask for it with checks_request. Findings come most severe first; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "gate",
  capabilities: { spawn: CHECK_PROGRAMS },
  // A run can take minutes (tsc on a large project): run_checks_start and run_checks_result, and MCP tasks.
  job: true,
  input: v.strictObject({ ...RUN_INPUT, ...pageInput("findings") }),
  output: v.object({ ...RUN_OUTPUT, ...pageOutput }),
  // run_checks_start refuses now what the run would refuse before reading the change.
  precheck: async (args, ctx) => {
    const { limit: _limit, cursor: _cursor, ...request } = args;
    const { precheckRun } = await import("./lib/checks/run.ts");
    await precheckRun(request, ctx);
  },
  // What an approved plan of a run binds to (checks_request): the repository's HEAD, tree, changes and manifest.
  planState: async (args, ctx) => {
    const { readPlanState } = await import("./lib/checks/approval.ts");
    return await readPlanState(ctx, args.project_id);
  },
  handler: async (args, ctx) => {
    const { limit: _limit, cursor: _cursor, ...request } = args;
    // The runner (git, the code graph, warden's own checks) loads with the first run, not at startup.
    const { runChecks } = await import("./lib/checks/run.ts");
    // A later page re-runs the checks (a cursor holds no answer) and is honoured only if the answer is the same: its
    // signals were recorded by the call of the first page.
    const answer = await runChecks(request, ctx, ctx.signal, { recordSignals: args.cursor === undefined });
    return await paginate(answer, {
      tool: "run_checks",
      args,
      lists: ["findings", "signals"],
      volatile: ["durationMs", "checks", "signalRows"],
    });
  },
});
