// The node adapter of Platform.
import { constants } from "node:fs";
import { lstat, open, readdir, readFile, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { FileStat, Platform, PlatformDirEntry, RegularFileRead } from "./types.ts";

function toStat(info: import("node:fs").Stats): FileStat {
  return {
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: info.isSymbolicLink(),
    size: info.size,
    mtimeMs: info.mtimeMs,
  };
}

async function readRegularFile(file: string, maxBytes: number): Promise<RegularFileRead> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if ((error as { code?: string }).code === "ELOOP") return { kind: "symlink" };
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: "not_a_file" };
    if (info.size > maxBytes) return { kind: "too_large", size: info.size };
    const bytes = new Uint8Array(info.size);
    let offset = 0;
    while (offset < bytes.length) {
      const { bytesRead } = await handle.read(bytes, offset, bytes.length - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return { kind: "ok", bytes: offset === bytes.length ? bytes : bytes.subarray(0, offset) };
  } finally {
    await handle.close();
  }
}

/** Platform for node, on node's own modules. */
export function nodePlatform(): Platform {
  return Object.freeze({
    runtime: Object.freeze({ name: "node" as const, version: process.versions.node, execPath: process.execPath }),
    args: Object.freeze(process.argv.slice(2)),
    pathDelimiter: path.delimiter,
    env: (name: string) => process.env[name],
    cwd: () => process.cwd(),
    pid: () => process.pid,
    writeStdout: (text: string) => void process.stdout.write(text),
    writeStderr: (text: string) => void process.stderr.write(text),
    readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void) {
      let ended = false;
      const end = () => {
        if (!ended) {
          ended = true;
          onEnd();
        }
      };
      process.stdin.on("data", onChunk);
      process.stdin.on("end", end);
      process.stdin.on("error", end);
      process.stdout.on("error", end);
    },
    onInterrupt(handler: () => void) {
      process.on("SIGINT", handler);
      return () => void process.off("SIGINT", handler);
    },
    exit(code: number): never {
      process.exit(code);
    },
    setExitCode(code: number) {
      process.exitCode = code;
    },
    fromFileUrl: (url: URL) => fileURLToPath(url),
    fs: Object.freeze({
      realPath: (p: string) => realpath(p),
      stat: async (p: string) => toStat(await stat(p)),
      lstat: async (p: string) => toStat(await lstat(p)),
      async readDir(p: string): Promise<PlatformDirEntry[]> {
        return (await readdir(p, { withFileTypes: true })).map((entry) => ({
          name: entry.name,
          kind: entry.isFile()
            ? "file"
            : entry.isDirectory()
            ? "directory"
            : entry.isSymbolicLink()
            ? "symlink"
            : "other",
        }));
      },
      readRegularFile,
      readTextFile: (p: string) => readFile(p, "utf8"),
      async writeTextFileAtomic(p: string, text: string) {
        const temp = `${p}.${process.pid}.${Date.now()}.tmp`;
        try {
          await writeFile(temp, text, { flag: "wx" });
          await rename(temp, p);
        } catch (error) {
          await rm(temp, { force: true });
          throw error;
        }
      },
    }),
  });
}
