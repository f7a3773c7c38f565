// The text content policies match: a normalized view of what the model wrote, so that a deny
// pattern or a detector written for plain letters also meets look-alikes, and so that hold-back
// windows count what a policy sees rather than UTF-16 code units of the raw text (a phrase in
// mathematical letters is twice as long in code units; zero-width characters between its letters
// make it longer still).
//
// Each code point of the source becomes zero or more characters of the view, in order:
//   1. compatibility decomposition (NFKD): full-width forms, mathematical alphanumerics, circled,
//      squared and super/subscript letters, ligatures (`ﬁ` → `fi`) and compatibility spaces fold
//      to their plain forms, and accented letters split into a base letter and marks;
//   2. every combining mark (\p{M}, including variation selectors), every format character
//      (\p{Cf}: zero-width spaces and joiners, soft hyphens, bidirectional controls, the BOM) and
//      every default-ignorable code point (tag characters, assigned or not) is dropped; blanks
//      that are not whitespace (U+2800, U+3164, U+FFA0) read as spaces;
//   3. confusables: letters of other scripts drawn like Latin ones (Cyrillic `а`, Greek `ο` and the
//      lunate sigma, Armenian, Cherokee and Lisu look-alikes, Latin small capitals, negative
//      squared letters, regional indicators) become that Latin letter (CONFUSABLES lists them);
//   4. any run of whitespace becomes one space.
// Case is kept: a policy that ignores case says so itself. Digits are not folded into letters.
// A view index maps back to the source offset of the code point that produced it, so hold-back
// releases source text only up to what every policy has judged in the view.

/** Latin letters and characters that other scripts draw alike (beyond what NFKD already folds). */
const CONFUSABLES: Readonly<Record<string, string>> = Object.freeze({
  // Cyrillic
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x',
  ѕ: 's', і: 'i', ї: 'i', ј: 'j', ԁ: 'd', һ: 'h', ӏ: 'l', ԛ: 'q', ԝ: 'w', ɡ: 'g', ү: 'y', ո: 'n',
  А: 'A', В: 'B', Е: 'E', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', Х: 'X', У: 'Y',
  Ѕ: 'S', І: 'I', Ј: 'J', Ԁ: 'D', Һ: 'H', Ӏ: 'I', Ԛ: 'Q', Ԝ: 'W', Ү: 'Y',
  // Greek
  α: 'a', β: 'b', ε: 'e', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', γ: 'y', ω: 'w',
  Α: 'A', Β: 'B', Ε: 'E', Ζ: 'Z', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Υ: 'Y', Χ: 'X',
  // Armenian
  օ: 'o', ս: 'u', ց: 'g', հ: 'h', ռ: 'n', ք: 'p',
  // Latin variants without a compatibility decomposition
  ı: 'i', ȷ: 'j', ɑ: 'a', ɩ: 'i', ʋ: 'u', ɒ: 'a', ꞵ: 'b', ſ: 's',
  ᴀ: 'a', ʙ: 'b', ᴄ: 'c', ᴅ: 'd', ᴇ: 'e', ꜰ: 'f', ɢ: 'g', ʜ: 'h', ɪ: 'i', ᴊ: 'j', ᴋ: 'k', ʟ: 'l', ᴍ: 'm',
  ɴ: 'n', ᴏ: 'o', ᴘ: 'p', ʀ: 'r', ꜱ: 's', ᴛ: 't', ᴜ: 'u', ᴠ: 'v', ᴡ: 'w', ʏ: 'y', ᴢ: 'z',
  // Greek lunate sigma, drawn as c (NFKD makes it a sigma)
  ϲ: 'c', Ϲ: 'C',
  // Cherokee capitals drawn like Latin ones (small letters fold to these first)
  Ꭺ: 'A', Ᏼ: 'B', Ꮯ: 'C', Ꭰ: 'D', Ꭼ: 'E', Ꮐ: 'G', Ꮋ: 'H', Ꭵ: 'i', Ꭻ: 'J', Ꮶ: 'K', Ꮮ: 'L', Ꮇ: 'M', Ꮎ: 'O', Ꮲ: 'P',
  Ꭱ: 'R', Ꮪ: 'S', Ꭲ: 'T', Ꮩ: 'V', Ꮃ: 'W', Ꭹ: 'y', Ꮓ: 'Z',
  // Lisu capitals drawn like Latin ones
  ꓮ: 'A', ꓐ: 'B', ꓚ: 'C', ꓓ: 'D', ꓰ: 'E', ꓝ: 'F', ꓖ: 'G', ꓧ: 'H', ꓲ: 'I', ꓙ: 'J', ꓗ: 'K', ꓡ: 'L', ꓟ: 'M',
  ꓠ: 'N', ꓳ: 'O', ꓑ: 'P', ꓣ: 'R', ꓢ: 'S', ꓔ: 'T', ꓴ: 'U', ꓦ: 'V', ꓪ: 'W', ꓫ: 'X', ꓬ: 'Y', ꓜ: 'Z',
});

// Cherokee small letters: drawn like their capitals.
function cherokeeCapital(code: number): string | undefined {
  return code >= 0xab70 && code <= 0xabbf ? String.fromCharCode(code).toUpperCase() : undefined;
}

// Letters in blocks of 26 with no decomposition: negative squared and negative circled capitals,
// and the regional indicator symbols (flags are pairs of them).
const LETTER_BLOCKS: readonly (readonly [number, string])[] = [
  [0x1f130 + 0x40, 'A'], // 🅰 negative squared
  [0x1f150, 'A'], // 🅐 negative circled
  [0x1f1e6, 'a'], // 🇦 regional indicator
];

// Drawn as nothing: marks, format characters and every default-ignorable code point (even an
// unassigned one, which a later font may render as nothing).
const DROPPED = /^[\p{M}\p{Cf}\p{Default_Ignorable_Code_Point}]$/u;
// Whitespace, and blanks that are not whitespace (the braille blank, the Hangul fillers that take
// a width): each reads as a space.
const SPACE = /^[\s\u2800\u3164\uFFA0]$/u;
// Printable ASCII words, each followed by one space or the end: its own view (the common case).
// Each run must end at a space or the end, so a failing match cannot backtrack into a run.
const PLAIN = /^ ?(?:[\x21-\x7E]+(?: |$))*$/;

function fromBlock(code: number): string | undefined {
  for (const [start, first] of LETTER_BLOCKS) {
    if (code >= start && code < start + 26) return String.fromCharCode(first.charCodeAt(0) + code - start);
  }
  return undefined;
}

/** The view of one code point: '' (dropped), ' ' (whitespace, before collapsing) or folded letters. */
function foldCodePoint(cp: string): string {
  const code = cp.codePointAt(0)!;
  if (code >= 0x21 && code <= 0x7e) return cp;
  // The BOM is whitespace to a RegExp but drawn as nothing.
  if (code === 0xfeff) return '';
  if (SPACE.test(cp)) return ' ';
  const block = fromBlock(code);
  if (block !== undefined) return block;
  // A look-alike whose decomposition is another letter (the lunate sigma decomposes to a sigma).
  const direct = CONFUSABLES[cp];
  if (direct !== undefined) return direct;
  let out = '';
  for (const part of cp.normalize('NFKD')) {
    if (DROPPED.test(part)) continue;
    if (SPACE.test(part)) {
      out += ' ';
      continue;
    }
    const capital = cherokeeCapital(part.charCodeAt(0));
    out += CONFUSABLES[capital ?? part] ?? fromBlock(part.codePointAt(0)!) ?? capital ?? part;
  }
  return out;
}

/** Text the hold-back arithmetic reads by absolute index: a string, or the kept end of a growing one. */
export interface TextLike {
  readonly length: number;
  charCodeAt(index: number): number;
  slice(from: number): string;
}

// The kept end of a growing text: indexes are absolute; what was dropped is kept in parts and
// joined only when the whole is asked for (once, at the end of a block). A stream appends a few
// characters per chunk and reads near the end: one string grown by `+=` and sliced per chunk is
// flattened whole each time, which is quadratic in the length of a block.
class Tail implements TextLike {
  private readonly head: string[] = [];
  private kept = '';
  private base = 0;
  private whole: string | undefined;

  get length(): number {
    return this.base + this.kept.length;
  }

  get start(): number {
    return this.base;
  }

  append(text: string): void {
    if (text.length === 0) return;
    this.kept += text;
    this.whole = undefined;
  }

  // Before the kept end reads as a space: nothing is dropped inside a token still being judged.
  charCodeAt(index: number): number {
    return index < this.base ? 32 : this.kept.charCodeAt(index - this.base);
  }

  slice(from: number, to?: number): string {
    return this.kept.slice(Math.max(0, from - this.base), to === undefined ? undefined : to - this.base);
  }

  all(): string {
    if (this.whole === undefined) this.whole = this.head.length === 0 ? this.kept : this.head.join('') + this.kept;
    return this.whole;
  }

  /** Drops what comes before `index` from the kept end. */
  dropBefore(index: number): void {
    const cut = index - this.base;
    if (cut <= 0) return;
    this.head.push(this.kept.slice(0, cut));
    this.kept = this.kept.slice(cut);
    this.base = index;
  }
}

/**
 * A growing source text and its view. Appending a delta folds only the delta; while the source is
 * printable ASCII with single spaces, the view is the source itself and no offsets are kept.
 */
export class NormalizedText {
  private readonly sourceTail = new Tail();
  private readonly viewTail = new Tail();
  /** View index - offsetsBase → source offset of the code point that produced it; undefined while the view is the source. */
  private offsets: number[] | undefined;
  private offsetsBase = 0;
  /** A trailing high surrogate waits for the delta that brings its pair. */
  private pending = '';
  private endsWithSpace = false;

  /** The whole source so far. */
  get source(): string {
    return this.sourceTail.all();
  }

  /** The whole view so far. */
  get text(): string {
    return this.viewTail.all();
  }

  /** True while the view is the source itself (printable ASCII with single spaces so far). */
  get same(): boolean {
    return this.offsets === undefined && this.pending.length === 0;
  }

  /** The view, read by absolute index near its end. */
  get view(): TextLike {
    return this.viewTail;
  }

  /** The source, read by absolute index near its end. */
  get written(): TextLike {
    return this.sourceTail;
  }

  append(delta: string): this {
    if (delta.length === 0) return this;
    const from = this.sourceTail.length - this.pending.length;
    this.sourceTail.append(delta);
    if (this.offsets === undefined && this.pending.length === 0 && isPlain(delta, this.endsWithSpace)) {
      this.viewTail.append(delta);
      this.endsWithSpace = delta.charCodeAt(delta.length - 1) === 32;
      return this;
    }
    if (this.offsets === undefined) {
      this.offsetsBase = this.viewTail.start;
      this.offsets = identity(this.offsetsBase, this.viewTail.length);
    }
    const offsets = this.offsets;
    const source = this.pending + delta;
    let out = '';
    let i = 0;
    while (i < source.length) {
      const code = source.charCodeAt(i);
      const width = code >= 0xd800 && code <= 0xdbff ? 2 : 1;
      if (width === 2 && i + 1 >= source.length) break;
      for (const ch of foldCodePoint(source.slice(i, i + width))) {
        if (ch === ' ') {
          if (this.endsWithSpace) continue;
          this.endsWithSpace = true;
        } else {
          this.endsWithSpace = false;
        }
        // A folded letter may take two code units (a letter outside the BMP kept as is): map both.
        for (let unit = 0; unit < ch.length; unit++) offsets.push(from + i);
        out += ch;
      }
      i += width;
    }
    this.pending = source.slice(i);
    this.viewTail.append(out);
    return this;
  }

  /** The source offset where the view character at `viewIndex` starts; the folded source length at the view's end. */
  sourceOffset(viewIndex: number): number {
    if (viewIndex >= this.viewTail.length) return this.sourceTail.length - this.pending.length;
    if (viewIndex <= 0) return 0;
    return this.offsets === undefined ? viewIndex : this.offsets[viewIndex - this.offsetsBase]!;
  }

  /** The source between two offsets (`from` no earlier than what is kept). */
  sourceBetween(from: number, to: number): string {
    return this.sourceTail.slice(from, to);
  }

  /**
   * Keeps only the view from `viewIndex` and the source from `sourceIndex` at hand (both at most
   * what has been judged and released); the wholes stay available for the end of the block.
   */
  keepFrom(viewIndex: number, sourceIndex: number): void {
    if (this.offsets !== undefined && viewIndex > this.offsetsBase) {
      this.offsets = this.offsets.slice(viewIndex - this.offsetsBase);
      this.offsetsBase = viewIndex;
    }
    this.viewTail.dropBefore(viewIndex);
    this.sourceTail.dropBefore(sourceIndex);
  }

  /** Where the kept view starts. */
  get keptFrom(): number {
    return this.viewTail.start;
  }
}

// Single spaces between printable ASCII runs only: a tab, a newline or two spaces in a row fold.
function isPlain(delta: string, afterSpace: boolean): boolean {
  if (afterSpace && delta.charCodeAt(0) === 32) return false;
  return PLAIN.test(delta);
}

function identity(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++) out.push(i);
  return out;
}

/** The view of a whole text. */
export function normalizedView(text: string): string {
  return new NormalizedText().append(text).text;
}
