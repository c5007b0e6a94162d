// The words of an option that does not validate: where it is and what is
// wrong, shared by the group's options and the boundary rules.
import type * as v from "valibot";

/**
 * What is wrong with the value at an issue, in words: a missing key says so rather than "received undefined", and an
 * unknown one names the keys there are.
 */
export function issueWords(issue: v.BaseIssue<unknown>, keys: readonly string[]): string {
  if (issue.expected === "never") return `unknown key; the keys are ${keys.join(", ")}`;
  if (issue.input === undefined && issue.expected?.startsWith('"')) return "it is missing";
  return issue.message;
}
