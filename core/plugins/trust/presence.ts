// Whether there are plugins at all: a cheap look at the plugins directory, so
// that a host without plugins never loads the signature, manifest and sandbox code.
import { platform } from "../../platform/mod.ts";

/** True when `dir` has at least one plugin directory (hidden ones do not count). */
export async function hasPluginDirectories(dir: string): Promise<boolean> {
  try {
    return (await platform().fs.readDir(dir)).some((entry) =>
      entry.kind === "directory" && !entry.name.startsWith(".")
    );
  } catch {
    return false;
  }
}
