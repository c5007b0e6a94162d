// hygiene/blast-radius: how many modules depend on what the change touches
// (directly or through others, from the code graph, as change_summary and
// code_blast_radius count them), against a budget: over it, one finding that
// names the count, the budget and the changed modules that reach the most.
import type { BuiltinCheck, Severity } from "../types.ts";
import { changedModules, graphOf } from "./change.ts";

const CHECK = "hygiene/blast-radius";

/**
 * Dependents a change may reach before review should slow down. Fifty modules is more than a feature's own files and
 * less than what a change to a shared utility of a mid-sized project reaches, which is the change to look twice at.
 */
export const DEFAULT_BLAST_BUDGET = 50;

/** Options of hygiene/blast-radius. */
export interface BlastRadiusOptions {
  /** Most dependent modules the change may reach (default DEFAULT_BLAST_BUDGET). */
  readonly budget?: number;
  /** Count only run-time dependents, not those that import types alone (default false: all). */
  readonly runtimeOnly?: boolean;
  /** Default medium: a wide change is a review risk, not a defect. */
  readonly severity?: Severity;
}

/** Changed modules named in the finding, the ones that reach the most first. */
const CONTRIBUTORS_SHOWN = 5;

/** The check, with its options. */
export function blastRadiusCheck(options: BlastRadiusOptions = {}): BuiltinCheck {
  const budget = options.budget ?? DEFAULT_BLAST_BUDGET;
  const valueOnly = options.runtimeOnly ?? false;
  return {
    name: CHECK,
    description:
      `The modules that depend on the changed ones, directly or through others, from the code graph: over the budget (default ${DEFAULT_BLAST_BUDGET}), one finding naming the count, the budget and the changed modules that reach the most. Medium by default.`,
    async run(scope, ctx) {
      const changed = changedModules(scope);
      if (changed.length === 0) return [];
      const { dependentsOf, unknownsReaching } = await import("../../graph/graph_queries.ts");
      const graph = await graphOf(scope, ctx);
      const sources = changed.map((file) => file.path).filter((path) => graph.modules.has(path));
      const sourceSet = new Set(sources);
      const reached = new Set<string>();
      const contributors: { path: string; count: number }[] = [];
      for (const path of sources) {
        let count = 0;
        for (const dependent of dependentsOf(graph, path, { valueOnly }).keys()) {
          if (sourceSet.has(dependent)) continue;
          count++;
          reached.add(dependent);
        }
        contributors.push({ path, count });
      }
      if (reached.size <= budget) return [];
      contributors.sort((a, b) => b.count - a.count || (a.path < b.path ? -1 : 1));
      const top = contributors.filter((c) => c.count > 0).slice(0, CONTRIBUTORS_SHOWN);
      const more = contributors.filter((c) => c.count > 0).length - top.length;
      // Imports the graph cannot see through (unparsable files, computed imports) may reach more.
      const lowerBound =
        unknownsReaching(graph, [...sources, ...reached], new Set([...sources, ...reached])).length > 0;
      return [{
        check: CHECK,
        file: null,
        line: null,
        column: null,
        severity: options.severity ?? "medium",
        rule: "over-budget",
        message: `The change reaches ${lowerBound ? "at least " : ""}${reached.size} dependent ${
          valueOnly ? "run-time " : ""
        }modules, over the budget of ${budget}; most through ${top.map((c) => `${c.path} (${c.count})`).join(", ")}${
          more > 0 ? ` and ${more} more` : ""
        }; split the change or review those dependents`,
      }];
    },
  };
}
