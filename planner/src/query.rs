//! What the planner is asked: a query over one table, and what it knows of the table.

use serde::{Deserialize, Serialize};

use crate::pattern::like;
use crate::value::Value;

/// A comparison of one field with literals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// `= v`
    Eq(Value),
    /// `!= v` (NULL never satisfies it, as in SQL). It binds no index: it only filters.
    Ne(Value),
    /// `IN (v, …)`
    In(Vec<Value>),
    /// `< v`
    Lt(Value),
    /// `<= v`
    Le(Value),
    /// `> v`
    Gt(Value),
    /// `>= v`
    Ge(Value),
    /// `BETWEEN a AND b` (both inclusive)
    Between(Value, Value),
    /// `IS NULL`
    IsNull,
    /// `IS NOT NULL`
    IsNotNull,
    /// `NOT IN (v, …)`: the value is none of these. As in SQL, a list holding NULL matches
    /// nothing (the value might be the unknown one). It binds no index: it only filters.
    NotIn(Vec<Value>),
    /// `LIKE 'pattern'`: text matching the pattern, `%` standing for any run of characters,
    /// `_` for one, `\` making the next character literal (PostgreSQL's default escape).
    /// Case-sensitive. A value that is not text neither matches `LIKE` nor `NOT LIKE` (it is
    /// unknown, as NULL is). A literal prefix (`'Sea%'`) binds an index as a range.
    Like(String),
    /// `NOT LIKE 'pattern'`: text not matching the pattern (see [`Op::Like`]).
    NotLike(String),
}

/// `field op …`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predicate {
    /// The field.
    pub field: String,
    /// The comparison.
    pub op: Op,
}

impl Predicate {
    /// `field = value`.
    pub fn eq(field: &str, value: impl Into<Value>) -> Self {
        Predicate {
            field: field.into(),
            op: Op::Eq(value.into()),
        }
    }

    /// `field != value`.
    pub fn ne(field: &str, value: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Ne(value.into()))
    }

    /// `field IN (values)`.
    pub fn in_list(field: &str, values: impl IntoIterator<Item = Value>) -> Self {
        Predicate {
            field: field.into(),
            op: Op::In(values.into_iter().collect()),
        }
    }

    /// `field < value`.
    pub fn lt(field: &str, value: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Lt(value.into()))
    }

    /// `field <= value`.
    pub fn le(field: &str, value: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Le(value.into()))
    }

    /// `field > value`.
    pub fn gt(field: &str, value: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Gt(value.into()))
    }

    /// `field >= value`.
    pub fn ge(field: &str, value: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Ge(value.into()))
    }

    /// `field BETWEEN low AND high` (both inclusive).
    pub fn between(field: &str, low: impl Into<Value>, high: impl Into<Value>) -> Self {
        Predicate::new(field, Op::Between(low.into(), high.into()))
    }

    /// `field IS NULL` (a missing field is NULL).
    pub fn is_null(field: &str) -> Self {
        Predicate::new(field, Op::IsNull)
    }

    /// `field IS NOT NULL` (the field is present and not NULL).
    pub fn is_not_null(field: &str) -> Self {
        Predicate::new(field, Op::IsNotNull)
    }

    /// `field NOT IN (values)`.
    pub fn not_in(field: &str, values: impl IntoIterator<Item = Value>) -> Self {
        Predicate::new(field, Op::NotIn(values.into_iter().collect()))
    }

    /// `field LIKE pattern` ([`Op::Like`]).
    pub fn like(field: &str, pattern: &str) -> Self {
        Predicate::new(field, Op::Like(pattern.into()))
    }

    /// `field NOT LIKE pattern` ([`Op::NotLike`]).
    pub fn not_like(field: &str, pattern: &str) -> Self {
        Predicate::new(field, Op::NotLike(pattern.into()))
    }

    /// The predicate true exactly where this one is false, in SQL's three-valued logic
    /// (where this one is unknown — a NULL, a LIKE on a number — so is its negation, and
    /// neither matches): `=` and `!=`, `IN` and `NOT IN`, `<` and `>=`, `LIKE` and `NOT LIKE`,
    /// `IS NULL` and `IS NOT NULL`; `BETWEEN a AND b` becomes `< a OR > b`.
    pub fn negate(&self) -> Condition {
        let field = self.field.as_str();
        let op = match &self.op {
            Op::Eq(v) => Op::Ne(v.clone()),
            Op::Ne(v) => Op::Eq(v.clone()),
            Op::In(vs) => Op::NotIn(vs.clone()),
            Op::NotIn(vs) => Op::In(vs.clone()),
            Op::Lt(v) => Op::Ge(v.clone()),
            Op::Le(v) => Op::Gt(v.clone()),
            Op::Gt(v) => Op::Le(v.clone()),
            Op::Ge(v) => Op::Lt(v.clone()),
            Op::IsNull => Op::IsNotNull,
            Op::IsNotNull => Op::IsNull,
            Op::Like(p) => Op::NotLike(p.clone()),
            Op::NotLike(p) => Op::Like(p.clone()),
            Op::Between(a, b) => {
                return Condition::Any(vec![
                    Condition::Is(Predicate::lt(field, a.clone())),
                    Condition::Is(Predicate::gt(field, b.clone())),
                ]);
            }
        };
        Condition::Is(Predicate::new(field, op))
    }

    /// Whether `value` (the field's value, `Null` when missing) satisfies this predicate.
    /// A comparison with `NULL` on either side is never true, as in SQL; only `IS NULL`
    /// matches it. Other values compare in [`Value`]'s total order, as in SQLite.
    pub fn matches(&self, value: &Value) -> bool {
        if let Op::IsNull = self.op {
            return value.is_null();
        }
        if value.is_null() {
            return false;
        }
        if let Op::IsNotNull = self.op {
            return true;
        }
        let cmp = |x: &Value| (!x.is_null()).then(|| value.cmp(x));
        use std::cmp::Ordering::*;
        match &self.op {
            Op::Eq(x) => cmp(x) == Some(Equal),
            Op::Ne(x) => matches!(cmp(x), Some(Less | Greater)),
            Op::In(xs) => xs.iter().any(|x| cmp(x) == Some(Equal)),
            Op::Lt(x) => cmp(x) == Some(Less),
            Op::Le(x) => matches!(cmp(x), Some(Less | Equal)),
            Op::Gt(x) => cmp(x) == Some(Greater),
            Op::Ge(x) => matches!(cmp(x), Some(Greater | Equal)),
            Op::Between(a, b) => {
                matches!(cmp(a), Some(Greater | Equal)) && matches!(cmp(b), Some(Less | Equal))
            }
            Op::NotIn(xs) => xs.iter().all(|x| matches!(cmp(x), Some(Less | Greater))),
            Op::Like(pattern) => value.as_str().is_some_and(|s| like(pattern, s)),
            Op::NotLike(pattern) => value.as_str().is_some_and(|s| !like(pattern, s)),
            Op::IsNull | Op::IsNotNull => unreachable!("handled above"),
        }
    }

    /// `field op value` for any op.
    pub fn new(field: &str, op: Op) -> Self {
        Predicate {
            field: field.into(),
            op,
        }
    }

    /// Whether this binds the field to a finite set of values (`=` or `IN`).
    pub fn is_equality(&self) -> bool {
        matches!(self.op, Op::Eq(_) | Op::In(_))
    }

    /// Whether this is a range (`<`, `<=`, `>`, `>=`, `BETWEEN`).
    pub fn is_range(&self) -> bool {
        matches!(
            self.op,
            Op::Lt(_) | Op::Le(_) | Op::Gt(_) | Op::Ge(_) | Op::Between(..)
        )
    }
}

impl std::fmt::Display for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let field = &self.field;
        match &self.op {
            Op::Eq(v) => write!(f, "{field} = {}", v.sql_literal()),
            Op::Ne(v) => write!(f, "{field} != {}", v.sql_literal()),
            Op::In(vs) => {
                write!(f, "{field} IN (")?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", v.sql_literal())?;
                }
                f.write_str(")")
            }
            Op::Lt(v) => write!(f, "{field} < {}", v.sql_literal()),
            Op::Le(v) => write!(f, "{field} <= {}", v.sql_literal()),
            Op::Gt(v) => write!(f, "{field} > {}", v.sql_literal()),
            Op::Ge(v) => write!(f, "{field} >= {}", v.sql_literal()),
            Op::Between(a, b) => write!(
                f,
                "{field} BETWEEN {} AND {}",
                a.sql_literal(),
                b.sql_literal()
            ),
            Op::IsNull => write!(f, "{field} IS NULL"),
            Op::IsNotNull => write!(f, "{field} IS NOT NULL"),
            Op::NotIn(vs) => {
                write!(f, "{field} NOT IN (")?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", v.sql_literal())?;
                }
                f.write_str(")")
            }
            Op::Like(p) => write!(f, "{field} LIKE {}", Value::from(p.as_str()).sql_literal()),
            Op::NotLike(p) => write!(
                f,
                "{field} NOT LIKE {}",
                Value::from(p.as_str()).sql_literal()
            ),
        }
    }
}

/// A condition on a row: a predicate, or predicates and conditions combined with `AND` and
/// `OR` (a `NOT` is pushed to the predicates: [`Condition::negate`]). The building block
/// of `OR` and parentheses; a query's plain conjunction stays in [`Query::predicates`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Condition {
    /// One predicate.
    Is(Predicate),
    /// Every one holds (`AND`; empty: true).
    All(Vec<Condition>),
    /// At least one holds (`OR`; empty: false).
    Any(Vec<Condition>),
}

impl From<Predicate> for Condition {
    fn from(p: Predicate) -> Self {
        Condition::Is(p)
    }
}

impl Condition {
    /// `a OR b OR …`.
    pub fn any(conditions: impl IntoIterator<Item = impl Into<Condition>>) -> Self {
        Condition::Any(conditions.into_iter().map(Into::into).collect())
    }

    /// `a AND b AND …`.
    pub fn all(conditions: impl IntoIterator<Item = impl Into<Condition>>) -> Self {
        Condition::All(conditions.into_iter().map(Into::into).collect())
    }

    /// Whether the row whose field values `value_of` gives (NULL for a missing field)
    /// satisfies it.
    pub fn matches<'v>(&self, value_of: &impl Fn(&str) -> &'v Value) -> bool {
        match self {
            Condition::Is(p) => p.matches(value_of(&p.field)),
            Condition::All(cs) => cs.iter().all(|c| c.matches(value_of)),
            Condition::Any(cs) => cs.iter().any(|c| c.matches(value_of)),
        }
    }

    /// The condition true exactly where this one is false, in SQL's three-valued logic: De
    /// Morgan's laws down to the predicates, each negated by [`Predicate::negate`].
    pub fn negate(&self) -> Condition {
        match self {
            Condition::Is(p) => p.negate(),
            Condition::All(cs) => Condition::Any(cs.iter().map(Condition::negate).collect()),
            Condition::Any(cs) => Condition::All(cs.iter().map(Condition::negate).collect()),
        }
    }

    /// Every field it names, with repeats.
    pub fn fields(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.each_predicate(&mut |p| out.push(p.field.as_str()));
        out
    }

    /// Calls `f` on each of its predicates.
    pub fn each_predicate<'s>(&'s self, f: &mut impl FnMut(&'s Predicate)) {
        match self {
            Condition::Is(p) => f(p),
            Condition::All(cs) | Condition::Any(cs) => {
                for c in cs {
                    c.each_predicate(f);
                }
            }
        }
    }

    /// The same condition with nested `AND`s in `AND`s and `OR`s in `OR`s flattened, and
    /// one-member groups replaced by their member.
    pub fn flattened(self) -> Condition {
        match self {
            Condition::Is(p) => Condition::Is(p),
            Condition::All(cs) => {
                let mut out = Vec::with_capacity(cs.len());
                for c in cs {
                    match c.flattened() {
                        Condition::All(inner) => out.extend(inner),
                        c => out.push(c),
                    }
                }
                if out.len() == 1 {
                    out.pop().unwrap_or(Condition::All(Vec::new()))
                } else {
                    Condition::All(out)
                }
            }
            Condition::Any(cs) => {
                let mut out = Vec::with_capacity(cs.len());
                for c in cs {
                    match c.flattened() {
                        Condition::Any(inner) => out.extend(inner),
                        c => out.push(c),
                    }
                }
                if out.len() == 1 {
                    out.pop().unwrap_or(Condition::Any(Vec::new()))
                } else {
                    Condition::Any(out)
                }
            }
        }
    }

    /// The predicates ANDed at its top (all of it when it is a predicate or an `AND` of
    /// predicates): what an access path can bind for it.
    pub fn conjuncts(&self) -> Vec<&Predicate> {
        match self {
            Condition::Is(p) => vec![p],
            Condition::All(cs) => cs
                .iter()
                .filter_map(|c| match c {
                    Condition::Is(p) => Some(p),
                    _ => None,
                })
                .collect(),
            Condition::Any(_) => Vec::new(),
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (cs, joint, empty) = match self {
            Condition::Is(p) => return write!(f, "{p}"),
            Condition::All(cs) => (cs, " AND ", "TRUE"),
            Condition::Any(cs) => (cs, " OR ", "FALSE"),
        };
        if cs.is_empty() {
            return f.write_str(empty);
        }
        for (i, c) in cs.iter().enumerate() {
            if i > 0 {
                f.write_str(joint)?;
            }
            match c {
                Condition::Is(p) => write!(f, "{p}")?,
                nested => write!(f, "({nested})")?,
            }
        }
        Ok(())
    }
}

/// A forced plan, for tests and for users who know better.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Hint {
    /// Use this index.
    Index(String),
    /// Scan the table.
    Scan,
    /// Read the members of an `OR` one by one, each by its cheapest key or index path (the
    /// cheapest such union, when the query's `OR`s give several).
    Union,
}

/// The order a query asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// Fields, most significant first.
    pub fields: Vec<String>,
    /// Descending (all fields).
    pub descending: bool,
}

/// A query over one table: a conjunction of predicates, and of conditions with `OR`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The predicates, all of which must hold.
    pub predicates: Vec<Predicate>,
    /// Conditions that must hold besides the predicates: the `OR`s (and what they nest)
    /// of the query's `WHERE`, ANDed ([`Query::filter_where`] puts a plain conjunction in
    /// `predicates`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The fields returned; `None`: the whole record.
    pub projection: Option<Vec<String>>,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// The order of the result.
    pub order: Option<Order>,
    /// A forced plan.
    pub hint: Option<Hint>,
    /// How reads through an asynchronously maintained index treat changes the indexer has
    /// not applied yet (sync indexes are never behind, so it does not matter for them).
    #[serde(default)]
    pub consistency: Consistency,
}

/// What a read through an asynchronously maintained index may miss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Consistency {
    /// Read the index as it is, and re-check every row it names against the table: never a
    /// wrong row, but a row changed very recently may be missing (the default, as for
    /// DynamoDB's global secondary indexes).
    #[default]
    Eventual,
    /// Also fold in the changes still waiting in the outbox: the result equals a full scan's.
    Strong,
}

impl Query {
    /// Adds a predicate (they are ANDed).
    pub fn filter(mut self, predicate: Predicate) -> Self {
        self.predicates.push(predicate);
        self
    }

    /// Adds a condition (ANDed with the rest): its top-level `AND`ed predicates go to
    /// [`Query::predicates`], the rest to [`Query::conditions`]; an `OR` of `=` and `IN` on
    /// one field becomes one `IN`.
    pub fn filter_where(mut self, condition: impl Into<Condition>) -> Self {
        self.add_condition(condition.into());
        self
    }

    /// [`Query::filter_where`] in place.
    pub fn add_condition(&mut self, condition: Condition) {
        match condition.flattened() {
            Condition::Is(p) => self.predicates.push(p),
            Condition::All(cs) => {
                for c in cs {
                    self.add_condition(c);
                }
            }
            Condition::Any(cs) => match one_field_in_list(&cs) {
                Some(p) => self.predicates.push(p),
                None => self.conditions.push(Condition::Any(cs)),
            },
        }
    }

    /// The whole `WHERE`: the predicates and the conditions, ANDed.
    pub fn condition(&self) -> Condition {
        Condition::All(
            self.predicates
                .iter()
                .cloned()
                .map(Condition::Is)
                .chain(self.conditions.iter().cloned())
                .collect(),
        )
    }

    /// Whether the row whose field values `value_of` gives passes the predicates and
    /// the conditions.
    pub fn admits<'v>(&self, value_of: &impl Fn(&str) -> &'v Value) -> bool {
        self.predicates
            .iter()
            .all(|p| p.matches(value_of(&p.field)))
            && self.conditions.iter().all(|c| c.matches(value_of))
    }

    /// Every field the predicates and conditions test, with repeats.
    pub fn tested_fields(&self) -> impl Iterator<Item = &str> {
        self.predicates
            .iter()
            .map(|p| p.field.as_str())
            .chain(self.conditions.iter().flat_map(Condition::fields))
    }

    /// Returns only these fields.
    pub fn select(mut self, fields: impl FieldList) -> Self {
        self.projection = Some(fields.into_fields());
        self
    }

    /// Returns at most `n` rows.
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Orders the result by `fields`, ascending or descending.
    pub fn order_by(mut self, fields: impl FieldList, descending: bool) -> Self {
        self.order = Some(Order {
            fields: fields.into_fields(),
            descending,
        });
        self
    }

    /// Forces a plan.
    pub fn hint(mut self, hint: Hint) -> Self {
        self.hint = Some(hint);
        self
    }

    /// Sets the consistency of reads through async indexes.
    pub fn consistency(mut self, consistency: Consistency) -> Self {
        self.consistency = consistency;
        self
    }
}

/// `f = a OR f IN (b, c) OR …` as `f IN (a, b, c, …)`, when every member is an `=` or `IN`
/// on one field.
fn one_field_in_list(members: &[Condition]) -> Option<Predicate> {
    let mut field: Option<&str> = None;
    let mut values = Vec::new();
    for m in members {
        let Condition::Is(p) = m else { return None };
        if field.is_some_and(|f| f != p.field) {
            return None;
        }
        field = Some(&p.field);
        match &p.op {
            Op::Eq(v) => values.push(v.clone()),
            Op::In(vs) => values.extend(vs.iter().cloned()),
            _ => return None,
        }
    }
    Some(Predicate::in_list(field?, values))
}

/// How much of the record an index entry carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Projection {
    /// The indexed fields and the primary key: a read fetches the record.
    KeysOnly,
    /// Those plus these fields.
    Include(Vec<String>),
    /// The whole record.
    All,
}

/// Where an index's entries live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Beside the fact rows, in each shard: a lookup visits every shard.
    Local,
    /// Partitioned by index key: a lookup visits one shard.
    Global,
}

/// An index's life cycle; only `Ready` indexes are planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// Maintained by writes, not yet backfilled.
    WriteOnly,
    /// Being backfilled.
    Backfilling,
    /// Complete.
    Ready,
}

/// An index table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexInfo {
    /// Its name.
    pub name: String,
    /// Indexed fields, in order.
    pub fields: Vec<String>,
    /// What its entries carry.
    pub projection: Projection,
    /// Local or global.
    pub scope: Scope,
    /// Its state.
    pub state: IndexState,
}

impl IndexInfo {
    /// A ready, local index.
    pub fn new(name: &str, fields: &[&str], projection: Projection) -> Self {
        IndexInfo {
            name: name.into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            projection,
            scope: Scope::Local,
            state: IndexState::Ready,
        }
    }
}

/// A table as the planner sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableInfo {
    /// Its name.
    pub name: String,
    /// Primary-key fields, in order.
    pub primary_key: Vec<String>,
    /// Shards (at least 1).
    pub shards: u32,
    /// Its indexes.
    pub indexes: Vec<IndexInfo>,
}

impl TableInfo {
    /// A one-shard table.
    pub fn new(name: &str, primary_key: &[&str], indexes: Vec<IndexInfo>) -> Self {
        TableInfo {
            name: name.into(),
            primary_key: primary_key.iter().map(|f| f.to_string()).collect(),
            shards: 1,
            indexes,
        }
    }
}

/// A list of field names, as every call that takes one accepts it: `&["a", "b"]`, `["a"]`,
/// a slice or vector of `&str` or of `String` (owned or borrowed).
pub trait FieldList {
    /// The names, owned.
    fn into_fields(self) -> Vec<String>;
}

impl FieldList for &[&str] {
    fn into_fields(self) -> Vec<String> {
        self.iter().map(|f| (*f).to_owned()).collect()
    }
}

impl<const N: usize> FieldList for [&str; N] {
    fn into_fields(self) -> Vec<String> {
        self.iter().map(|f| (*f).to_owned()).collect()
    }
}

impl<const N: usize> FieldList for &[&str; N] {
    fn into_fields(self) -> Vec<String> {
        self.iter().map(|f| (*f).to_owned()).collect()
    }
}

impl FieldList for Vec<&str> {
    fn into_fields(self) -> Vec<String> {
        self.into_iter().map(str::to_owned).collect()
    }
}

impl FieldList for &Vec<&str> {
    fn into_fields(self) -> Vec<String> {
        self.as_slice().into_fields()
    }
}

impl FieldList for Vec<String> {
    fn into_fields(self) -> Vec<String> {
        self
    }
}

impl FieldList for &[String] {
    fn into_fields(self) -> Vec<String> {
        self.to_vec()
    }
}

impl FieldList for &Vec<String> {
    fn into_fields(self) -> Vec<String> {
        self.clone()
    }
}
