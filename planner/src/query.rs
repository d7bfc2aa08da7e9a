//! What the planner is asked: a query over one table, and what it knows of the table.

use serde::{Deserialize, Serialize};

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
        }
    }
}

/// A forced plan, for tests and for users who know better.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Hint {
    /// Use this index.
    Index(String),
    /// Scan the table.
    Scan,
}

/// The order a query asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// Fields, most significant first.
    pub fields: Vec<String>,
    /// Descending (all fields).
    pub descending: bool,
}

/// A query over one table: a conjunction of predicates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The predicates, all of which must hold.
    pub predicates: Vec<Predicate>,
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
