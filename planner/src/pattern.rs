//! `LIKE` patterns: matching text, the literal prefix that binds an index as a range, and
//! the share of text a pattern's other characters keep when nothing better is known.
//!
//! A pattern is text in which `%` stands for any run of characters (none included), `_` for
//! exactly one, and `\` makes the character after it literal (PostgreSQL's default escape;
//! a `\` at the end stands for itself). Matching is by character and case-sensitive, as in
//! PostgreSQL.

/// One piece of a parsed pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// This character.
    Char(char),
    /// Any one character (`_`).
    One,
    /// Any run of characters (`%`).
    Run,
}

fn pieces(pattern: &str) -> Vec<Piece> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '%' => {
                // Runs in a row are one run.
                if out.last() == Some(&Piece::Run) {
                    continue;
                }
                Piece::Run
            }
            '_' => Piece::One,
            '\\' => Piece::Char(chars.next().unwrap_or('\\')),
            c => Piece::Char(c),
        });
    }
    out
}

/// A parsed pattern, for matching many texts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern(Vec<Piece>);

impl Pattern {
    /// `pattern`, parsed.
    pub fn new(pattern: &str) -> Self {
        Pattern(pieces(pattern))
    }

    /// Whether `text` matches. Linear in the text for each run (`%`) the pattern holds: the
    /// classic matcher that remembers the last run and where it resumed, so no input makes
    /// it backtrack exponentially. It walks the text by character, in place.
    pub fn matches(&self, text: &str) -> bool {
        let pieces = &self.0;
        let next_char = |at: usize| text[at..].chars().next();
        let (mut p, mut t) = (0usize, 0usize);
        // The piece after the last run seen, and the text position that run resumes from.
        let mut resume: Option<(usize, usize)> = None;
        while let Some(c) = next_char(t) {
            match pieces.get(p) {
                Some(Piece::Run) => {
                    resume = Some((p + 1, t));
                    p += 1;
                }
                Some(Piece::One) => {
                    p += 1;
                    t += c.len_utf8();
                }
                Some(Piece::Char(x)) if *x == c => {
                    p += 1;
                    t += c.len_utf8();
                }
                _ => match resume {
                    // Let the last run take one more character, and try again after it.
                    Some((after, from)) => {
                        let skipped = next_char(from).map_or(1, char::len_utf8);
                        resume = Some((after, from + skipped));
                        p = after;
                        t = from + skipped;
                    }
                    None => return false,
                },
            }
        }
        pieces[p..].iter().all(|piece| *piece == Piece::Run)
    }
}

/// Whether `text` matches `pattern` ([`Pattern::matches`]).
pub fn like(pattern: &str, text: &str) -> bool {
    Pattern::new(pattern).matches(text)
}

/// What a pattern fixes at its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// The literal characters before the first wildcard.
    pub text: String,
    /// The pattern has no wildcard: it matches `text` alone (an equality).
    pub whole: bool,
}

/// The literal start of `pattern`.
pub fn prefix(pattern: &str) -> Prefix {
    let mut text = String::new();
    for piece in pieces(pattern) {
        match piece {
            Piece::Char(c) => text.push(c),
            Piece::One | Piece::Run => return Prefix { text, whole: false },
        }
    }
    Prefix { text, whole: true }
}

/// The least text above every text that starts with `prefix` (`None`: there is none — the
/// prefix is all `char::MAX`): its last character that has a successor, incremented, with
/// what follows it dropped.
pub fn successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// A fixed character after the prefix keeps this share of the text.
/// TUNING: PostgreSQL's `FIXED_CHAR_SEL` (selfuncs.c), from its `like_selectivity`.
pub const FIXED_CHAR_SEL: f64 = 0.20;
/// A `_` keeps this share.
/// TUNING: PostgreSQL's `ANY_CHAR_SEL`.
pub const ANY_CHAR_SEL: f64 = 0.9;

/// The share of the text starting with the prefix that the rest of `pattern` keeps, without
/// statistics (PostgreSQL's `like_selectivity`): each fixed character [`FIXED_CHAR_SEL`],
/// each `_` [`ANY_CHAR_SEL`]; a run keeps everything.
pub fn rest_selectivity(pattern: &str) -> f64 {
    let mut sel = 1.0;
    let mut in_prefix = true;
    for piece in pieces(pattern) {
        match piece {
            Piece::Char(_) if in_prefix => {}
            Piece::Char(_) => sel *= FIXED_CHAR_SEL,
            Piece::One => {
                in_prefix = false;
                sel *= ANY_CHAR_SEL;
            }
            Piece::Run => in_prefix = false,
        }
    }
    sel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_runs_and_single_characters() {
        assert!(like("Sea%", "Seattle"));
        assert!(like("Sea%", "Sea"));
        assert!(!like("Sea%", "sea"));
        assert!(like("%ttl%", "Seattle"));
        assert!(like("S_attle", "Seattle"));
        assert!(!like("S_attle", "Sattle"));
        assert!(like("%", ""));
        assert!(!like("_", ""));
        assert!(like("a%b%c", "aXbYbZc"));
        assert!(!like("a%b%c", "aXbYbZ"));
        assert!(like("%a", "banana"));
        assert!(!like("%n", "banana"));
        assert!(like("ü_%", "üßx"));
        // Escapes make wildcards literal; a trailing escape is itself.
        assert!(like("100\\%", "100%"));
        assert!(!like("100\\%", "1000"));
        assert!(like("a\\_b", "a_b"));
        assert!(!like("a\\_b", "axb"));
        assert!(like("a\\", "a\\"));
    }

    #[test]
    fn matching_does_not_backtrack_exponentially() {
        let text = "a".repeat(5_000);
        let pattern = format!("{}b", "%a".repeat(50));
        assert!(!like(&pattern, &text));
    }

    #[test]
    fn the_prefix_stops_at_the_first_wildcard() {
        assert_eq!(
            prefix("Sea%tle"),
            Prefix {
                text: "Sea".into(),
                whole: false
            }
        );
        assert_eq!(
            prefix("a\\%b"),
            Prefix {
                text: "a%b".into(),
                whole: true
            }
        );
        assert_eq!(prefix("_x").text, "");
        assert_eq!(successor("Sea").as_deref(), Some("Seb"));
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(successor("\u{10FFFF}"), None);
        assert_eq!(successor(""), None);
    }

    #[test]
    fn every_text_with_the_prefix_lies_below_its_successor() {
        for p in ["Sea", "a\u{10FFFF}", "zz", "\u{D7FF}"] {
            let next = successor(p).unwrap();
            for tail in ["", "\u{10FFFF}\u{10FFFF}", "zzzz", "\0"] {
                let text = format!("{p}{tail}");
                assert!(text.as_str() < next.as_str(), "{text:?} < {next:?}");
                assert!(text.as_str() >= p);
            }
        }
    }
}
