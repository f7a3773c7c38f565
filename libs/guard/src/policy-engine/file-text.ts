// What a file or image part carries, as the input policies read it: text (decoded), binary
// media the model sees as media, a network reference, or something that cannot be read.

/** How one file or image payload is read. */
export type FileReading =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'binary' }
  | { readonly kind: 'reference'; readonly url: string }
  | { readonly kind: 'unreadable' };

const UNREADABLE: FileReading = Object.freeze({ kind: 'unreadable' });
const BINARY: FileReading = Object.freeze({ kind: 'binary' });
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const TEXTUAL_APPLICATION = new Set([
  'json', 'xml', 'javascript', 'ecmascript', 'x-javascript', 'typescript', 'x-typescript', 'yaml', 'x-yaml', 'toml',
  'x-toml', 'sql', 'graphql', 'csv', 'x-csv', 'x-ndjson', 'ndjson', 'jsonl', 'x-sh', 'x-shellscript', 'x-httpd-php',
  'x-python', 'x-ruby', 'x-perl', 'x-tex', 'x-latex', 'rtf', 'x-www-form-urlencoded', 'x-subrip', 'x-ipynb+json',
]);

/** `type/subtype`, lower case, without parameters; '' when absent or not a string. */
function essence(mediaType: unknown): string {
  return typeof mediaType === 'string' ? (mediaType.split(';')[0] ?? '').trim().toLowerCase() : '';
}

/** A media type whose payload is text the model reads as text (or a charset says it is text). */
export function isTextualMediaType(mediaType: string): boolean {
  if (/;\s*charset\s*=/i.test(mediaType)) return true;
  const type = essence(mediaType);
  if (type.startsWith('text/') || type.startsWith('message/') || type.endsWith('+json') || type.endsWith('+xml') || type.endsWith('+yaml')) return true;
  return type.startsWith('application/') && TEXTUAL_APPLICATION.has(type.slice('application/'.length));
}

/** Media a model sees as an image, sound, video or PDF document, not as text. */
export function isBinaryMediaType(mediaType: string): boolean {
  const type = essence(mediaType);
  if (isTextualMediaType(mediaType)) return false;
  return /^(image|audio|video)\/./.test(type) || type === 'application/pdf';
}

const at = (bytes: Uint8Array, offset: number, ...expected: number[]): boolean => expected.every((b, i) => bytes[offset + i] === b);
const ascii = (bytes: Uint8Array, offset: number, text: string): boolean => at(bytes, offset, ...Array.from(text, (c) => c.charCodeAt(0)));

/** The leading signature of an image, audio, video or PDF format. */
export function hasBinaryMediaSignature(bytes: Uint8Array): boolean {
  return (
    at(bytes, 0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a) || // PNG
    at(bytes, 0, 0xff, 0xd8, 0xff) || // JPEG
    ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a') ||
    (ascii(bytes, 0, 'RIFF') && ['WEBP', 'WAVE', 'AVI '].some((form) => ascii(bytes, 8, form))) ||
    ascii(bytes, 0, 'BM') || at(bytes, 0, 0x49, 0x49, 0x2a, 0x00) || at(bytes, 0, 0x4d, 0x4d, 0x00, 0x2a) || // BMP, TIFF
    at(bytes, 0, 0x00, 0x00, 0x01, 0x00) || at(bytes, 0, 0xff, 0x0a) || // ICO, JPEG XL codestream
    at(bytes, 0, 0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20) || // JPEG XL container
    ['ftyp', 'moov', 'mdat', 'free', 'wide', 'skip'].some((box) => ascii(bytes, 4, box)) || // MP4, MOV, HEIC, AVIF, M4A
    at(bytes, 0, 0x1a, 0x45, 0xdf, 0xa3) || // WebM, Matroska
    ascii(bytes, 0, 'ID3') || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0) || // MP3, AAC frame sync
    ascii(bytes, 0, 'OggS') || ascii(bytes, 0, 'fLaC') || ascii(bytes, 0, '#!AMR') || ascii(bytes, 0, 'FORM') ||
    at(bytes, 0, 0x00, 0x00, 0x01, 0xba) || at(bytes, 0, 0x00, 0x00, 0x01, 0xb3) || // MPEG program, video stream
    ascii(bytes, 0, '%PDF-')
  );
}

/**
 * Bytes as text: a UTF-16 byte order mark is honoured, a UTF-8 one dropped, and NUL characters
 * removed (so UTF-16 text without a mark still reads). `strict` refuses bytes that are not UTF-8.
 */
export function decodeText(bytes: Uint8Array, strict: boolean): string | undefined {
  try {
    let text: string;
    if (at(bytes, 0, 0xff, 0xfe)) text = new TextDecoder('utf-16le').decode(bytes.subarray(2));
    else if (at(bytes, 0, 0xfe, 0xff)) text = new TextDecoder('utf-16be').decode(bytes.subarray(2));
    else text = new TextDecoder('utf-8', { fatal: strict, ignoreBOM: false }).decode(bytes);
    return text.replaceAll('\u0000', '');
  } catch {
    return undefined;
  }
}

/** Percent-decoding to bytes; a `%` not followed by two hex digits stays as it is. */
function percentDecode(payload: string): Uint8Array {
  const out: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < payload.length; i++) {
    const hex = payload.slice(i + 1, i + 3);
    if (payload[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      out.push(parseInt(hex, 16));
      i += 2;
      continue;
    }
    const code = payload.codePointAt(i) ?? 0;
    const char = String.fromCodePoint(code);
    out.push(...encoder.encode(char));
    i += char.length - 1;
  }
  return Uint8Array.from(out);
}

function base64Bytes(payload: string): Uint8Array | undefined {
  const compact = payload.replace(/\s+/g, '');
  if (!BASE64.test(compact)) return undefined;
  return new Uint8Array(Buffer.from(compact, 'base64'));
}

/**
 * Judges the bytes under every media type that names them (the part's and the data: URL's).
 * Bytes that are text are read as text whatever their label; only bytes that are not text and
 * carry an image, audio, video or PDF signature, under such a media type, pass as binary.
 */
function readBytes(bytes: Uint8Array, mediaTypes: readonly string[]): FileReading {
  const types = mediaTypes.filter((t) => t.length > 0);
  if (types.some(isTextualMediaType)) return { kind: 'text', text: decodeText(bytes, false) ?? '' };
  const text = decodeText(bytes, true);
  if (text !== undefined) return { kind: 'text', text };
  if (types.length > 0 && types.every(isBinaryMediaType) && hasBinaryMediaSignature(bytes)) return BINARY;
  return UNREADABLE;
}

function readDataUrl(raw: string, declared: readonly string[]): FileReading {
  const comma = raw.indexOf(',');
  if (comma < 0) return UNREADABLE;
  const params = raw.slice('data:'.length, comma).split(';').map((p) => p.trim());
  const base64 = params.length > 1 && params[params.length - 1]?.toLowerCase() === 'base64';
  const headerType = params.slice(0, base64 ? -1 : undefined).join(';');
  const payload = raw.slice(comma + 1);
  const bytes = base64 ? base64Bytes(payload) : percentDecode(payload);
  if (bytes === undefined) return UNREADABLE;
  // RFC 2397: a data: URL without a media type is text/plain.
  return readBytes(bytes, [...declared, headerType.length > 0 ? headerType : 'text/plain']);
}

/**
 * Reads one payload of a file or image part (`data`, `image` or `url`) under its declared media
 * types: bytes, a `data:` URL (base64 or percent-encoded) or bare base64 are decoded; an
 * http(s) URL is a reference (its origin is the asset guard's to judge); anything else is
 * unreadable.
 */
export function readFilePayload(value: unknown, declared: readonly string[]): FileReading {
  if (value instanceof Uint8Array) return readBytes(value, declared);
  if (value instanceof ArrayBuffer) return readBytes(new Uint8Array(value), declared);
  if (ArrayBuffer.isView(value)) return readBytes(new Uint8Array(value.buffer, value.byteOffset, value.byteLength), declared);
  const raw = value instanceof URL ? value.href : typeof value === 'string' ? value.trim() : undefined;
  if (raw === undefined) return UNREADABLE;
  if (/^data:/i.test(raw)) return readDataUrl(raw, declared);
  if (/^https?:\/\//i.test(raw)) return { kind: 'reference', url: raw };
  if (/^[a-z][a-z0-9+.-]*:/i.test(raw)) return UNREADABLE;
  const bytes = base64Bytes(raw);
  return bytes === undefined ? UNREADABLE : readBytes(bytes, declared);
}
