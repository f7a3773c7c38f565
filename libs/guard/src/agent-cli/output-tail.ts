// Bounded output capture: the last N bytes of a stream, cut only at a UTF-8 code point boundary.

/** Moves `start` forward past UTF-8 continuation bytes (10xxxxxx) so a tail never begins mid-character. */
function codePointStart(bytes: Buffer, start: number): number {
  let at = start;
  // A code point has at most three continuation bytes; past that the input was not UTF-8 anyway.
  for (let skipped = 0; skipped < 3 && at < bytes.length && ((bytes[at] ?? 0) & 0xc0) === 0x80; skipped += 1) at += 1;
  return at;
}

function tailOf(bytes: Buffer, maxBytes: number): Buffer {
  if (bytes.length <= maxBytes) return bytes;
  return bytes.subarray(codePointStart(bytes, bytes.length - maxBytes));
}

/** Keeps the last `maxBytes` of a byte stream in bounded memory and decodes once at the end. */
export class Utf8Tail {
  private readonly chunks: Buffer[] = [];
  private held = 0;
  private seen = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.seen += chunk.length;
    if (this.maxBytes === 0) return;
    this.chunks.push(chunk);
    this.held += chunk.length;
    // Drop whole chunks that lie entirely before the tail; the cut inside the first kept chunk happens at decode time.
    for (let first = this.chunks[0]; first !== undefined && this.held - first.length >= this.maxBytes; first = this.chunks[0]) {
      this.chunks.shift();
      this.held -= first.length;
    }
  }

  get truncated(): boolean {
    return this.seen > this.maxBytes;
  }

  text(): string {
    return tailOf(Buffer.concat(this.chunks, this.held), this.maxBytes).toString('utf8');
  }
}

/** Applies the byte cap to text an executor returned (an injected one may not have). */
export function capText(text: string, maxBytes: number): { text: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false, bytes: bytes.length };
  const tail = tailOf(bytes, maxBytes);
  return { text: tail.toString('utf8'), truncated: true, bytes: tail.length };
}
