//! A plan candidate's cost formula: its terms, kept as numbers and rendered only when shown.

use serde::Serialize;

/// A cost formula with its numbers, rendered only when shown (formatting floats would cost
/// more than planning). A plan made only to run ([`crate::plan::choose_to_run`]) records none: its
/// formulas are empty (their terms were ~9 allocations of a short query's planning).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Formula {
    terms: Vec<Term>,
    /// Terms are dropped, not recorded.
    unrecorded: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Term {
    Text(&'static str),
    /// A number with this many decimals.
    Number(f64, usize),
    /// A number in scientific notation.
    Scientific(f64),
}

/// Terms a formula makes room for at its first: a plan's formula has up to a dozen or so, and
/// growing from four then eight was ~2,000 instructions of planning a query (callgrind).
const FORMULA_TERMS: usize = 16;

impl Formula {
    /// A formula that records nothing: for plans that are run, not shown.
    pub(crate) fn unrecorded() -> Self {
        Formula {
            terms: Vec::new(),
            unrecorded: true,
        }
    }

    fn push(mut self, term: Term) -> Self {
        if self.unrecorded {
            return self;
        }
        if self.terms.capacity() == 0 {
            self.terms.reserve(FORMULA_TERMS);
        }
        self.terms.push(term);
        self
    }

    pub(crate) fn text(self, text: &'static str) -> Self {
        self.push(Term::Text(text))
    }

    pub(crate) fn number(self, x: f64, decimals: usize) -> Self {
        self.push(Term::Number(x, decimals))
    }

    pub(crate) fn scientific(self, x: f64) -> Self {
        self.push(Term::Scientific(x))
    }

    /// `seeks × seek + n what × per`: the part every reading plan shares.
    pub(crate) fn reads(
        self,
        seeks: f64,
        seek_us: f64,
        n: f64,
        what: &'static str,
        per: f64,
    ) -> Self {
        self.number(seeks, 0)
            .text(" seeks × ")
            .number(seek_us, 1)
            .text(" + ")
            .number(n, 0)
            .text(what)
            .number(per, 3)
    }

    /// ` (clustered c)` after a fetch's cost, when the rows' key order follows the index's
    /// enough to matter (c above 0.01).
    pub(crate) fn clustered(self, clustering: f64) -> Self {
        if clustering > 0.01 {
            self.text(" (clustered ").number(clustering, 2).text(")")
        } else {
            self
        }
    }

    pub(crate) fn then(mut self, rest: Formula) -> Self {
        if self.unrecorded {
            return self;
        }
        if self.terms.capacity() == 0 {
            self.terms.reserve(FORMULA_TERMS.max(rest.terms.len()));
        }
        self.terms.extend(rest.terms);
        self
    }
}

impl std::fmt::Display for Formula {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for term in &self.terms {
            match term {
                Term::Text(t) => f.write_str(t)?,
                Term::Number(x, decimals) => write!(f, "{x:.decimals$}")?,
                Term::Scientific(x) => write!(f, "{x:.2e}")?,
            }
        }
        Ok(())
    }
}

impl Serialize for Formula {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// An estimated count of rows as a person reads it: whole numbers with thousands separated
/// from 10 on (`46,087`, `176`), one decimal below 10 (`2.4`), two significant digits below 1
/// (`0.38`, `0.00018`: a fraction of a row is what the statistics expect, not zero). EXPLAIN's
/// JSON keeps the number itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowCount(pub f64);

impl std::fmt::Display for RowCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        let text = if !x.is_finite() {
            format!("{x}")
        } else if x == 0.0 {
            "0".to_string()
        } else if x.abs() < 1.0 {
            // Two significant digits: the decimals reach the second one.
            let decimals = (1 - x.abs().log10().floor() as i32).clamp(1, 17) as usize;
            format!("{x:.decimals$}")
        } else if x.abs() < 10.0 {
            format!("{x:.1}")
        } else {
            let digits = format!("{:.0}", x.abs());
            let mut grouped = String::with_capacity(digits.len() + digits.len() / 3 + 1);
            if x < 0.0 {
                grouped.push('-');
            }
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            grouped
        };
        f.pad(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::RowCount;

    #[test]
    fn rows_read_as_a_person_writes_them() {
        let shown = |x: f64| RowCount(x).to_string();
        assert_eq!(shown(14.576520767563146), "15");
        assert_eq!(shown(46_087.4), "46,087");
        assert_eq!(shown(1_234_567.0), "1,234,567");
        assert_eq!(shown(176.0), "176");
        assert_eq!(shown(2.44), "2.4");
        assert_eq!(shown(0.38), "0.38");
        assert_eq!(shown(0.000_183), "0.00018");
        assert_eq!(shown(0.0), "0");
        assert_eq!(format!("{:>8}", RowCount(1365.2)), "   1,365");
    }
}
