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
