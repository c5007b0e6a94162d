// Byte arrays joined end to end: what the stdio transport, the plugin
// runtime, ctx.fetch and an HTTP request's body each do with the chunks a stream hands them; and a body read up to a
// cap (an HTTP request's, a policy engine's answer).

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

/**
 * A request's or response's body, read up to `max` bytes; null when it is larger (what was read is dropped, the rest
 * is not read).
 */
export async function boundedBody(message: Request | Response, max: number): Promise<Uint8Array | null> {
  const declared = Number(message.headers.get("content-length") ?? NaN);
  if (declared > max) return null;
  if (!message.body) return new Uint8Array(0);
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return concatBytes(chunks, size);
}
