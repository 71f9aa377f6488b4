/**
 * A Server-Sent Events reader over a fetch body, per the WHATWG "event stream
 * interpretation": lines end in CRLF, LF or CR; `data` lines join with a newline; a
 * blank line dispatches; lines starting with `:` are comments (the gateway's pings).
 * Written out rather than taken from a package: it is forty lines, and `EventSource`
 * cannot send an `Authorization` header.
 */

/** One dispatched message. `id` is the last id seen on the stream, as the spec keeps it. */
export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** Yield the messages of an event stream until it ends. */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent, void, undefined> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let lastId: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // A CR at the very end may be the first half of a CRLF: keep it until more comes.
      const lines = buffer.split(/\r\n|\r(?!$)|\n/);
      buffer = done ? "" : (lines.pop() ?? "");
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) {
            yield { event: event || "message", data: data.join("\n"), id: lastId };
          }
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) {
          continue;
        }
        const colon = line.indexOf(":");
        const name = colon === -1 ? line : line.slice(0, colon);
        let field = colon === -1 ? "" : line.slice(colon + 1);
        if (field.startsWith(" ")) {
          field = field.slice(1);
        }
        if (name === "data") {
          data.push(field);
        } else if (name === "event") {
          event = field;
        } else if (name === "id" && !field.includes("\0")) {
          lastId = field;
        }
      }
      if (done) {
        return; // a message without its closing blank line is incomplete: dropped
      }
    }
  } finally {
    // Stopping early (a `break` in the caller's loop) closes the connection.
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
