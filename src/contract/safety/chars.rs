//! The characters a reader of a description does not see: which ones the rules flag, how an
//! excerpt shows them, and the text with them taken out that the phrase rules read.

/// Why a character is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hidden {
    /// Invisible: tag characters, zero-width characters, invisible operators, fillers.
    Invisible(&'static str),
    /// Changes the direction the text after it is shown in (Trojan Source).
    Bidi(&'static str),
}

/// The name of a character that renders as nothing, whether or not it is flagged; `None` for
/// a visible one.
pub(super) fn invisible_name(c: char) -> Option<&'static str> {
    Some(match c as u32 {
        0xE0000..=0xE007F => "tag character",
        0x200B => "zero-width space",
        0x200C => "zero-width non-joiner",
        0x200D => "zero-width joiner",
        0x2060 => "word joiner",
        0xFEFF => "zero-width no-break space",
        0x00AD => "soft hyphen",
        0x180E => "Mongolian vowel separator",
        0x2061..=0x2064 => "invisible operator",
        0x206A..=0x206F => "deprecated format character",
        0xFFF9..=0xFFFB => "interlinear annotation character",
        0x1D173..=0x1D17A => "musical format character",
        0x115F | 0x1160 | 0x3164 | 0xFFA0 => "Hangul filler",
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => "variation selector",
        0x202A..=0x202E => "bidi embedding or override",
        0x2066..=0x2069 => "bidi isolate",
        0x200E | 0x200F | 0x061C => "directional mark",
        _ => return None,
    })
}

/// Whether `text` has right-to-left letters (Hebrew, Arabic and their presentation forms):
/// then a directional mark is how such text is written, not a trick.
fn has_rtl(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c as u32, 0x0590..=0x05FF | 0x0600..=0x06FF | 0x0750..=0x077F
            | 0x08A0..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFC)
    })
}

/// The flagged characters of `text`, each with its char offset. Left alone, because ordinary
/// text has them: a byte-order mark at the very start, a soft hyphen, a zero-width (non-)joiner
/// beside a non-ASCII character (emoji sequences, Persian, Indic scripts), one variation
/// selector after a non-ASCII character (emoji presentation: `⚠️`), a directional mark in text
/// with right-to-left letters.
pub(super) fn flagged(text: &str) -> Vec<(usize, char, Hidden)> {
    let chars: Vec<char> = text.chars().collect();
    let rtl = has_rtl(text);
    let mut out = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let Some(name) = invisible_name(c) else {
            continue;
        };
        let beside_non_ascii =
            prev.is_some_and(|p| !p.is_ascii()) || next.is_some_and(|n| !n.is_ascii());
        let hidden = match c as u32 {
            0xFEFF if i == 0 => None,
            0x00AD => None,
            0x200C | 0x200D if beside_non_ascii => None,
            0xFE00..=0xFE0F
                if prev.is_some_and(|p| !p.is_ascii() && invisible_name(p).is_none()) =>
            {
                None
            }
            0x200E | 0x200F | 0x061C if rtl => None,
            0x202A..=0x202E | 0x2066..=0x2069 | 0x200E | 0x200F | 0x061C => {
                Some(Hidden::Bidi(name))
            }
            _ => Some(Hidden::Invisible(name)),
        };
        if let Some(hidden) = hidden {
            out.push((i, c, hidden));
        }
    }
    out
}

/// What a run of tag characters spells: U+E0020–E007E mirror ASCII, so a tag run is text
/// only a model reads.
pub(super) fn tag_text(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c as u32 {
            0xE0020..=0xE007E => char::from_u32(c as u32 - 0xE0000),
            _ => None,
        })
        .collect()
}

/// `c` as an excerpt shows it: an invisible character as `<U+XXXX>`, a line break or tab as a
/// space, anything else as itself.
pub(super) fn shown(c: char, out: &mut String) {
    if invisible_name(c).is_some() {
        out.push_str(&format!("<U+{:04X}>", c as u32));
    } else if c.is_control() {
        out.push(' ');
    } else {
        out.push(c);
    }
}

/// `text` without its invisible characters, and for each char of the result its char offset
/// in `text`: the phrase rules read what the model reads (`ig<U+200B>nore` is `ignore`) and
/// report offsets into the original.
pub(super) fn visible(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        if invisible_name(c).is_none() {
            out.push(c);
            map.push(i);
        }
    }
    (out, map)
}

/// Cyrillic and Greek letters drawn like Latin ones, and the Latin letter each is read as (the
/// look-alikes of Unicode's confusables list that attacks use to slip a phrase past a filter).
const LOOKALIKES: &[(char, char)] = &[
    ('а', 'a'),
    ('в', 'b'),
    ('е', 'e'),
    ('о', 'o'),
    ('р', 'p'),
    ('с', 'c'),
    ('у', 'y'),
    ('х', 'x'),
    ('і', 'i'),
    ('ј', 'j'),
    ('ѕ', 's'),
    ('ԁ', 'd'),
    ('һ', 'h'),
    ('ԛ', 'q'),
    ('ԝ', 'w'),
    ('ӏ', 'l'),
    ('А', 'A'),
    ('В', 'B'),
    ('Е', 'E'),
    ('К', 'K'),
    ('М', 'M'),
    ('Н', 'H'),
    ('О', 'O'),
    ('Р', 'P'),
    ('С', 'C'),
    ('Т', 'T'),
    ('Х', 'X'),
    ('І', 'I'),
    ('Ј', 'J'),
    ('Ѕ', 'S'),
    ('ο', 'o'),
    ('α', 'a'),
    ('ι', 'i'),
    ('κ', 'k'),
    ('ν', 'v'),
    ('ρ', 'p'),
    ('υ', 'u'),
    ('χ', 'x'),
    ('Α', 'A'),
    ('Β', 'B'),
    ('Ε', 'E'),
    ('Ζ', 'Z'),
    ('Η', 'H'),
    ('Ι', 'I'),
    ('Κ', 'K'),
    ('Μ', 'M'),
    ('Ν', 'N'),
    ('Ο', 'O'),
    ('Ρ', 'P'),
    ('Τ', 'T'),
    ('Υ', 'Y'),
    ('Χ', 'X'),
];

fn as_latin(c: char) -> Option<char> {
    LOOKALIKES
        .iter()
        .find(|(l, _)| *l == c)
        .map(|(_, latin)| *latin)
}

/// The words of `text` that mix ASCII letters with look-alike letters of another script (a
/// word all Cyrillic or all Greek is that language, not a trick), each with its char offset;
/// and the text with those words read as Latin, char for char (offsets do not move).
pub(super) fn mixed_words(text: &str) -> (Vec<(usize, String)>, String) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut words = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_alphabetic() {
            i += 1;
        }
        let word = &chars[start..i];
        let latin = word.iter().any(char::is_ascii_alphabetic);
        let lookalike = word.iter().any(|&c| as_latin(c).is_some());
        if latin && lookalike {
            words.push((start, word.iter().collect()));
            for (k, &c) in word.iter().enumerate() {
                out[start + k] = as_latin(c).unwrap_or(c);
            }
        }
    }
    (words, out.into_iter().collect())
}
