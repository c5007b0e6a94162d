// warden's own checks, run with no program (the `hygiene` group). Another
// change fills this list; until then the group has no check, and run_checks
// reports that rather than a pass.
import type { BuiltinCheck } from "../types.ts";

/** Every hygiene check, in the order they run. */
export const HYGIENE_CHECKS: readonly BuiltinCheck[] = [];
