// Byte arrays joined end to end: what the stdio transport, the plugin
// runtime, ctx.fetch and an HTTP request's body each do with the chunks a stream hands them.

/** A new array holding `parts` in order; `size`, when the caller counted it already, saves a pass. */
export function concatBytes(parts: readonly Uint8Array[], size?: number): Uint8Array {
  let length = size ?? 0;
  if (size === undefined) { for (const part of parts) length += part.length; }
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
