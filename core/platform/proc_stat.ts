// A process's CPU time from Linux's /proc/<pid>/stat, as both adapters read it: themselves where they may, else
// through a program that may (deno reads /proc only with --allow-all, node not under its permission model).

/** The stat file of process `pid`; null for anything but a positive integer, so that a reader gets no other path. */
export function procStatFile(pid: number): string | null {
  return Number.isSafeInteger(pid) && pid > 0 ? `/proc/${pid}/stat` : null;
}

/** utime + stime of a /proc/<pid>/stat text, in ms; null when the text is not one. */
export function cpuMsOfStat(text: string): number | null {
  // After the command name in parentheses (which may hold anything): state, ... utime (14th), stime (15th), in
  // clock ticks of USER_HZ, which is 100 on every Linux ABI.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ms = (Number(fields[11]) + Number(fields[12])) * 10;
  return Number.isFinite(ms) ? ms : null;
}
