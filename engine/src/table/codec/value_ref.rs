//! `ValueRef`: a field's value read where its row is stored, its text and bytes borrowed.

use strata_planner::Value;

/// A field's value as a lent row gives it ([`RowRef::value`](crate::RowRef::value)):
/// booleans and numbers copied out, text and bytes borrowed from where the row lies, so a
/// reader that copies them on (into a record batch's buffers, a socket) copies them once.
#[derive(Clone, Copy, Debug)]
pub enum ValueRef<'a> {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A UTF-8 string (checked).
    Str(&'a str),
    /// Bytes.
    Bytes(&'a [u8]),
}

impl ValueRef<'_> {
    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, ValueRef::Null)
    }

    /// The value, owned.
    ///
    /// ```
    /// use strata::{Value, ValueRef};
    /// assert_eq!(ValueRef::Str("Ely").to_value(), Value::from("Ely"));
    /// assert_eq!(ValueRef::from(&Value::Int(7)).to_value(), Value::Int(7));
    /// ```
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Float(x) => Value::Float(x),
            ValueRef::Str(s) => Value::Str(s.to_owned()),
            ValueRef::Bytes(b) => Value::Bytes(b.to_vec()),
        }
    }
}

impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(value: &'a Value) -> ValueRef<'a> {
        match value {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::Float(x) => ValueRef::Float(*x),
            Value::Str(s) => ValueRef::Str(s),
            Value::Bytes(b) => ValueRef::Bytes(b),
        }
    }
}
