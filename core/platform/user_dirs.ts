// Where a user's own warden files go, by each platform's convention: config
// (trust store, plugins, their lock) and state (ledger, jobs, accepted
// projects). Pure: the environment and the OS name are arguments, so a test
// runs every platform's rules on any machine.
import path from "node:path";
import { problem, WardenError } from "../errors.ts";

/** The user's config and state directories; each a path, or the error that says why it cannot be known. */
export interface UserDirs {
  readonly config: string | WardenError;
  readonly state: string | WardenError;
}

/** The variables userDirs reads (deno's --allow-env must name them). */
export const USER_DIR_VARIABLES = Object.freeze([
  "HOME",
  "XDG_CONFIG_HOME",
  "XDG_STATE_HOME",
  "APPDATA",
  "LOCALAPPDATA",
]);

/**
 * Linux and other Unix: the XDG base directories (`$XDG_CONFIG_HOME/warden`, `$XDG_STATE_HOME/warden`, a relative
 * value ignored as the spec says), else `~/.config/warden` and `~/.local/state/warden`. macOS: Apple's File System
 * Programming Guide puts an app's support files, config and state alike, in `~/Library/Application Support/<app>`;
 * the state goes in its `state/` so that the two stay apart as on Linux. An XDG variable set on macOS is honoured
 * (as git and many CLIs do) for those who keep their dotfiles there. Windows: `%APPDATA%\warden` (roaming, config)
 * and `%LOCALAPPDATA%\warden` (this machine's state).
 */
export function userDirs(os: string, env: (name: string) => string | undefined): UserDirs {
  const set = (name: string) => {
    const value = env(name);
    return value === undefined || value === "" ? undefined : value;
  };
  if (os === "windows") {
    const p = path.win32;
    return {
      config: set("APPDATA") ? p.join(set("APPDATA")!, "warden") : missing("APPDATA", "config"),
      state: set("LOCALAPPDATA") ? p.join(set("LOCALAPPDATA")!, "warden") : missing("LOCALAPPDATA", "state"),
    };
  }
  const home = set("HOME");
  // The XDG spec: "If an implementation encounters a relative path in any of these variables it should consider the
  // path invalid and ignore it."
  const xdg = (name: string) => {
    const value = set(name);
    return value !== undefined && path.posix.isAbsolute(value) ? value : undefined;
  };
  const under = (variable: string, homeRelative: string, which: "config" | "state") => {
    const base = xdg(variable);
    if (base) return path.posix.join(base, "warden");
    return home ? path.posix.join(home, homeRelative) : missing(`HOME (or ${variable})`, which);
  };
  if (os === "darwin") {
    const support = "Library/Application Support/warden";
    return {
      config: under("XDG_CONFIG_HOME", support, "config"),
      state: under("XDG_STATE_HOME", `${support}/state`, "state"),
    };
  }
  return {
    config: under("XDG_CONFIG_HOME", ".config/warden", "config"),
    state: under("XDG_STATE_HOME", ".local/state/warden", "state"),
  };
}

const FLAGS = {
  config: "--plugins-dir, --allowed-signers, --revoked-keys and --plugins-lock",
  state: "--ledger and --jobs-dir",
};

function missing(variable: string, which: "config" | "state"): WardenError {
  return new WardenError(
    "config_invalid",
    problem(
      `Cannot find the user ${which} directory`,
      `${variable} is not set`,
      `set ${variable.replace(/ \(or (\w+)\)/, " or $1")}, or name the files with ${FLAGS[which]}`,
    ),
  );
}
