// Whether there are plugins at all: a cheap look at the plugins directory, so
// that a host without plugins never loads the signature, manifest and sandbox code.
import { platform } from "../../platform/mod.ts";

/**
 * True when `dir` has at least one plugin directory (hidden ones do not count), or cannot be listed for another
 * reason than its absence (a permission the runtime refuses): the plugin checks then say why, instead of no plugin
 * loading in silence.
 */
export async function hasPluginDirectories(dir: string): Promise<boolean> {
  try {
    return (await platform().fs.readDir(dir)).some((entry) =>
      entry.kind === "directory" && !entry.name.startsWith(".")
    );
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
}
