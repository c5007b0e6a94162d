import { test } from "node:test";
import assert from "node:assert/strict";
import { userDirs } from "./user_dirs.ts";

const envOf = (vars: Record<string, string>) => (name: string) => vars[name];

test("userDirs: each platform's convention, the XDG variables only when absolute", () => {
  const cases: [string, Record<string, string>, string, string][] = [
    ["linux", { HOME: "/home/a" }, "/home/a/.config/warden", "/home/a/.local/state/warden"],
    ["linux", { HOME: "/home/a", XDG_CONFIG_HOME: "/x/c", XDG_STATE_HOME: "/x/s" }, "/x/c/warden", "/x/s/warden"],
    // Relative values are invalid per the XDG spec: ignored.
    [
      "freebsd",
      { HOME: "/home/a", XDG_CONFIG_HOME: "c", XDG_STATE_HOME: "./s" },
      "/home/a/.config/warden",
      "/home/a/.local/state/warden",
    ],
    ["linux", { XDG_CONFIG_HOME: "/x/c", XDG_STATE_HOME: "/x/s" }, "/x/c/warden", "/x/s/warden"],
    [
      "darwin",
      { HOME: "/Users/a" },
      "/Users/a/Library/Application Support/warden",
      "/Users/a/Library/Application Support/warden/state",
    ],
    [
      "windows",
      { APPDATA: "C:\\Users\\a\\AppData\\Roaming", LOCALAPPDATA: "C:\\Users\\a\\AppData\\Local", HOME: "/ignored" },
      "C:\\Users\\a\\AppData\\Roaming\\warden",
      "C:\\Users\\a\\AppData\\Local\\warden",
    ],
  ];
  for (const [os, vars, config, state] of cases) {
    assert.deepEqual(userDirs(os, envOf(vars)), { config, state }, `${os} ${JSON.stringify(vars)}`);
  }
});

test("userDirs: no HOME is an error per directory, naming the variable and the flags that avoid it", () => {
  const dirs = userDirs("linux", envOf({ XDG_STATE_HOME: "/x/s" }));
  assert.equal(dirs.state, "/x/s/warden");
  assert.ok(dirs.config instanceof Error);
  assert.equal(
    dirs.config.message,
    "Cannot find the user config directory: HOME (or XDG_CONFIG_HOME) is not set; set HOME or XDG_CONFIG_HOME, or name the files with --plugins-dir, --allowed-signers, --revoked-keys and --plugins-lock",
  );
  const empty = userDirs("linux", envOf({ HOME: "" }));
  assert.match(String(empty.state), /HOME \(or XDG_STATE_HOME\) is not set; .*--ledger and --jobs-dir/);
  const windows = userDirs("windows", envOf({ HOME: "/h" }));
  assert.match(String(windows.config), /APPDATA is not set; set APPDATA, or name the files with --plugins-dir/);
  assert.match(String(windows.state), /LOCALAPPDATA is not set/);
});
