// A unified line diff (Myers' O(ND) algorithm), for `warden catalog --check`.

type Op = { kind: " " | "-" | "+"; line: string };

function editScript(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
        ? v[offset + k + 1]
        : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // Walk the trace back from (n, m) to recover the path.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = vd[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ kind: " ", line: a[x] });
    }
    if (d > 0) {
      if (x === prevX) ops.push({ kind: "+", line: b[--y] });
      else ops.push({ kind: "-", line: a[--x] });
    }
  }
  return ops.reverse();
}

/**
 * The unified diff of two texts with `context` lines around each change, or
 * the empty string when they are equal.
 */
export function unifiedDiff(before: string, after: string, labels: [string, string], context = 3): string {
  if (before === after) return "";
  const a = before.split("\n");
  const b = after.split("\n");
  const ops = editScript(a, b);
  const out = [`--- ${labels[0]}`, `+++ ${labels[1]}`];
  let i = 0;
  let lineA = 1;
  let lineB = 1;
  while (i < ops.length) {
    if (ops[i].kind === " ") {
      i++;
      lineA++;
      lineB++;
      continue;
    }
    // A hunk: back up `context` lines, run until `2 * context` unchanged lines pass.
    const start = Math.max(0, i - context);
    let end = i;
    let quiet = 0;
    while (end < ops.length && quiet <= 2 * context) {
      quiet = ops[end].kind === " " ? quiet + 1 : 0;
      end++;
    }
    end = Math.min(ops.length, end - Math.max(0, quiet - context));
    const back = i - start;
    const hunk = ops.slice(start, end);
    const countA = hunk.filter((op) => op.kind !== "+").length;
    const countB = hunk.filter((op) => op.kind !== "-").length;
    out.push(`@@ -${lineA - back},${countA} +${lineB - back},${countB} @@`);
    for (const op of hunk) out.push(op.kind + op.line);
    for (let j = i; j < end; j++) {
      if (ops[j].kind !== "+") lineA++;
      if (ops[j].kind !== "-") lineB++;
    }
    i = end;
  }
  return out.join("\n") + "\n";
}
