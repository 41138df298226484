//! [`Counts`]: per-class character counts of a text, in one left-to-right pass, that add up
//! over concatenation (see the module above for the invariant).

use std::ops::{Add, AddAssign};

/// Declares [`Counts`] and everything that lists its fields from one list of them: the
/// struct, [`COUNT_FIELDS`], [`Counts::FIELD_NAMES`], the field array and `+=`. A new field is
/// one more line here.
macro_rules! counts {
    ($($(#[$doc:meta])* $field:ident,)*) => {
        /// Per-class counts of a text. Additive: the counts of `a + b` are the counts of `a` plus the
        /// counts of `b`, up to one run start per run class at the seam (see the module docs).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counts {
            $($(#[$doc])* pub $field: u64,)*
        }

        /// The number of fields of [`Counts`].
        pub const COUNT_FIELDS: usize = [$(stringify!($field)),*].len();

        impl Counts {
            /// The names of the fields, in the order [`Counts::fields`] gives their values.
            pub const FIELD_NAMES: [&'static str; COUNT_FIELDS] = [$(stringify!($field)),*];

            /// Every field, mutably, in declaration order.
            fn fields_mut(&mut self) -> [&mut u64; COUNT_FIELDS] {
                [$(&mut self.$field),*]
            }
        }

        impl AddAssign for Counts {
            // Field by field rather than through `fields_mut`: it runs once per encoded row,
            // per batch of nodes sized, and per step of the trimmer's searches, and the array
            // of references did not optimize away.
            #[inline]
            fn add_assign(&mut self, other: Counts) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

counts! {
    /// ASCII letters.
    letters,
    /// ASCII digits.
    digits,
    /// Spaces and tabs.
    spaces,
    /// Line breaks (`\n`, `\r`).
    newlines,
    /// Other ASCII characters: punctuation, symbols, controls.
    punct,
    /// Starts of runs of ASCII letters, and of the letters after an escape (`\nWord`): the
    /// words of a text, written out or as a JSON string.
    word_starts,
    /// Starts of runs of ASCII digits.
    digit_runs,
    /// Starts of runs of spaces and tabs.
    space_runs,
    /// Starts of runs of line breaks.
    newline_runs,
    /// CJK ideographs, U+3400–U+9FFF.
    han,
    /// Hiragana and katakana, U+3040–U+30FF.
    kana,
    /// Hangul syllables and Jamo Extended-B, U+AC00–U+D7FF.
    hangul,
    /// CJK symbols and punctuation (U+3000–U+303F), half- and full-width forms
    /// (U+FF00–U+FFBF).
    cjk_punct,
    /// Of `han`, `kana`, `hangul` and `cjk_punct`: characters that `cl100k_base` encodes as two
    /// or more tokens when they stand alone.
    cjk_multi,
    /// Of `cjk_multi`: characters that `cl100k_base` encodes as three tokens alone.
    cjk_triple,
    /// Latin-1 Supplement, Latin Extended-A/B, IPA and spacing modifiers, U+0080–U+02FF.
    latin,
    /// Cyrillic, U+0400–U+04FF.
    cyrillic,
    /// Other characters of the Basic Multilingual Plane: Greek, Hebrew, Arabic, Indic scripts,
    /// typographic punctuation, symbols.
    other,
    /// Characters beyond the Basic Multilingual Plane (four UTF-8 bytes): emoji, rare scripts.
    astral,
    /// ASCII letters right after a backslash: the escapes of a JSON string (`\n`, `\t`,
    /// `\u…`), which the tokenizer reads as a token of their own glued to the next word.
    escapes,
    /// Upper-case ASCII letters right after a lower-case one (not an escape's): the seams of
    /// `camelCase` identifiers, where the tokenizer starts a new token inside a run of letters.
    case_changes,
    /// Runs of two or more spaces and tabs (counted at their second character): indentation
    /// and alignment, which the tokenizer takes as a token of their own, however long.
    indents,
}

impl Counts {
    /// The counts of `text`.
    pub fn of(text: &str) -> Counts {
        let mut counts = Counts::default();
        counts.add_str(text);
        counts
    }

    /// The counts of UTF-8 bytes (serialized JSON, say); see [`Counts::add_bytes`].
    pub(crate) fn of_bytes(bytes: &[u8]) -> Counts {
        let mut counts = Counts::default();
        counts.add_bytes(bytes);
        counts
    }

    /// Adds the counts of `text`.
    pub fn add_str(&mut self, text: &str) {
        self.add_bytes(text.as_bytes());
    }

    /// Adds the counts of UTF-8 bytes. Bytes that are not valid UTF-8 are skipped or counted
    /// as `other`; they never panic.
    ///
    /// Whole blocks of [`BLOCK`] bytes go through loops the compiler vectorizes, whatever their
    /// script: the ASCII classes of every byte at once (a byte of a wider character is in none),
    /// then each character whose first byte is in the block, found by a bit mask. The tail,
    /// shorter than a block, goes through the same pass when it is ASCII, else character by
    /// character.
    pub(crate) fn add_bytes(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while let Some(block) = bytes.get(i..i + BLOCK) {
            let ascii = block.iter().fold(0, |acc, &byte| acc | byte) < 0x80;
            let three_byte = if ascii { 0 } else { three_byte_leads(block) };
            if three_byte.count_ones() > MOSTLY_CJK {
                // Mostly CJK: the scalar loop, whose runs of three-byte characters are tight,
                // beats the block passes.
                i = self.add_scalar(bytes, i, i + BLOCK);
                continue;
            }
            let before = |back: usize| i.checked_sub(back).map_or(NOTHING, |at| bytes[at]);
            self.add_ascii_block([before(2), before(1)], block);
            if !ascii {
                self.add_wide_block(bytes, i, three_byte);
            }
            i += BLOCK;
        }
        let tail = &bytes[i..];
        if tail.len() >= PADDED_TAIL && tail.is_ascii() {
            // A long enough ASCII tail goes through the block pass too, padded with NUL
            // bytes: each is one `punct` that nothing else sees, taken off again. Shorter
            // ones (most JSON strings) cost less character by character than a block pass.
            let mut block = [0_u8; BLOCK];
            block[..tail.len()].copy_from_slice(tail);
            let before = |back: usize| i.checked_sub(back).map_or(NOTHING, |at| bytes[at]);
            self.add_ascii_block([before(2), before(1)], &block);
            self.punct -= (BLOCK - tail.len()) as u64;
            return;
        }
        while i < bytes.len() {
            i = self.add_scalar(bytes, i, (i + SCALAR_SPAN).min(bytes.len()));
        }
    }

    /// Counts the characters of two or more bytes whose first byte is in the block at `start`
    /// (their other bytes may lie in the next block). Two- and four-byte characters are told
    /// by their first byte alone, in a loop the compiler vectorizes; each three-byte one (bit
    /// `k` of `three_byte` set for byte `start + k`) is looked up. A character cut off by the
    /// end of `bytes` counts as what its first byte says.
    fn add_wide_block(&mut self, bytes: &[u8], start: usize, mut three_byte: u64) {
        let (mut latin, mut cyrillic, mut other, mut astral) = (0_u8, 0_u8, 0_u8, 0_u8);
        for &byte in &bytes[start..start + BLOCK] {
            let two_byte = u8::from(byte & 0xE0 == 0xC0);
            let is_latin = u8::from(byte.wrapping_sub(0xC2) < 10);
            let is_cyrillic = u8::from(byte.wrapping_sub(0xD0) < 4);
            latin += is_latin;
            cyrillic += is_cyrillic;
            other += two_byte & !(is_latin | is_cyrillic) & 1;
            astral += u8::from(byte & 0xF8 == 0xF0);
        }
        // At most one character per byte of the block: no 8-bit lane overflows.
        let mut wide_lanes = u64::from(other) << (8 * lane::OTHER);
        while three_byte != 0 {
            let at = start + three_byte.trailing_zeros() as usize;
            three_byte &= three_byte - 1;
            wide_lanes += match bytes.get(at..at + 3) {
                Some(&[lead, second, third]) => bmp_lanes(lead, second, third),
                _ => 1 << (8 * lane::OTHER),
            };
        }
        self.add_wide_lanes(wide_lanes);
        self.latin += u64::from(latin);
        self.cyrillic += u64::from(cyrillic);
        self.astral += u64::from(astral);
    }

    /// Adds the counts held in the 8-bit lanes of [`lane`].
    fn add_wide_lanes(&mut self, wide_lanes: u64) {
        let wide = |lane: u32| wide_lanes >> (8 * lane) & 0xFF;
        self.newline_runs += wide(lane::NEWLINE_RUNS);
        self.han += wide(lane::HAN);
        self.kana += wide(lane::KANA);
        self.hangul += wide(lane::HANGUL);
        self.cjk_punct += wide(lane::CJK_PUNCT);
        self.cjk_multi += wide(lane::CJK_MULTI);
        self.cjk_triple += wide(lane::CJK_TRIPLE);
        self.other += wide(lane::OTHER);
    }

    /// Counts the ASCII characters of one block; `previous` are the two bytes before it, in
    /// order. A byte of a wider character is in no ASCII class, so it ends every run, as the
    /// character it belongs to does. Written as plain loops over fixed-size arrays so that the
    /// compiler vectorizes them.
    fn add_ascii_block(&mut self, previous: [u8; 2], block: &[u8]) {
        // The block after the two bytes before it: each byte's two predecessors are the two
        // bytes before it in this one buffer.
        let mut window = [0_u8; BLOCK + 2];
        window[..2].copy_from_slice(&previous);
        window[2..].copy_from_slice(block);
        let (two_before, rest) = window.split_at(BLOCK);
        let before = &window[1..=BLOCK];
        let current = &window[2..];
        let _ = rest;
        let (mut letters, mut digits, mut spaces, mut newlines) = (0_u8, 0_u8, 0_u8, 0_u8);
        let (mut words, mut digit_runs, mut space_runs, mut newline_runs) =
            (0_u8, 0_u8, 0_u8, 0_u8);
        let (mut escapes, mut case_changes, mut indents) = (0_u8, 0_u8, 0_u8);
        let mut ascii = 0_u8;
        for ((&byte, &prior), &prior2) in current.iter().zip(before).zip(two_before) {
            ascii += u8::from(byte < 0x80);
            let (letter, digit) = (is_letter(byte), is_digit(byte));
            let (space, newline) = (is_space(byte), is_newline(byte));
            letters += letter;
            digits += digit;
            spaces += space;
            newlines += newline;
            // After an escape (`\n`), the letters that follow start a word of their own.
            let after_escape = is_letter(prior) & u8::from(prior2 == b'\\');
            words += letter & (!is_letter(prior) | after_escape) & 1;
            digit_runs += digit & !is_digit(prior) & 1;
            space_runs += space & !is_space(prior) & 1;
            newline_runs += newline & !is_newline(prior) & 1;
            escapes += letter & u8::from(prior == b'\\');
            case_changes += is_upper(byte) & is_lower(prior) & !after_escape & 1;
            indents += space & is_space(prior) & !is_space(prior2) & 1;
        }
        let classified = u64::from(letters) + u64::from(digits) + u64::from(spaces);
        let classified = classified + u64::from(newlines);
        self.letters += u64::from(letters);
        self.digits += u64::from(digits);
        self.spaces += u64::from(spaces);
        self.newlines += u64::from(newlines);
        self.punct += u64::from(ascii) - classified;
        self.word_starts += u64::from(words);
        self.digit_runs += u64::from(digit_runs);
        self.space_runs += u64::from(space_runs);
        self.newline_runs += u64::from(newline_runs);
        self.escapes += u64::from(escapes);
        self.case_changes += u64::from(case_changes);
        self.indents += u64::from(indents);
    }

    /// Counts characters from `start` until at least `until`, at most [`SCALAR_SPAN`] bytes
    /// on; returns where it stopped, which is a character boundary (or the end).
    ///
    /// The counters are 8-bit lanes of two `u64`s, added to by table look-ups rather than
    /// branches, which mixed scripts would mispredict; runs of ASCII and of three-byte
    /// characters get tight loops of their own. `SCALAR_SPAN` characters cannot overflow a lane.
    fn add_scalar(&mut self, bytes: &[u8], start: usize, until: usize) -> usize {
        debug_assert!(until - start <= SCALAR_SPAN);
        let mut i = start;
        // The run classes of the byte before: a non-ASCII byte starts every run afresh.
        let bits_before = |back: usize| match i.checked_sub(back).map(|before| bytes[before]) {
            Some(byte) if byte < 0x80 => ASCII_BITS[usize::from(byte)],
            _ => 0,
        };
        let (mut prior, mut prior2) = (bits_before(1), bits_before(2));
        let mut ascii_lanes = 0_u64;
        let mut wide_lanes = 0_u64;
        let mut astral = 0;
        let (mut escapes, mut case_changes, mut indents) = (0_u64, 0_u64, 0_u64);
        let mut escape_words = 0_u64;
        // Latin, Cyrillic and other two-byte characters, in the 16-bit lanes of
        // [`TWO_BYTE_LANES`].
        let mut two_byte_lanes = 0_u64;
        while i < until {
            let lead = bytes[i];
            if lead < 0x80 {
                while let Some(&byte) = bytes.get(i)
                    && byte < 0x80
                    && i < until
                {
                    let bits = ASCII_BITS[usize::from(byte)];
                    let starts = bits & !prior & 0x0F;
                    ascii_lanes += CLASS_LANE[usize::from(bits.trailing_zeros() as u8 & 7)];
                    ascii_lanes += RUN_LANE[usize::from(starts & 7)];
                    wide_lanes += u64::from(starts >> 3) << (8 * lane::NEWLINE_RUNS);
                    escapes += u64::from(bits & prior >> 5 & 1);
                    // After an escape (`\n`), the letters that follow start a word of their own.
                    let after_escape = prior & prior2 >> 5 & 1;
                    escape_words += u64::from(bits & after_escape);
                    case_changes += u64::from(bits >> 7 & prior >> 6 & !after_escape & 1);
                    indents += u64::from(bits >> 2 & prior >> 2 & !(prior2 >> 2) & 1);
                    prior2 = prior;
                    prior = bits;
                    i += 1;
                }
                continue;
            }
            (prior, prior2) = (0, 0);
            if lead & 0xF0 == 0xE0 && i + 3 <= bytes.len() {
                // CJK text is mostly three-byte characters.
                while let Some(&[lead, second, third]) = bytes.get(i..i + 3)
                    && lead & 0xF0 == 0xE0
                    && i < until
                {
                    wide_lanes += bmp_lanes(lead, second, third);
                    i += 3;
                }
                continue;
            }
            if lead & 0xE0 == 0xC0 && i + 2 <= bytes.len() {
                // Cyrillic, Greek, accented Latin: two-byte characters, counted by their first
                // byte alone.
                while let Some(&[lead, _]) = bytes.get(i..i + 2)
                    && lead & 0xE0 == 0xC0
                    && i < until
                {
                    two_byte_lanes += TWO_BYTE_LANES[usize::from(lead & 0x1F)];
                    i += 2;
                }
                continue;
            }
            // Four-byte characters, stray bytes, a truncated sequence at the end (two- and
            // three-byte characters that fit went through the loops above).
            let width = utf8_width(lead);
            if i + width > bytes.len() {
                // A truncated sequence at the end: count it once and stop.
                wide_lanes += 1 << (8 * lane::OTHER);
                i = bytes.len();
                break;
            }
            // A byte that cannot start a character is not counted.
            astral += u64::from(width == 4);
            i += width;
        }
        let ascii = |lane: u32| ascii_lanes >> (8 * lane) & 0xFF;
        self.letters += ascii(0);
        self.digits += ascii(1);
        self.spaces += ascii(2);
        self.newlines += ascii(3);
        self.punct += ascii(4);
        self.word_starts += ascii(5) + escape_words;
        self.digit_runs += ascii(6);
        self.space_runs += ascii(7);
        self.add_wide_lanes(wide_lanes);
        self.latin += two_byte_lanes & 0xFFFF;
        self.cyrillic += two_byte_lanes >> 16 & 0xFFFF;
        self.other += two_byte_lanes >> 32 & 0xFFFF;
        self.astral += astral;
        self.escapes += escapes;
        self.case_changes += case_changes;
        self.indents += indents;
        i
    }

    /// Characters (Unicode scalar values).
    pub fn chars(&self) -> u64 {
        self.ascii() + self.non_ascii()
    }

    /// ASCII characters.
    pub fn ascii(&self) -> u64 {
        self.letters + self.digits + self.spaces + self.newlines + self.punct
    }

    /// Non-ASCII characters.
    pub fn non_ascii(&self) -> u64 {
        self.cjk() + self.latin + self.cyrillic + self.other + self.astral
    }

    /// CJK characters: ideographs, kana, Hangul, CJK and full-width punctuation.
    pub fn cjk(&self) -> u64 {
        self.han + self.kana + self.hangul + self.cjk_punct
    }

    /// `self - other`, field by field, saturating at zero: the counts of a text with a part
    /// removed, when `other` is the counts of that part.
    #[must_use]
    pub fn saturating_sub(&self, other: &Counts) -> Counts {
        let mut result = *self;
        for (field, &value) in result.fields_mut().into_iter().zip(&other.fields()) {
            *field = field.saturating_sub(value);
        }
        result
    }

    /// Every field, in declaration order (the order of [`Counts::FIELD_NAMES`]): what a model
    /// over the counts is fitted to.
    pub fn fields(&self) -> [u64; COUNT_FIELDS] {
        let mut copy = *self;
        copy.fields_mut().map(|field| *field)
    }
}

/// A block with more three-byte characters than this is counted by the scalar path.
const MOSTLY_CJK: u32 = 12;

/// Bytes per block of the ASCII fast path. At most 255, so per-block counts fit a `u8`.
const BLOCK: usize = 64;

/// An ASCII tail at least this long is counted as a padded block: below it, the block
/// pass's fixed cost is more than the scalar loop's.
const PADDED_TAIL: usize = 24;

/// Bytes the scalar path takes on at a time. Below 256, so per-span counts fit a `u8` lane.
const SCALAR_SPAN: usize = 192;

/// Stands for "no byte" before the start of a text: not ASCII, so every run starts fresh.
const NOTHING: u8 = 0x80;

/// Bit `k` set when byte `k` of the block starts a three-byte character (`1110xxxx`).
fn three_byte_leads(block: &[u8]) -> u64 {
    let mut mask = 0_u64;
    for (index, word) in block.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // Bit 7 of each byte: set when its top four bits are `1110`.
        let leads = word & word << 1 & word << 2 & !(word << 3) & 0x8080_8080_8080_8080;
        // Gathers the eight bit-7s into one byte, byte 0's lowest.
        let bits = (leads >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= bits << (8 * index);
    }
    mask
}

// Branch-free class tests returning 0 or 1, so the block loop vectorizes.
fn is_letter(byte: u8) -> u8 {
    u8::from((byte | 0x20).wrapping_sub(b'a') < 26)
}

fn is_digit(byte: u8) -> u8 {
    u8::from(byte.wrapping_sub(b'0') < 10)
}

fn is_space(byte: u8) -> u8 {
    u8::from(byte == b' ') | u8::from(byte == b'\t')
}

fn is_newline(byte: u8) -> u8 {
    u8::from(byte == b'\n') | u8::from(byte == b'\r')
}

fn is_upper(byte: u8) -> u8 {
    u8::from(byte.wrapping_sub(b'A') < 26)
}

fn is_lower(byte: u8) -> u8 {
    u8::from(byte.wrapping_sub(b'a') < 26)
}

/// A lookup table built at compile time: `[$ty; $len]` whose entry at each index (`$index`, a
/// `usize`) is `$entry`. Const code has neither `for` nor closures, so this is the one place that
/// spells out the index loop.
macro_rules! const_table {
    ([$ty:ty; $len:expr], |$index:ident| $entry:expr) => {{
        let mut table: [$ty; $len] = [0; $len];
        let mut $index: usize = 0;
        while $index < $len {
            table[$index] = $entry;
            $index += 1;
        }
        table
    }};
}

/// Per ASCII byte: bit 0 letter, 1 digit, 2 space, 3 newline, 4 punctuation; and on top,
/// bit 5 backslash (punctuation), 6 lower-case and 7 upper-case letter (both letters), for
/// the counts that look at the previous character.
const ASCII_BITS: [u8; 128] = const_table!([u8; 128], |byte| {
    let b = byte as u8;
    if b.is_ascii_lowercase() {
        1 | 64
    } else if b.is_ascii_uppercase() {
        1 | 128
    } else if b == b'\\' {
        16 | 32
    } else if b.is_ascii_digit() {
        2
    } else if b == b' ' || b == b'\t' {
        4
    } else if b == b'\n' || b == b'\r' {
        8
    } else {
        16
    }
});

/// Per first byte of a two-byte character (its low five bits): one in the 16-bit lane of its
/// class, 0 `latin` (U+0080–U+02FF), 1 `cyrillic` (U+0400–U+04FF), 2 `other`.
const TWO_BYTE_LANES: [u64; 32] = const_table!([u64; 32], |low| match 0xC0 | low as u8 {
    0xC2..=0xCB => 1,
    0xD0..=0xD3 => 1 << 16,
    _ => 1 << 32,
});

/// Bytes in the UTF-8 sequence that `lead` starts; 1 for a byte that cannot start one.
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// The 8-bit lanes of `add_scalar`'s second accumulator. The first holds, in lanes 0 to 7:
/// letters, digits, spaces, newlines, punctuation, word starts, digit runs, space runs.
mod lane {
    pub(super) const NEWLINE_RUNS: u32 = 0;
    pub(super) const HAN: u32 = 1;
    pub(super) const KANA: u32 = 2;
    pub(super) const HANGUL: u32 = 3;
    pub(super) const CJK_PUNCT: u32 = 4;
    pub(super) const CJK_MULTI: u32 = 5;
    pub(super) const CJK_TRIPLE: u32 = 6;
    pub(super) const OTHER: u32 = 7;
}

/// The first accumulator's increment for an ASCII class, by bit position in [`ASCII_BITS`].
const CLASS_LANE: [u64; 8] = [1, 1 << 8, 1 << 16, 1 << 24, 1 << 32, 0, 0, 0];

/// The first accumulator's increment for a run start of letters (1), digits (2) or spaces (4).
const RUN_LANE: [u64; 8] = [0, 1 << 40, 1 << 48, 0, 1 << 56, 0, 0, 0];

/// The second accumulator's increment for the extra tokens of a CJK character alone.
const EXTRA_LANES: [u64; 4] = [
    0,
    1 << (8 * lane::CJK_MULTI),
    1 << (8 * lane::CJK_MULTI) | 1 << (8 * lane::CJK_TRIPLE),
    0,
];

/// The lane of a character `U+0800`–`U+FFFF`.
const fn bmp_lane(code: u32) -> u32 {
    match code {
        0x3000..=0x303F | 0xFF00..=0xFFBF => lane::CJK_PUNCT,
        0x3040..=0x30FF => lane::KANA,
        0x3400..=0x9FFF => lane::HAN,
        0xAC00..=0xD7FF => lane::HANGUL,
        _ => lane::OTHER,
    }
}

/// Per character `U+0000`–`U+FFFF`: its lane times four plus the extra tokens
/// `cl100k_base` needs for it alone (0 where the cost table does not cover it). One load per
/// character; 64 KiB, built at compile time.
static BMP_KINDS: [u8; 0x10000] = const_table!([u8; 0x10000], |code| {
    let code = code as u32;
    let extra = match cjk_cost::index(code) {
        Some(index) => cjk_cost::extra_tokens(index),
        None => 0,
    };
    (bmp_lane(code) << 2) as u8 | extra
});

/// The second accumulator's increments for each entry of [`BMP_KINDS`].
const KIND_LANES: [u64; 32] = const_table!([u64; 32], |kind| {
    (1 << (8 * (kind >> 2))) + EXTRA_LANES[kind & 3]
});

/// The second accumulator's increments for the three-byte character `lead second third`: its
/// lane, and for CJK characters the extra tokens `cl100k_base` needs for it alone.
fn bmp_lanes(lead: u8, second: u8, third: u8) -> u64 {
    let code = usize::from(lead & 0x0F) << 12
        | usize::from(second & 0x3F) << 6
        | usize::from(third & 0x3F);
    KIND_LANES[usize::from(BMP_KINDS[code] & 31)]
}

/// What `cl100k_base` makes of each CJK character standing alone, from
/// `tokens/cl100k_cjk.bin`: two bits a character, the tokens minus one. Written by
/// `cargo run -p xtask --features exact -- cjk-costs`; a test with the
/// `exact` feature checks it against the encoder.
mod cjk_cost {
    /// The ranges covered, in table order: kana and CJK punctuation, ideographs, Hangul
    /// syllables, full-width forms. `U+3100`–`U+33FF` is not covered.
    pub(super) const RANGES: [(u32, u32); 4] = [
        (0x3000, 0x3100),
        (0x3400, 0xA000),
        (0xAC00, 0xD800),
        (0xFF00, 0xFFC0),
    ];

    /// Characters covered by [`RANGES`].
    pub(super) const LEN: usize = {
        let mut len = 0;
        let mut range = 0;
        while range < RANGES.len() {
            len += (RANGES[range].1 - RANGES[range].0) as usize;
            range += 1;
        }
        len
    };

    const TABLE: &[u8; LEN / 4] = include_bytes!("cl100k_cjk.bin");

    /// The position of `code` in the table, if it is covered.
    pub(super) const fn index(code: u32) -> Option<usize> {
        let mut offset = 0;
        let mut range = 0;
        while range < RANGES.len() {
            let (start, end) = RANGES[range];
            if start <= code && code < end {
                return Some(offset + (code - start) as usize);
            }
            offset += (end - start) as usize;
            range += 1;
        }
        None
    }

    /// Tokens beyond the first that `cl100k_base` needs for the character at `index`: 0, 1
    /// or 2.
    pub(super) const fn extra_tokens(index: usize) -> u8 {
        TABLE[index / 4] >> (index % 4 * 2) & 3
    }
}

impl Add for Counts {
    type Output = Counts;

    fn add(mut self, other: Counts) -> Counts {
        self += other;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimator;
    #[cfg(feature = "exact")]
    use crate::tokens::ExactCounter;
    use crate::tokens::weights;

    /// The counts by the obvious per-character definition, to check the fast paths against.
    fn reference(text: &str) -> Counts {
        let mut counts = Counts::default();
        let mut previous: Option<char> = None;
        let mut two_before: Option<char> = None;
        for c in text.chars() {
            let starts = |class: fn(char) -> bool| class(c) && !previous.is_some_and(class);
            let letter = |c: char| c.is_ascii_alphabetic();
            let digit = |c: char| c.is_ascii_digit();
            let space = |c: char| c == ' ' || c == '\t';
            let newline = |c: char| c == '\n' || c == '\r';
            if letter(c) {
                let after_escape = previous.is_some_and(letter) && two_before == Some('\\');
                counts.letters += 1;
                counts.word_starts += u64::from(starts(letter) || after_escape);
                counts.escapes += u64::from(previous == Some('\\'));
                counts.case_changes += u64::from(
                    c.is_ascii_uppercase()
                        && previous.is_some_and(|p| p.is_ascii_lowercase())
                        && !after_escape,
                );
            } else if digit(c) {
                counts.digits += 1;
                counts.digit_runs += u64::from(starts(digit));
            } else if space(c) {
                counts.spaces += 1;
                counts.space_runs += u64::from(starts(space));
                counts.indents +=
                    u64::from(previous.is_some_and(space) && !two_before.is_some_and(space));
            } else if newline(c) {
                counts.newlines += 1;
                counts.newline_runs += u64::from(starts(newline));
            } else if c.is_ascii() {
                counts.punct += 1;
            } else {
                let code = u32::from(c);
                match code {
                    0x3000..=0x303F | 0xFF00..=0xFFBF => counts.cjk_punct += 1,
                    0x3040..=0x30FF => counts.kana += 1,
                    0x3400..=0x9FFF => counts.han += 1,
                    0xAC00..=0xD7FF => counts.hangul += 1,
                    0x80..=0x2FF => counts.latin += 1,
                    0x400..=0x4FF => counts.cyrillic += 1,
                    0x10000.. => counts.astral += 1,
                    _ => counts.other += 1,
                }
                if let Some(index) = cjk_cost::index(code) {
                    let extra = cjk_cost::extra_tokens(index);
                    counts.cjk_multi += u64::from(extra >= 1);
                    counts.cjk_triple += u64::from(extra >= 2);
                }
            }
            two_before = previous;
            previous = Some(c);
        }
        counts
    }

    const MIXED: &str = "Hi 42,\n漢字é🙂 fn mainLoop(\"a\\nb\") {\n    let x_1 = \"ü\";\t\t// ок\r\n}\n\
                         カタカナ、ひらがな。한국어 ＡＢＣ（全角） — “quoted” 12345 ok";

    #[test]
    fn counts_classify_and_add_up() {
        let counts = Counts::of("Hi 42,\n漢字é🙂");
        assert_eq!(counts.letters, 2);
        assert_eq!(counts.digits, 2);
        assert_eq!(counts.spaces, 1);
        assert_eq!(counts.newlines, 1);
        assert_eq!(counts.punct, 1);
        assert_eq!(counts.han, 2);
        assert_eq!(counts.latin, 1);
        assert_eq!(counts.astral, 1);
        assert_eq!(counts.word_starts, 1);
        assert_eq!(counts.digit_runs, 1);
        assert_eq!(counts.space_runs, 1);
        assert_eq!(counts.newline_runs, 1);
        assert_eq!(counts.chars(), "Hi 42,\n漢字é🙂".chars().count() as u64);
        assert_eq!(Counts::of("ab") + Counts::of("12"), Counts::of("ab12"));
    }

    #[test]
    fn run_counts_count_starts_of_runs() {
        let counts = Counts::of("ab  cd\n\n12 345\r\n\tx");
        assert_eq!(counts.word_starts, 3);
        assert_eq!(counts.digit_runs, 2);
        assert_eq!(counts.space_runs, 3);
        assert_eq!(counts.newline_runs, 2);
        // Non-ASCII characters end runs too.
        let counts = Counts::of("ab漢cd12é34");
        assert_eq!(counts.word_starts, 2);
        assert_eq!(counts.digit_runs, 2);
    }

    #[test]
    fn scripts_are_told_apart() {
        let counts = Counts::of("漢、カナ한（Ж—ß😀");
        assert_eq!(counts.han, 1);
        assert_eq!(counts.cjk_punct, 2);
        assert_eq!(counts.kana, 2);
        assert_eq!(counts.hangul, 1);
        assert_eq!(counts.cyrillic, 1);
        assert_eq!(counts.other, 1);
        assert_eq!(counts.latin, 1);
        assert_eq!(counts.astral, 1);
        assert_eq!(counts.cjk(), 6);
        assert_eq!(counts.non_ascii(), 10);
    }

    #[test]
    fn cjk_costs_follow_cl100k() {
        // "的" and "の" are single tokens in cl100k_base; "鑫" takes three; "읽" two.
        assert_eq!(Counts::of("的の").cjk_multi, 0);
        let rare = Counts::of("鑫");
        assert_eq!((rare.cjk_multi, rare.cjk_triple), (1, 1));
        let hangul = Counts::of("읽");
        assert_eq!((hangul.cjk_multi, hangul.cjk_triple), (1, 0));
    }

    #[test]
    fn fast_paths_match_the_reference() {
        // Long enough for whole blocks, with every seam position between the paths.
        let mut text = String::new();
        for round in 0..40 {
            text.push_str(&"word 12 ".repeat(round % 11));
            text.push_str(MIXED);
            text.push_str(&"x".repeat(round));
        }
        for start in 0..70 {
            let slice = &text[text.floor_char_boundary(start)..];
            assert_eq!(Counts::of(slice), reference(slice), "from byte {start}");
        }
        assert_eq!(Counts::of(MIXED), reference(MIXED));
    }

    #[test]
    fn sums_differ_only_in_runs_at_the_seam() {
        let text = "let wordOne = \"a\\nb\";  \n\n漢字 and   more words 123 ";
        let whole = Counts::of(text);
        for cut in (0..=text.len()).filter(|&cut| text.is_char_boundary(cut)) {
            let sum = Counts::of(&text[..cut]) + Counts::of(&text[cut..]);
            // Only the counts that look back differ, by at most one each, either way: a cut
            // can start a run at the seam, or split a pair (an escape, a case change, an
            // indent, the word after an escape).
            for difference in [sum.saturating_sub(&whole), whole.saturating_sub(&sum)] {
                let looking_back = Counts {
                    word_starts: 0,
                    digit_runs: 0,
                    space_runs: 0,
                    newline_runs: 0,
                    escapes: 0,
                    case_changes: 0,
                    indents: 0,
                    ..difference
                };
                assert_eq!(looking_back, Counts::default(), "cut {cut}");
                assert!(
                    difference.fields().iter().all(|&count| count <= 1),
                    "cut {cut}: {difference:?}"
                );
            }
        }
    }

    #[test]
    fn json_syntax_never_starts_a_run() {
        // The sizer adds quotes, brackets, commas and colons as bare `punct`.
        let parts = [
            "{", "\"", "key 1", "\"", ":", "[", "12", ",", "true", "]", "}",
        ];
        let sum = parts
            .iter()
            .fold(Counts::default(), |acc, part| acc + Counts::of(part));
        assert_eq!(sum, Counts::of(&parts.concat()));
    }

    #[cfg(feature = "exact")]
    #[test]
    fn cjk_cost_table_matches_cl100k() {
        let counter = ExactCounter::cl100k();
        let mut index = 0;
        for (start, end) in cjk_cost::RANGES {
            for code in start..end {
                let c = char::from_u32(code).expect("no surrogates below U+D800");
                let tokens = counter.count(c.encode_utf8(&mut [0; 4]));
                assert_eq!(cjk_cost::index(code), Some(index));
                let expected = (tokens.clamp(1, 3) - 1) as u8;
                assert_eq!(cjk_cost::extra_tokens(index), expected, "U+{code:04X}");
                index += 1;
            }
        }
        assert_eq!(index, cjk_cost::LEN);
    }

    #[test]
    fn invalid_utf8_does_not_panic() {
        let mut counts = Counts::default();
        counts.add_bytes(&[b'a', 0xE6, 0xBC]);
        counts.add_bytes(&[0xBC, 0xFF, b'b', 0xF0]);
        assert_eq!(counts.letters, 2);
    }

    #[test]
    fn saturating_sub_undoes_add() {
        let a = Counts::of(MIXED);
        let b = Counts::of("漢字 abc 12");
        assert_eq!((a + b).saturating_sub(&b), a);
        assert_eq!(b.saturating_sub(&(a + b)), Counts::default());
    }

    #[test]
    fn script_aware_rule() {
        assert_eq!(Estimator::ScriptAware.estimate("abcdefgh"), 2);
        assert_eq!(Estimator::ScriptAware.estimate("漢字"), 2);
        assert_eq!(Estimator::CharsDiv4.estimate("漢字漢字漢"), 2);
    }

    #[test]
    fn calibrated_rule() {
        assert_eq!(Estimator::Calibrated.estimate(""), 0);
        // One word of five letters: five letters and a word start, rounded up.
        let field = |name: &str| {
            let index = Counts::FIELD_NAMES.iter().position(|field| *field == name);
            weights::CL100K[index.expect("a field")]
        };
        let hello = (5 * field("letters") + field("word_starts")).div_ceil(1000);
        assert_eq!(Estimator::Calibrated.estimate("hello"), hello);
        // An escape in a JSON string costs more than the letter it is written with.
        assert!(Estimator::Calibrated.estimate(r"a\nb") > Estimator::Calibrated.estimate("anb"));
        // Adding text never lowers the estimate.
        let mut previous = 0;
        for end in (0..=MIXED.len()).filter(|&end| MIXED.is_char_boundary(end)) {
            let estimate = Estimator::Calibrated.estimate(&MIXED[..end]);
            assert!(estimate >= previous, "{:?}", &MIXED[..end]);
            previous = estimate;
        }
    }

    #[test]
    fn normalized_size_is_at_least_chars() {
        let counts = Counts::of("漢字");
        assert_eq!(Estimator::ScriptAware.normalized_size(&counts), 8);
        let counts = Counts::of("abcd");
        assert_eq!(Estimator::ScriptAware.normalized_size(&counts), 4);
    }
}
