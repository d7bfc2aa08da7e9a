//! The `--where` language and literals.
//!
//! ```text
//! expr      := term (OR term)*
//! term      := factor (AND factor)*
//! factor    := NOT factor | ( expr ) | condition
//! condition := field op literal            op: = != <> < <= > >=
//!            | field [NOT] IN ( literal, … )
//!            | field [NOT] BETWEEN literal AND literal
//!            | field [NOT] LIKE 'pattern'  % any run, _ one character, \ escapes
//!            | field IS [NOT] NULL
//! field     := a bare word (letters, digits, '_', '.'; not starting with a digit)
//!            | `any text` in backquotes (a backquote inside is doubled)
//! literal   := a number: -12, 3.5, 1e6 (integers are 64-bit; with '.' or an exponent, float)
//!            | a string in single or double quotes (the quote inside is doubled)
//!            | TRUE | FALSE
//! ```
//!
//! `AND` binds tighter than `OR`, as in SQL; `NOT` is pushed down to the conditions
//! (`NOT (a = 1 OR b < 2)` is `a != 1 AND b >= 2`), which keeps SQL's NULL rules: a NULL
//! passes neither a condition nor its negation. Parentheses nest at most [`MAX_DEPTH`] deep.
//!
//! Keywords are case-insensitive. An unquoted word where a literal belongs is an error that
//! says how to quote it, rather than a guess: `town = Seattle` might be a typo of a field.

use std::fmt;

use strata::{Condition, Op, Order, Predicate, Value};

/// The deepest nesting of parentheses and `NOT`s an expression may have.
pub const MAX_DEPTH: usize = 64;

/// Why an expression does not parse: what was expected, and where (a 1-based character
/// column of the expression).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// The character column the problem starts at.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for ExprError {}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// An unquoted word: a field or a keyword.
    Word(String),
    /// A backquoted field name.
    Field(String),
    Str(String),
    Num(Value),
    Op(&'static str),
    Open,
    Close,
    Comma,
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "'{w}'"),
            Tok::Field(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "the string {s:?}"),
            Tok::Num(v) => write!(f, "the number {v}"),
            Tok::Op(op) => write!(f, "'{op}'"),
            Tok::Open => f.write_str("'('"),
            Tok::Close => f.write_str("')'"),
            Tok::Comma => f.write_str("','"),
            Tok::End => f.write_str("the end"),
        }
    }
}

fn error(column: usize, message: impl Into<String>) -> ExprError {
    ExprError {
        column,
        message: message.into(),
    }
}

/// Splits `text` into tokens, each with its 1-based column.
fn tokens(text: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
        let op = match two.as_str() {
            "!=" | "<>" => Some(("!=", 2)),
            "<=" => Some(("<=", 2)),
            ">=" => Some((">=", 2)),
            "==" => Some(("=", 2)),
            _ => match c {
                '=' => Some(("=", 1)),
                '<' => Some(("<", 1)),
                '>' => Some((">", 1)),
                _ => None,
            },
        };
        if let Some((op, len)) = op {
            out.push((Tok::Op(op), column));
            i += len;
            continue;
        }
        match c {
            '(' => out.push((Tok::Open, column)),
            ')' => out.push((Tok::Close, column)),
            ',' => out.push((Tok::Comma, column)),
            '\'' | '"' | '`' => {
                let (body, next) = quoted(&chars, i)?;
                out.push((
                    if c == '`' {
                        Tok::Field(body)
                    } else {
                        Tok::Str(body)
                    },
                    column,
                ));
                i = next;
                continue;
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+' || c == '.')
                    && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric()
                        || chars[i] == '.'
                        || ((chars[i] == '-' || chars[i] == '+')
                            && matches!(chars[i - 1], 'e' | 'E')))
                {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let value = number(&text).ok_or_else(|| {
                    error(column, format!("{text:?} is not a number (quote strings)"))
                })?;
                out.push((Tok::Num(value), column));
                continue;
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                out.push((Tok::Word(chars[start..i].iter().collect()), column));
                continue;
            }
            c => return Err(error(column, format!("unexpected character {c:?}"))),
        }
        i += 1;
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

/// The text between the quote at `start` and its closing quote (a doubled quote stands for
/// itself), and the index after the closing quote.
fn quoted(chars: &[char], start: usize) -> Result<(String, usize), ExprError> {
    let quote = chars[start];
    let mut body = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i) {
            None => return Err(error(start + 1, format!("unclosed {quote}"))),
            Some(&c) if c == quote => {
                if chars.get(i + 1) == Some(&quote) {
                    body.push(quote);
                    i += 2;
                } else {
                    return Ok((body, i + 1));
                }
            }
            Some(&c) => {
                body.push(c);
                i += 1;
            }
        }
    }
}

/// A number literal: an integer (64-bit) without '.' or exponent, else a finite float.
pub fn number(text: &str) -> Option<Value> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<i64>().ok().map(Value::Int);
    }
    let (mantissa, exponent) = match digits.find(['e', 'E']) {
        Some(at) => (&digits[..at], Some(&digits[at + 1..])),
        None => (digits, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        all_digits(whole) && all_digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Value::Float)
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.tokens[self.at].0
    }

    fn column(&self) -> usize {
        self.tokens[self.at].1
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.tokens[self.at].clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Word(w) if w.eq_ignore_ascii_case(word))
    }

    fn expect_keyword(&mut self, word: &str) -> Result<(), ExprError> {
        if self.keyword(word) {
            self.next();
            Ok(())
        } else {
            Err(error(
                self.column(),
                format!("expected {word}, found {}", self.peek()),
            ))
        }
    }

    fn field(&mut self) -> Result<String, ExprError> {
        match self.next() {
            (Tok::Field(f), _) => Ok(f),
            (Tok::Word(w), column) => {
                if ["and", "or", "in", "between", "is", "null", "not", "like"]
                    .iter()
                    .any(|k| w.eq_ignore_ascii_case(k))
                {
                    Err(error(
                        column,
                        format!(
                            "expected a field, found the keyword {w} (backquote a field named so)"
                        ),
                    ))
                } else {
                    Ok(w)
                }
            }
            (tok, column) => Err(error(column, format!("expected a field, found {tok}"))),
        }
    }

    fn literal(&mut self) -> Result<Value, ExprError> {
        match self.next() {
            (Tok::Num(v), _) => Ok(v),
            (Tok::Str(s), _) => Ok(Value::Str(s)),
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            (Tok::Word(w), column) if w.eq_ignore_ascii_case("null") => Err(error(
                column,
                "a comparison with NULL is never true; use IS NULL",
            )),
            (Tok::Word(w), column) => Err(error(
                column,
                format!(
                    "expected a number or a quoted string, found {w} (write '{w}' for a string)"
                ),
            )),
            (tok, column) => Err(error(
                column,
                format!("expected a number or a quoted string, found {tok}"),
            )),
        }
    }

    fn condition(&mut self) -> Result<Condition, ExprError> {
        let field = self.field()?;
        let column = self.column();
        let negated = self.keyword("not");
        if negated {
            self.next();
            if !(self.keyword("in") || self.keyword("between") || self.keyword("like")) {
                return Err(error(
                    self.column(),
                    format!(
                        "expected IN, BETWEEN or LIKE after NOT, found {}",
                        self.peek()
                    ),
                ));
            }
        }
        let op = match self.next() {
            (Tok::Op(op), _) => {
                let v = self.literal()?;
                match op {
                    "=" => Op::Eq(v),
                    "!=" => Op::Ne(v),
                    "<" => Op::Lt(v),
                    "<=" => Op::Le(v),
                    ">" => Op::Gt(v),
                    _ => Op::Ge(v),
                }
            }
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("in") => {
                if *self.peek() != Tok::Open {
                    return Err(error(
                        self.column(),
                        format!("expected '(' after IN, found {}", self.peek()),
                    ));
                }
                self.next();
                let mut values = vec![self.literal()?];
                loop {
                    match self.next() {
                        (Tok::Comma, _) => values.push(self.literal()?),
                        (Tok::Close, _) => break,
                        (tok, column) => {
                            return Err(error(
                                column,
                                format!("expected ',' or ')' in the IN list, found {tok}"),
                            ));
                        }
                    }
                }
                if negated {
                    Op::NotIn(values)
                } else {
                    Op::In(values)
                }
            }
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("like") => match self.next() {
                (Tok::Str(pattern), _) if negated => Op::NotLike(pattern),
                (Tok::Str(pattern), _) => Op::Like(pattern),
                (tok, column) => {
                    return Err(error(
                        column,
                        format!("expected a quoted pattern after LIKE, found {tok}"),
                    ));
                }
            },
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("between") => {
                let low = self.literal()?;
                self.expect_keyword("AND")?;
                let high = self.literal()?;
                if negated {
                    return Ok(Predicate::new(&field, Op::Between(low, high)).negate());
                }
                Op::Between(low, high)
            }
            (Tok::Word(w), _) if w.eq_ignore_ascii_case("is") => {
                let not = self.keyword("not");
                if not {
                    self.next();
                }
                self.expect_keyword("NULL")?;
                if not { Op::IsNotNull } else { Op::IsNull }
            }
            (tok, _) => {
                return Err(error(
                    column,
                    format!(
                        "expected an operator (= != < <= > >= IN BETWEEN LIKE IS NULL, IS NOT NULL) \
                         after {field}, found {tok}"
                    ),
                ));
            }
        };
        Ok(Condition::Is(Predicate::new(&field, op)))
    }

    /// `term (OR term)*`.
    fn expr(&mut self) -> Result<Condition, ExprError> {
        let mut members = vec![self.term()?];
        while self.keyword("or") {
            self.next();
            members.push(self.term()?);
        }
        Ok(if members.len() == 1 {
            members.pop().unwrap_or(Condition::Any(Vec::new()))
        } else {
            Condition::Any(members)
        })
    }

    /// `factor (AND factor)*`.
    fn term(&mut self) -> Result<Condition, ExprError> {
        let mut members = vec![self.factor()?];
        while self.keyword("and") {
            self.next();
            members.push(self.factor()?);
        }
        Ok(if members.len() == 1 {
            members.pop().unwrap_or(Condition::All(Vec::new()))
        } else {
            Condition::All(members)
        })
    }

    /// `NOT factor | ( expr ) | condition`.
    fn factor(&mut self) -> Result<Condition, ExprError> {
        if self.depth >= MAX_DEPTH {
            return Err(error(
                self.column(),
                format!("parentheses and NOTs nest more than {MAX_DEPTH} deep"),
            ));
        }
        if self.keyword("not") {
            self.next();
            self.depth += 1;
            let inner = self.factor()?;
            self.depth -= 1;
            return Ok(inner.negate());
        }
        if *self.peek() == Tok::Open {
            self.next();
            self.depth += 1;
            let inner = self.expr()?;
            self.depth -= 1;
            return match self.next() {
                (Tok::Close, _) => Ok(inner),
                (tok, column) => Err(error(column, format!("expected ')', found {tok}"))),
            };
        }
        self.condition()
    }
}

/// Parses a `--where` expression into its condition (`Query::filter_where` splits it into
/// the query's predicates and conditions).
pub fn parse_where(text: &str) -> Result<Condition, ExprError> {
    let mut parser = Parser {
        tokens: tokens(text)?,
        at: 0,
        depth: 0,
    };
    if *parser.peek() == Tok::End {
        return Err(error(1, "the expression is empty"));
    }
    let condition = parser.expr()?;
    match parser.peek() {
        Tok::End => Ok(condition),
        Tok::Close => Err(error(parser.column(), "')' without its '('")),
        tok => Err(error(
            parser.column(),
            format!("expected AND, OR or the end, found {tok}"),
        )),
    }
}

/// Parses an `--order-by` argument as SQL writes it: `field [ASC|DESC]`, or several fields
/// separated by commas going the same way (`year DESC, title DESC`; Strata orders every field
/// of one query in one direction).
pub fn parse_order_by(text: &str) -> Result<Order, ExprError> {
    let mut parser = Parser {
        tokens: tokens(text)?,
        at: 0,
        depth: 0,
    };
    if *parser.peek() == Tok::End {
        return Err(error(1, "the order is empty"));
    }
    let mut fields = Vec::new();
    let mut direction: Option<(bool, usize)> = None;
    loop {
        fields.push(parser.field()?);
        let column = parser.column();
        let descending = if parser.keyword("desc") {
            parser.next();
            true
        } else {
            if parser.keyword("asc") {
                parser.next();
            }
            false
        };
        match direction {
            Some((before, _)) if before != descending => {
                return Err(error(
                    column,
                    "every field goes the same way: all ascending or all descending",
                ));
            }
            _ => direction = Some((descending, column)),
        }
        match parser.next() {
            (Tok::Comma, _) => continue,
            (Tok::End, _) => break,
            (tok, column) => {
                return Err(error(
                    column,
                    format!("expected ASC, DESC, ',' or the end, found {tok}"),
                ));
            }
        }
    }
    Ok(Order {
        fields,
        descending: direction.is_some_and(|(d, _)| d),
    })
}

/// A key value given on the command line: a number is a number, a quoted string is the
/// string inside the quotes (so `'42'` is text), anything else is the text as written.
pub fn key_literal(text: &str) -> Value {
    let trimmed = text.trim();
    if let Some(v) = number(trimmed) {
        return v;
    }
    for quote in ['\'', '"'] {
        if let Some(inner) = trimmed
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            let doubled: String = [quote, quote].iter().collect();
            return Value::Str(inner.replace(&doubled, &quote.to_string()));
        }
    }
    Value::Str(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<String> {
        let condition = parse_where(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let query = strata::Query::default().filter_where(condition);
        query
            .predicates
            .iter()
            .map(ToString::to_string)
            .chain(query.conditions.iter().map(|c| format!("({c})")))
            .collect()
    }

    fn failure(text: &str) -> String {
        match parse_where(text) {
            Ok(p) => panic!("{text} parsed as {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_operator_parses_into_its_predicate() {
        assert_eq!(
            parsed(
                "town = 'Seattle' and age >= 30 AND age<40 and score <= -1.5e2 AND x > 0 \
                 AND g != \"f\" and h <> 2"
            ),
            [
                "town = 'Seattle'",
                "age >= 30",
                "age < 40",
                "score <= -150",
                "x > 0",
                "g != 'f'",
                "h != 2",
            ]
        );
        assert_eq!(
            parsed(
                "genre IN ('drama', 'comedy') AND year BETWEEN 1990 AND 1999 AND note IS null \
                 AND phone is NOT null"
            ),
            [
                "genre IN ('drama', 'comedy')",
                "year BETWEEN 1990 AND 1999",
                "note IS NULL",
                "phone IS NOT NULL",
            ]
        );
        assert_eq!(
            parsed("`last name` = 'O''Hara' AND vip = true AND a.b = .5"),
            ["last name = 'O''Hara'", "vip = true", "a.b = 0.5"]
        );
    }

    #[test]
    fn or_parentheses_not_like_and_not_in_parse() {
        assert_eq!(
            parsed("a = 1 OR b = 2 AND c = 3"),
            ["(a = 1 OR (b = 2 AND c = 3))"]
        );
        assert_eq!(
            parsed("(a = 1 OR b = 2) AND c = 3"),
            ["c = 3", "(a = 1 OR b = 2)"]
        );
        // An OR of equalities on one field is an IN.
        assert_eq!(
            parsed("origin = 'JFK' or origin = 'EWR' OR origin IN ('LGA')"),
            ["origin IN ('JFK', 'EWR', 'LGA')"]
        );
        assert_eq!(
            parsed("name LIKE 'Sea%' AND code NOT LIKE '\\_x' AND k NOT IN (1, 2)"),
            [
                "name LIKE 'Sea%'",
                "code NOT LIKE '\\_x'",
                "k NOT IN (1, 2)"
            ]
        );
        // NOT goes down to the conditions.
        assert_eq!(
            parsed("NOT (a = 1 OR b < 2) AND NOT c IS NULL"),
            ["a != 1", "b >= 2", "c IS NOT NULL"]
        );
        assert_eq!(
            parsed("NOT (a = 1 AND b NOT LIKE 'x%')"),
            ["(a != 1 OR b LIKE 'x%')"]
        );
        assert_eq!(
            parsed("a NOT BETWEEN 1 AND 5 AND b = 2"),
            ["b = 2", "(a < 1 OR a > 5)"]
        );
        assert_eq!(parsed("`or` = 1"), ["or = 1"]);
    }

    #[test]
    fn literals_keep_their_types() {
        let c = parse_where("a = 7 AND b = '7' AND c = 7.0 AND d = 9223372036854775807").unwrap();
        let p = strata::Query::default().filter_where(c).predicates;
        let values: Vec<&Op> = p.iter().map(|p| &p.op).collect();
        assert_eq!(
            values,
            [
                &Op::Eq(Value::Int(7)),
                &Op::Eq(Value::Str("7".into())),
                &Op::Eq(Value::Float(7.0)),
                &Op::Eq(Value::Int(i64::MAX)),
            ]
        );
    }

    #[test]
    fn mistakes_are_reported_with_their_column() {
        assert_eq!(
            failure("town = Seattle"),
            "at column 8: expected a number or a quoted string, found Seattle (write 'Seattle' \
             for a string)"
        );
        assert_eq!(failure("town = 'Seattle"), "at column 8: unclosed '");
        assert_eq!(
            failure("age >= 30 age < 5"),
            "at column 11: expected AND, OR or the end, found 'age'"
        );
        assert_eq!(
            failure("(a = 1"),
            "at column 7: expected ')', found the end"
        );
        assert_eq!(failure("a = 1)"), "at column 6: ')' without its '('");
        assert_eq!(
            failure("a NOT = 1"),
            "at column 7: expected IN, BETWEEN or LIKE after NOT, found '='"
        );
        assert_eq!(
            failure("a LIKE 5"),
            "at column 8: expected a quoted pattern after LIKE, found the number 5"
        );
        let deep = format!("{}a = 1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(
            failure(&deep),
            "at column 65: parentheses and NOTs nest more than 64 deep"
        );
        assert!(failure(&"NOT ".repeat(10_000)).contains("nest more than 64 deep"));
        assert_eq!(failure(""), "at column 1: the expression is empty");
        assert_eq!(
            failure("age 30"),
            "at column 5: expected an operator (= != < <= > >= IN BETWEEN LIKE IS NULL, IS NOT NULL) \
             after age, found the number 30"
        );
        assert_eq!(
            failure("a IN (1, 2"),
            "at column 11: expected ',' or ')' in the IN list, found the end"
        );
        assert_eq!(
            failure("a BETWEEN 1 2"),
            "at column 13: expected AND, found the number 2"
        );
        assert_eq!(
            failure("a = NULL"),
            "at column 5: a comparison with NULL is never true; use IS NULL"
        );
        assert_eq!(
            failure("a IS NOT 5"),
            "at column 10: expected NULL, found the number 5"
        );
        assert_eq!(
            failure("a = 99999999999999999999"),
            "at column 5: \"99999999999999999999\" is not a number (quote strings)"
        );
        assert_eq!(
            failure("a = 1 AND"),
            "at column 10: expected a field, found the end"
        );
        assert_eq!(failure("a ; 1"), "at column 3: unexpected character ';'");
        assert_eq!(
            failure("a = 1e"),
            "at column 5: \"1e\" is not a number (quote strings)"
        );
    }

    #[test]
    fn no_input_panics() {
        // Every prefix of every sample, and a few oddities: errors, never panics.
        let samples = [
            "`a``b` = 'x''y' AND c IN (1,2.5,'z') AND d BETWEEN -1 AND +2e-3 AND e IS NULL",
            "é = 'ü' AND 日本 != \"語\"",
            "a<=>b",
            "((((",
            "NOT (a = 1 OR (b LIKE 'x%' AND c NOT IN (1, 'y'))) OR d NOT BETWEEN 1 AND 2",
            "- . + e",
        ];
        for s in samples {
            let chars: Vec<char> = s.chars().collect();
            for end in 0..=chars.len() {
                let prefix: String = chars[..end].iter().collect();
                let _ = parse_where(&prefix);
            }
        }
    }

    #[test]
    fn an_order_is_fields_and_one_direction() {
        let order = |text: &str| parse_order_by(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            order("distance desc"),
            Order {
                fields: vec!["distance".into()],
                descending: true
            }
        );
        assert_eq!(
            order("o_orderdate"),
            Order {
                fields: vec!["o_orderdate".into()],
                descending: false
            }
        );
        assert_eq!(
            order("year DESC, `the title` DESC"),
            Order {
                fields: vec!["year".into(), "the title".into()],
                descending: true
            }
        );
        assert_eq!(order("a ASC, b").fields, ["a", "b"]);
        let failure = |text: &str| parse_order_by(text).unwrap_err().to_string();
        assert_eq!(
            failure("a DESC, b"),
            "at column 10: every field goes the same way: all ascending or all descending"
        );
        assert_eq!(failure(""), "at column 1: the order is empty");
        assert_eq!(
            failure("a b"),
            "at column 3: expected ASC, DESC, ',' or the end, found 'b'"
        );
        assert_eq!(
            failure("a,"),
            "at column 3: expected a field, found the end"
        );
    }

    #[test]
    fn key_literals_are_numbers_or_text() {
        assert_eq!(key_literal("42"), Value::Int(42));
        assert_eq!(key_literal("-4.5"), Value::Float(-4.5));
        assert_eq!(key_literal("'42'"), Value::Str("42".into()));
        assert_eq!(key_literal("\"it\"\"s\""), Value::Str("it\"s".into()));
        assert_eq!(key_literal("Seattle"), Value::Str("Seattle".into()));
        assert_eq!(key_literal("007x"), Value::Str("007x".into()));
    }
}
