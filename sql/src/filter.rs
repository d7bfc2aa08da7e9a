//! DataFusion's filter expressions as Strata conditions, where both mean the same.
//!
//! A filter is pushed down **exactly** (DataFusion drops it and trusts the scan) when it is
//! built from: a column compared with a literal (`=`, `!=`, `<`, `<=`, `>`, `>=`, either
//! side), `BETWEEN`, `IN` and `NOT IN` lists of literals, `IS [NOT] NULL`, `LIKE` and `NOT LIKE`
//! with a literal pattern (case-sensitive, `\` as the escape), and `AND`, `OR`, `NOT` of
//! those. Everything else stays in DataFusion.
//!
//! Only columns of one kind of value take comparisons: integers (`BIGINT`), text, booleans,
//! bytes. Strata orders values of different kinds by kind and tells `1` from `1.0`, where SQL
//! would compare a `DOUBLE` column's integers and floats as numbers; and floats (`-0.0`
//! against `0.0`, NaN) are compared by DataFusion. `IS [NOT] NULL` is pushed on any column:
//! NULL means the same to both. NULL literals are left to DataFusion. SQL's three-valued logic
//! is kept: Strata's conditions are false where SQL's are unknown, and `NOT` is pushed down to
//! the predicates by De Morgan's laws, each negated exactly (`Condition::negate`).

use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use strata::{Condition, Op, Predicate, Value};

use std::sync::Arc;

use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr as PhysicalBinary, Column as PhysicalColumn, InListExpr as PhysicalInList,
    Literal as PhysicalLiteral,
};

use crate::schema::{Column, ColumnType, TableSchema};

/// `expr` as a Strata condition, if it means the same there.
pub fn condition_of(expr: &Expr, schema: &TableSchema) -> Option<Condition> {
    condition_with(expr, schema, &[])
}

/// [`condition_of`] with `params` the values of its placeholders (`$1` is `params[0]`): a
/// placeholder converts as the literal of its value would.
pub fn condition_with(expr: &Expr, schema: &TableSchema, params: &[Value]) -> Option<Condition> {
    // The arms below convert their parts with the same values.
    let condition_of = |e: &Expr, schema: &TableSchema| condition_with(e, schema, params);
    let literal = |e: &Expr, kind: ColumnType| literal(e, kind, params);
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => Some(Condition::All(vec![
                condition_of(left, schema)?,
                condition_of(right, schema)?,
            ])),
            Operator::Or => Some(Condition::Any(vec![
                condition_of(left, schema)?,
                condition_of(right, schema)?,
            ])),
            _ => comparison(left, *op, right, schema, params),
        },
        Expr::Not(inner) => Some(condition_of(inner, schema)?.negate()),
        Expr::IsNull(inner) => Some(Condition::Is(Predicate::is_null(column_any(
            inner, schema,
        )?))),
        Expr::IsNotNull(inner) => Some(Condition::Is(Predicate::is_not_null(column_any(
            inner, schema,
        )?))),
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let (field, kind) = column_compared(expr, schema)?;
            let p = Predicate::between(field, literal(low, kind)?, literal(high, kind)?);
            Some(if *negated {
                p.negate()
            } else {
                Condition::Is(p)
            })
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let (field, kind) = column_compared(expr, schema)?;
            let values: Option<Vec<Value>> = list.iter().map(|v| literal(v, kind)).collect();
            let values = values?;
            Some(Condition::Is(if *negated {
                Predicate::not_in(field, values)
            } else {
                Predicate::in_list(field, values)
            }))
        }
        Expr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char,
            case_insensitive,
        }) => {
            let (field, kind) = column_compared(expr, schema)?;
            if kind != ColumnType::Text
                || *case_insensitive
                || escape_char.is_some_and(|c| c != '\\')
            {
                return None;
            }
            let Value::Str(pattern) = literal(pattern, kind)? else {
                return None;
            };
            Some(Condition::Is(if *negated {
                Predicate::not_like(field, &pattern)
            } else {
                Predicate::like(field, &pattern)
            }))
        }
        _ => None,
    }
}

/// Whether `expr` has placeholders (`$1` …): a conjunct of a prepared statement.
pub fn has_placeholders(expr: &Expr) -> bool {
    expr.exists(|e| Ok(matches!(e, Expr::Placeholder(_))))
        .unwrap_or(false)
}

/// Whether a conjunct with placeholders converts when each holds a value of the type
/// DataFusion inferred for it. A scan then takes it, to bind to each run's values; a run
/// whose values make it not convert (another type, a `LIKE` pattern that is no prefix) is
/// planned again with them as literals (`crate::prepared::Prepared`).
pub fn converts_with_placeholders(expr: &Expr, schema: &TableSchema) -> bool {
    let sample = expr.clone().transform(|e| match e {
        Expr::Placeholder(p) => {
            let Some(field) = &p.field else {
                return Err(DataFusionError::Plan(format!("no type for {}", p.id)));
            };
            let value = ScalarValue::new_default(field.data_type())?;
            Ok(Transformed::yes(Expr::Literal(value, None)))
        }
        other => Ok(Transformed::no(other)),
    });
    sample.is_ok_and(|s| condition_of(&s.data, schema).is_some())
}

/// `left op right` with a column on one side and a literal on the other.
fn comparison(
    left: &Expr,
    op: Operator,
    right: &Expr,
    schema: &TableSchema,
    params: &[Value],
) -> Option<Condition> {
    let (field, value, op) = match (
        column_compared(left, schema),
        column_compared(right, schema),
    ) {
        (Some((field, kind)), None) => (field, literal(right, kind, params)?, op),
        (None, Some((field, kind))) => (field, literal(left, kind, params)?, op.swap()?),
        _ => return None,
    };
    let op = match op {
        Operator::Eq => Op::Eq(value),
        Operator::NotEq => Op::Ne(value),
        Operator::Lt => Op::Lt(value),
        Operator::LtEq => Op::Le(value),
        Operator::Gt => Op::Gt(value),
        Operator::GtEq => Op::Ge(value),
        _ => return None,
    };
    Some(Condition::Is(Predicate::new(field, op)))
}

/// The column `expr` names, if it is a column of this table whose values compare alike in
/// Strata and in SQL, with its type.
fn column_compared<'s>(expr: &Expr, schema: &'s TableSchema) -> Option<(&'s str, ColumnType)> {
    let Expr::Column(c) = expr else { return None };
    let column = schema.column(&c.name)?;
    let comparable = !column.mixed && column.kind != ColumnType::Float;
    comparable.then_some((column.name.as_str(), column.kind))
}

/// The column `expr` names, of any type (for `IS [NOT] NULL`).
fn column_any<'s>(expr: &Expr, schema: &'s TableSchema) -> Option<&'s str> {
    let Expr::Column(c) = expr else { return None };
    schema.column(&c.name).map(|c| c.name.as_str())
}

/// The literal `expr` as a Strata value of a column of type `kind`, if it is one (not NULL).
fn literal(expr: &Expr, kind: ColumnType, params: &[Value]) -> Option<Value> {
    match expr {
        Expr::Literal(v, _) => scalar_value(v, kind),
        Expr::Placeholder(p) => {
            let value = crate::values::param(&p.id, params).ok()?;
            fits(kind, value).then(|| value.clone())
        }
        _ => None,
    }
}

/// Whether `value` is a value of a column of type `kind` (not NULL).
fn fits(kind: ColumnType, value: &Value) -> bool {
    matches!(
        (kind, value),
        (ColumnType::Int, Value::Int(_))
            | (ColumnType::Text, Value::Str(_))
            | (ColumnType::Bool, Value::Bool(_))
            | (ColumnType::Bytes, Value::Bytes(_))
    )
}

/// `v` as a Strata value of a column of type `kind`, if it is one (not NULL).
fn scalar_value(v: &ScalarValue, kind: ColumnType) -> Option<Value> {
    let int = |x: Option<i64>| x.map(Value::Int);
    let value = match v {
        ScalarValue::Int8(x) => int(x.map(i64::from)),
        ScalarValue::Int16(x) => int(x.map(i64::from)),
        ScalarValue::Int32(x) => int(x.map(i64::from)),
        ScalarValue::Int64(x) => int(*x),
        ScalarValue::UInt8(x) => int(x.map(i64::from)),
        ScalarValue::UInt16(x) => int(x.map(i64::from)),
        ScalarValue::UInt32(x) => int(x.map(i64::from)),
        ScalarValue::UInt64(x) => x.and_then(|x| i64::try_from(x).ok()).map(Value::Int),
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
            s.clone().map(Value::Str)
        }
        ScalarValue::Boolean(b) => b.map(Value::Bool),
        ScalarValue::Binary(b) | ScalarValue::LargeBinary(b) | ScalarValue::BinaryView(b) => {
            b.clone().map(Value::Bytes)
        }
        _ => None,
    }?;
    fits(kind, &value).then_some(value)
}

/// The conjuncts of a physical filter Strata evaluates as SQL does — comparisons of a
/// column with a literal, `IN` lists of literals, `AND`s of them — as Strata conditions;
/// the rest are left out, so the conditions hold for a superset of the rows the filter
/// keeps. `columns` are the scan's output, which the filter's columns index. For a hash
/// join's dynamic filter (its build side's keys as an `IN` list, or their bounds): the join
/// keeps checking its keys, so narrowing the scan to a superset of its matches is safe.
pub fn conditions_of_physical(
    expr: &Arc<dyn PhysicalExpr>,
    columns: &[Column],
    schema: &TableSchema,
    out: &mut Vec<Condition>,
) {
    let column = |e: &Arc<dyn PhysicalExpr>| -> Option<(&str, ColumnType)> {
        let c = e.downcast_ref::<PhysicalColumn>()?;
        let name = &columns.get(c.index())?.name;
        let column = schema.column(name)?;
        (!column.mixed && column.kind != ColumnType::Float)
            .then_some((column.name.as_str(), column.kind))
    };
    let value = |e: &Arc<dyn PhysicalExpr>, kind| {
        e.downcast_ref::<PhysicalLiteral>()
            .and_then(|l| scalar_value(l.value(), kind))
    };
    if let Some(binary) = expr.downcast_ref::<PhysicalBinary>() {
        let (left, op, right) = (binary.left(), *binary.op(), binary.right());
        if op == Operator::And {
            conditions_of_physical(left, columns, schema, out);
            conditions_of_physical(right, columns, schema, out);
            return;
        }
        let (field, v, op) = match (column(left), column(right)) {
            (Some((f, k)), _) => match value(right, k) {
                Some(v) => (f, v, op),
                None => return,
            },
            (None, Some((f, k))) => match (value(left, k), op.swap()) {
                (Some(v), Some(op)) => (f, v, op),
                _ => return,
            },
            (None, None) => return,
        };
        let p = match op {
            Operator::Eq => Predicate::eq(field, v),
            Operator::Lt => Predicate::lt(field, v),
            Operator::LtEq => Predicate::le(field, v),
            Operator::Gt => Predicate::gt(field, v),
            Operator::GtEq => Predicate::ge(field, v),
            _ => return,
        };
        out.push(Condition::Is(p));
    } else if let Some(list) = expr.downcast_ref::<PhysicalInList>() {
        if list.negated() {
            return;
        }
        let Some((field, kind)) = column(list.expr()) else {
            return;
        };
        // A NULL in the list matches no row (a hash join's keys include the NULLs of a
        // sparse column): the others still name the rows to read.
        let values: Option<Vec<Value>> = list
            .list()
            .iter()
            .filter(|e| {
                !e.downcast_ref::<PhysicalLiteral>()
                    .is_some_and(|l| l.value().is_null())
            })
            .map(|e| value(e, kind))
            .collect();
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            out.push(Condition::Is(Predicate::in_list(field, values)));
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{col, lit, not};

    use super::*;
    use crate::schema::Column;

    fn schema() -> TableSchema {
        let column = |name: &str, kind, mixed| Column {
            name: name.into(),
            kind,
            mixed,
        };
        TableSchema {
            table: "t".into(),
            primary_key: vec!["id".into()],
            columns: vec![
                column("id", ColumnType::Int, false),
                column("town", ColumnType::Text, false),
                column("score", ColumnType::Float, false),
                column("odd", ColumnType::Text, true),
            ],
        }
    }

    fn pushed(e: Expr) -> Option<String> {
        condition_of(&e, &schema()).map(|c| c.to_string())
    }

    /// A prepared statement's placeholders convert as their values' literals would, and a
    /// value of another type, NULL or no value at all does not convert (the run is then
    /// planned again with its values as literals).
    #[test]
    fn placeholders_convert_as_their_values_do() {
        use datafusion::arrow::datatypes::{DataType, Field};
        use datafusion::logical_expr::expr::Placeholder;
        let placeholder = |id: &str, data_type: DataType| {
            Expr::Placeholder(Placeholder::new_with_field(
                id.into(),
                Some(Arc::new(Field::new(id, data_type, true))),
            ))
        };
        let e = col("town")
            .eq(placeholder("$1", DataType::Utf8))
            .and(col("id").between(placeholder("$2", DataType::Int64), lit(9i64)));
        let with = |params: &[Value]| condition_with(&e, &schema(), params).map(|c| c.to_string());
        assert_eq!(
            with(&[Value::from("Ely"), Value::Int(3)]).as_deref(),
            Some("town = 'Ely' AND id BETWEEN 3 AND 9")
        );
        assert_eq!(with(&[Value::from("Ely"), Value::from("3")]), None);
        assert_eq!(with(&[Value::Null, Value::Int(3)]), None);
        assert_eq!(with(&[Value::from("Ely")]), None);
        assert!(has_placeholders(&e));
        assert!(converts_with_placeholders(&e, &schema()));
        // A float column takes no comparison, whatever the value.
        let score = col("score").gt(placeholder("$1", DataType::Float64));
        assert!(!converts_with_placeholders(&score, &schema()));
        // A placeholder without a type: not taken.
        let untyped = col("id").eq(Expr::Placeholder(Placeholder::new_with_field(
            "$1".into(),
            None,
        )));
        assert!(!converts_with_placeholders(&untyped, &schema()));
    }

    #[test]
    fn what_means_the_same_is_pushed_and_nothing_else() {
        assert_eq!(pushed(col("id").gt(lit(5i64))).as_deref(), Some("id > 5"));
        // The literal on the left: the comparison turns round.
        assert_eq!(pushed(lit(5i32).lt(col("id"))).as_deref(), Some("id > 5"));
        assert_eq!(
            pushed(not(col("town")
                .eq(lit("Ely"))
                .or(col("id").lt_eq(lit(3i64)))))
            .as_deref(),
            Some("town != 'Ely' AND id > 3")
        );
        assert_eq!(
            pushed(col("town").like(lit("E%"))).as_deref(),
            Some("town LIKE 'E%'")
        );
        assert_eq!(
            pushed(col("score").is_null()).as_deref(),
            Some("score IS NULL")
        );
        // Floats, mixed kinds, case-insensitive patterns, a literal of another type, NULL
        // literals and expressions of columns stay in DataFusion.
        for e in [
            col("score").gt(lit(2.5)),
            col("odd").eq(lit("x")),
            col("town").ilike(lit("e%")),
            col("id").eq(lit("5")),
            col("id").eq(lit(ScalarValue::Int64(None))),
            (col("id") + lit(1i64)).gt(lit(5i64)),
            col("town").eq(col("odd")),
            col("id").gt(lit(1i64)).and(col("score").gt(lit(2.5))),
        ] {
            assert_eq!(pushed(e.clone()), None, "{e}");
        }
    }
}
