//! The catalog room: table and index definitions and their stored form, and what a
//! definition makes of a row — its primary key and index entries ([`entry`]) and, back, the
//! rows a query reads straight from index entries (`covering`). Uses only the `codec` room.
//!
//! The definitions and their statistics are stored in the system column family
//! `sys/catalog` (`docs/formats/catalog.md`).
//!
//! 1. `table/<name>` → the table's definition as JSON (its indexes and their states inside),
//!    with a `format` number this build refuses when newer.
//! 2. `stats/<name>` → the table's statistics in the planner's stored form.
//! 3. `next_id` → the next table id, decimal: a dropped and recreated table gets a new id, so
//!    a writer that read the old definition can tell.
//!
//! Every change is one synced write. Column families are created before the definition that
//! names them and dropped after it is gone, so a crash between the two leaves only a family
//! no definition names, which `Db::open` drops.

// Public for the fuzz targets and white-box tests (their formats), not part of the API.
pub mod columns;
pub(crate) mod covering;
#[doc(hidden)]
pub mod entry;

pub use columns::{ColumnDef, ColumnType};

pub use crate::table::codec::field_names::validate_field;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strata_planner::stats::MAX_STATISTICS_TARGET;
use strata_planner::{FieldList, IndexInfo, IndexState, JsonFault, Projection, Scope, TableInfo};

use crate::error::{CatalogCorruption, DefinitionFault, Encoded, Error, Result};
use crate::table::codec::format::{
    CATALOG_FORMAT, FACT_CF_PREFIX, INDEX_CF_PREFIX, MAX_INDEXES, MAX_KEY_FIELDS, MAX_NAME_BYTES,
    MAX_SHARDS,
};
use crate::table::codec::key::KeyFormat;

/// A table's definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    /// The catalog format it was written in.
    pub format: u32,
    /// A number no other table of this database had.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Primary-key fields, in order.
    pub primary_key: Vec<String>,
    /// Number of shards, 1 to [`MAX_SHARDS`]: a row lives in shard
    /// `hash(encoded primary key) mod shards` (`docs/formats/records.md`).
    #[serde(default = "one_shard")]
    pub shards: u32,
    /// Its indexes, in creation order.
    pub indexes: Vec<IndexDef>,
    /// How its keys (rows' and index entries') write numbers: a [`KeyFormat`] number, 1 for a
    /// table created before key format 2 (absent: 1), fixed for the table's life.
    #[serde(default = "key_format_1")]
    pub keys: u32,
    /// What `analyze` gathers beyond its defaults (absent: nothing; catalog format 4).
    #[serde(default, skip_serializing_if = "StatisticsOptions::is_empty")]
    pub statistics: StatisticsOptions,
    /// Its declared columns ([`columns`]); empty: any fields (absent: none; catalog
    /// format 5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnDef>,
}

/// What `analyze` gathers for a table beyond its defaults: PostgreSQL's `CREATE STATISTICS`
/// (field groups) and `ALTER COLUMN … SET STATISTICS` (per-field targets).
///
/// ```
/// # use strata::{Db, Options, StatisticsOptions, TableOptions};
/// # let dir = tempfile::tempdir()?;
/// # let db = Db::open(dir.path(), Options::default())?;
/// db.create_table("flights", ["id"], TableOptions::default())?;
/// db.set_statistics(
///     "flights",
///     StatisticsOptions::default().group(["origin", "carrier"]).target("tailnum", 1_000),
/// )?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatisticsOptions {
    /// Field groups (2 to [`MAX_GROUP_FIELDS`] fields) whose distinct counts and most common
    /// combinations are gathered as an index's fields' are: the planner then estimates `=`
    /// and `IN` on all of a group's fields together, not as independent events (an airport
    /// and the airlines that fly from it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Vec<String>>,
    /// Fields whose statistics target is not the default 100: the most-common list keeps up
    /// to this many values (1 to 10,000), from a sample of 300 rows per unit. Raise it for a
    /// field with thousands of values whose frequencies fall off slowly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, usize>,
}

/// The most fields a declared statistics group may have.
pub const MAX_GROUP_FIELDS: usize = 8;
/// The most groups a table may declare.
pub const MAX_GROUPS: usize = 32;

impl StatisticsOptions {
    /// Whether it asks for nothing beyond the defaults.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.targets.is_empty()
    }

    /// These options, also gathering statistics on the group `fields`.
    pub fn group(mut self, fields: impl FieldList) -> Self {
        self.groups.push(fields.into_fields());
        self
    }

    /// These options, with statistics target `target` for `field`.
    pub fn target(mut self, field: &str, target: usize) -> Self {
        self.targets.insert(field.to_owned(), target);
        self
    }

    /// Checks the fields, the groups' sizes and the targets' range.
    pub fn validate(&self) -> Result<()> {
        if self.groups.len() > MAX_GROUPS {
            return Err(Error::InvalidArgument(format!(
                "a table declares at most {MAX_GROUPS} statistics groups"
            )));
        }
        for group in &self.groups {
            if !(2..=MAX_GROUP_FIELDS).contains(&group.len()) {
                return Err(Error::InvalidArgument(format!(
                    "a statistics group has 2 to {MAX_GROUP_FIELDS} fields, got {}",
                    group.len()
                )));
            }
            validate_fields("statistics group", group)?;
        }
        for (field, &target) in &self.targets {
            validate_field(field)?;
            if !(1..=MAX_STATISTICS_TARGET).contains(&target) {
                return Err(Error::InvalidArgument(format!(
                    "a statistics target is 1 to {MAX_STATISTICS_TARGET}, got {target} for {field:?}"
                )));
            }
        }
        Ok(())
    }
}

fn one_shard() -> u32 {
    1
}

fn key_format_1() -> u32 {
    KeyFormat::F64.number()
}

fn local() -> Scope {
    Scope::Local
}

/// How an index is kept up to date with its table's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Maintenance {
    /// In the same atomic batch as the row: the index is never behind.
    #[default]
    Sync,
    /// Through the fact shard's outbox, applied by the background indexer: writes are cheaper
    /// and the index may lag (`Db::index_lag`, `Db::wait_for_indexes`).
    Async,
}

/// How a table is created, for [`crate::Db::create_table`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableOptions {
    /// Shards, 1 to 256 (default 1): each row lives in the shard its primary key hashes to,
    /// and each shard is its own store, with its own log, in the database directory's
    /// `shard-<n>` (or where `Options::shard_dirs` says).
    pub shards: u32,
    /// Declared columns (default none: rows may have any fields): every write is held to
    /// them ([`columns`]).
    pub columns: Vec<ColumnDef>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            shards: 1,
            columns: Vec::new(),
        }
    }
}

impl TableOptions {
    /// With `shards` shards.
    pub fn shards(mut self, shards: u32) -> Self {
        self.shards = shards;
        self
    }

    /// With the declared columns `columns`.
    pub fn columns(mut self, columns: Vec<ColumnDef>) -> Self {
        self.columns = columns;
        self
    }
}

/// What an index's entries carry and where and how it is maintained, for
/// [`crate::Db::create_index`]. A [`Projection`] converts into the default options with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexOptions {
    /// What each entry carries besides the key (default [`Projection::KeysOnly`]).
    pub projection: Projection,
    /// Local (beside each shard's rows) or global (partitioned by the index's leading field).
    pub scope: Scope,
    /// Sync or async.
    pub maintenance: Maintenance,
    /// No two rows may have the same value (all the index's fields non-`NULL` and equal): an
    /// insert or update that would make one fails, writing nothing. Must be sync.
    pub unique: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions::local()
    }
}

impl IndexOptions {
    /// A local index maintained in the row's batch (the default).
    pub fn local() -> Self {
        IndexOptions {
            scope: Scope::Local,
            maintenance: Maintenance::Sync,
            unique: false,
            projection: Projection::KeysOnly,
        }
    }

    /// A local index maintained through the outbox.
    pub fn local_async() -> Self {
        IndexOptions {
            scope: Scope::Local,
            maintenance: Maintenance::Async,
            unique: false,
            projection: Projection::KeysOnly,
        }
    }

    /// A global index: partitioned by its leading field across the table's shards, maintained
    /// through the outbox (or, with [`IndexOptions::sync`], in the row's commit, which then
    /// spans the shard stores involved).
    pub fn global() -> Self {
        IndexOptions {
            scope: Scope::Global,
            maintenance: Maintenance::Async,
            unique: false,
            projection: Projection::KeysOnly,
        }
    }

    /// Maintained in the row's own commit: never behind the rows.
    pub fn sync(mut self) -> Self {
        self.maintenance = Maintenance::Sync;
        self
    }

    /// Unique: see [`IndexOptions::unique`]. Needs [`IndexOptions::sync`] (an async index
    /// cannot check at write time; creating one is refused).
    pub fn unique(mut self) -> Self {
        self.unique = true;
        self
    }

    /// Entries carrying `projection`.
    pub fn projection(mut self, projection: Projection) -> Self {
        self.projection = projection;
        self
    }

    /// Entries carrying `fields` besides the key: a covering index for them
    /// ([`Projection::Include`]).
    pub fn include(self, fields: impl strata_planner::FieldList) -> Self {
        self.projection(Projection::Include(fields.into_fields()))
    }
}

impl From<Projection> for IndexOptions {
    /// A local, sync index whose entries carry `projection`.
    fn from(projection: Projection) -> Self {
        IndexOptions::local().projection(projection)
    }
}

/// An index's definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    /// A number no other table or index of this database had: outbox entries name the index
    /// by it, so one dropped and recreated under the same name is never confused with it.
    #[serde(default)]
    pub id: u64,
    /// Its name, unique within the table.
    pub name: String,
    /// Indexed fields, in order.
    pub fields: Vec<String>,
    /// What its entries carry besides the keys.
    pub projection: Projection,
    /// Where it is in its life cycle.
    pub state: IndexState,
    /// Local or global.
    #[serde(default = "local")]
    pub scope: Scope,
    /// Sync or async.
    #[serde(default)]
    pub maintenance: Maintenance,
    /// No two rows share a value (catalog format 2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unique: bool,
}

impl IndexDef {
    /// Whether it needs catalog format 2: unique, or global and sync over several shards (a
    /// build that reads only format 1 would maintain it wrongly, so it must refuse it).
    fn needs_format_2(&self, shards: u32) -> bool {
        self.unique || (self.scope == Scope::Global && shards > 1 && !self.is_async())
    }

    /// Whether its entries can be behind the rows (maintained through the outbox).
    pub fn is_async(&self) -> bool {
        self.maintenance == Maintenance::Async
    }
}

impl TableDef {
    /// How the table's keys write numbers (a definition that passed [`TableDef::validate`]
    /// names a format this build knows).
    pub fn key_format(&self) -> KeyFormat {
        KeyFormat::from_number(self.keys).unwrap_or(KeyFormat::F64)
    }

    /// The name of the fact column family.
    pub fn fact_cf(&self) -> String {
        fact_cf(&self.name)
    }

    /// The table as the planner sees it: only `Ready` indexes are planned, but the planner
    /// is told of the others so a hint naming one gets a clear error. An async index is shown
    /// as keys-only: its entries may be behind, so every read through it fetches the row and
    /// re-checks it, whatever the entry carries.
    pub fn planner_info(&self) -> TableInfo {
        TableInfo {
            name: self.name.clone(),
            primary_key: self.primary_key.clone(),
            shards: self.shards,
            indexes: self
                .indexes
                .iter()
                .map(|ix| IndexInfo {
                    name: ix.name.clone(),
                    fields: ix.fields.clone(),
                    projection: if ix.is_async() {
                        Projection::KeysOnly
                    } else {
                        ix.projection.clone()
                    },
                    scope: if self.shards > 1 {
                        ix.scope
                    } else {
                        Scope::Local
                    },
                    state: ix.state,
                })
                .collect(),
        }
    }

    /// The oldest catalog format that holds this definition: 5 with declared columns, 4 with
    /// statistics options, 3 for keys of format 2, 2 for a unique index or a global sync index
    /// over shards, else 1.
    pub fn needed_format(&self) -> u32 {
        if !self.columns.is_empty() {
            5
        } else if !self.statistics.is_empty() {
            4
        } else if self.keys > 1 {
            3
        } else if self.indexes.iter().any(|ix| ix.needs_format_2(self.shards)) {
            2
        } else {
            1
        }
    }

    /// The stored form.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let needed = self.needed_format();
        if self.format < needed {
            let mut newer = self.clone();
            newer.format = needed;
            return newer.encode();
        }
        serde_json::to_vec(self).map_err(|e| Error::Encode {
            what: Encoded::TableDefinition,
            reason: JsonFault::from(&e),
        })
    }

    /// Parses and checks a stored definition.
    pub fn decode(bytes: &[u8]) -> std::result::Result<TableDef, CatalogCorruption> {
        #[derive(Deserialize)]
        struct Format {
            format: u32,
        }
        let malformed = |e: serde_json::Error| {
            CatalogCorruption::Definition(DefinitionFault::Json(JsonFault::from(&e)))
        };
        let format: Format = serde_json::from_slice(bytes).map_err(malformed)?;
        if format.format > CATALOG_FORMAT {
            return Err(CatalogCorruption::NewerFormat {
                found: format.format,
                supported: CATALOG_FORMAT,
            });
        }
        let def: TableDef = serde_json::from_slice(bytes).map_err(malformed)?;
        def.validate()
            .map_err(|_| CatalogCorruption::Definition(DefinitionFault::Invalid))?;
        // Every build wrote a definition in the format its contents need, so a lower number is
        // damage (and a build that knows only that format would misread the table).
        if def.format < def.needed_format() {
            return Err(CatalogCorruption::Definition(
                DefinitionFault::FormatTooOld {
                    marked: def.format,
                    needed: def.needed_format(),
                },
            ));
        }
        Ok(def)
    }

    /// Checks names, field lists and limits.
    pub fn validate(&self) -> Result<()> {
        validate_name("table", &self.name)?;
        self.statistics.validate()?;
        validate_fields("primary key", &self.primary_key)?;
        columns::validate_columns(&self.columns, &self.primary_key)?;
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(Error::InvalidArgument(format!(
                "a table has 1 to {MAX_SHARDS} shards, got {}",
                self.shards
            )));
        }
        if KeyFormat::from_number(self.keys).is_none() {
            return Err(Error::InvalidArgument(format!(
                "table {:?} names key format {}, which this build does not know",
                self.name, self.keys
            )));
        }
        if self.indexes.len() > MAX_INDEXES {
            return Err(Error::InvalidArgument(format!(
                "a table has at most {MAX_INDEXES} indexes"
            )));
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            validate_name("index", &ix.name)?;
            validate_fields("index", &ix.fields)?;
            if let Projection::Include(extra) = &ix.projection {
                for f in extra {
                    validate_field(f)?;
                }
            }
            if ix.unique && ix.is_async() {
                return Err(Error::InvalidArgument(format!(
                    "index {:?} is unique and async: an index maintained after the write \
                     cannot refuse a duplicate at write time; make it sync",
                    ix.name
                )));
            }
            if self.indexes[..i].iter().any(|other| other.name == ix.name) {
                return Err(Error::InvalidArgument(format!(
                    "index {:?} is defined twice",
                    ix.name
                )));
            }
        }
        Ok(())
    }
}

/// The fact column family of table `name`.
pub fn fact_cf(table: &str) -> String {
    format!("{FACT_CF_PREFIX}{table}")
}

/// The column family of index `index` on `table`.
pub fn index_cf(table: &str, index: &str) -> String {
    format!("{INDEX_CF_PREFIX}{table}/{index}")
}

/// Table and index names: 1 to 64 bytes of ASCII letters, digits and `_`, not starting with
/// a digit — safe in column family names, file listings and the command line.
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} name {name:?} must be 1 to {MAX_NAME_BYTES} ASCII letters, digits or '_', \
             not starting with a digit"
        )))
    }
}

fn validate_fields(what: &str, fields: &[String]) -> Result<()> {
    if fields.is_empty() || fields.len() > MAX_KEY_FIELDS {
        return Err(Error::InvalidArgument(format!(
            "{what} needs 1 to {MAX_KEY_FIELDS} fields, got {}",
            fields.len()
        )));
    }
    for (i, f) in fields.iter().enumerate() {
        validate_field(f)?;
        if fields[..i].contains(f) {
            return Err(Error::InvalidArgument(format!(
                "{what} names field {f:?} twice"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> TableDef {
        TableDef {
            format: 3,
            id: 7,
            name: "customers".into(),
            primary_key: vec!["id".into()],
            shards: 3,
            keys: KeyFormat::NEWEST.number(),
            indexes: vec![IndexDef {
                id: 8,
                name: "by_town".into(),
                fields: vec!["town".into(), "last".into()],
                projection: Projection::Include(vec!["first".into()]),
                state: IndexState::Ready,
                scope: Scope::Global,
                maintenance: Maintenance::Async,
                unique: false,
            }],
            statistics: StatisticsOptions::default(),
            columns: Vec::new(),
        }
    }

    #[test]
    fn definitions_round_trip() {
        let d = def();
        assert_eq!(TableDef::decode(&d.encode().unwrap()).unwrap(), d);
    }

    #[test]
    fn newer_formats_and_bad_names_are_refused() {
        let mut d = def();
        d.format = CATALOG_FORMAT + 1;
        assert_eq!(
            TableDef::decode(&d.encode().unwrap()),
            Err(CatalogCorruption::NewerFormat {
                found: CATALOG_FORMAT + 1,
                supported: CATALOG_FORMAT
            })
        );
        let mut d = def();
        d.name = "bad name".into();
        assert!(matches!(
            TableDef::decode(&d.encode().unwrap()),
            Err(CatalogCorruption::Definition(_))
        ));
        assert!(matches!(
            TableDef::decode(b"{"),
            Err(CatalogCorruption::Definition(_))
        ));
        assert!(matches!(
            validate_name("table", "9lives"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            validate_name("table", ""),
            Err(Error::InvalidArgument(_))
        ));
        assert!(validate_name("table", "orders_2024").is_ok());
        let mut d = def();
        d.shards = 0;
        assert!(matches!(d.validate(), Err(Error::InvalidArgument(_))));
        let mut d = def();
        d.indexes[0].unique = true;
        assert!(
            d.validate()
                .unwrap_err()
                .to_string()
                .contains("cannot refuse a duplicate")
        );
        d.indexes[0].maintenance = Maintenance::Sync;
        assert!(d.validate().is_ok(), "a sync unique global index");
    }

    #[test]
    fn unique_and_sync_global_indexes_are_written_as_format_2() {
        let format = |d: &TableDef| {
            let v: serde_json::Value = serde_json::from_slice(&d.encode().unwrap()).unwrap();
            v["format"].as_u64().unwrap()
        };
        let mut d = def();
        d.format = 1;
        d.keys = 1;
        assert_eq!(format(&d), 1, "an async global index is format 1");
        d.indexes[0].maintenance = Maintenance::Sync;
        assert_eq!(format(&d), 2, "sync global over 3 shards");
        d.shards = 1;
        assert_eq!(format(&d), 1, "sync global over one shard is local");
        d.indexes[0].unique = true;
        assert_eq!(format(&d), 2);
        let read = TableDef::decode(&d.encode().unwrap()).unwrap();
        assert!(read.indexes[0].unique);
    }

    /// Statistics options make a definition format 4 (a format-3 build refuses it instead of
    /// dropping them when it rewrites the definition); one marked older is damage; empty
    /// options leave the format as it was and are not written.
    #[test]
    fn statistics_options_are_written_as_format_4() {
        let mut d = def();
        d.statistics = StatisticsOptions::default()
            .group(["town", "last"])
            .target("last", 1_000);
        let stored: serde_json::Value = serde_json::from_slice(&d.encode().unwrap()).unwrap();
        assert_eq!(stored["format"], 4);
        assert_eq!(stored["statistics"]["groups"][0][1], "last");
        assert_eq!(stored["statistics"]["targets"]["last"], 1_000);
        let read = TableDef::decode(&d.encode().unwrap()).unwrap();
        assert_eq!(read.statistics, d.statistics);
        let mut marked = stored.clone();
        marked["format"] = 3.into();
        assert!(matches!(
            TableDef::decode(&serde_json::to_vec(&marked).unwrap()),
            Err(CatalogCorruption::Definition(
                DefinitionFault::FormatTooOld {
                    marked: 3,
                    needed: 4
                }
            ))
        ));
        let plain: serde_json::Value = serde_json::from_slice(&def().encode().unwrap()).unwrap();
        assert_eq!(plain["format"], 3);
        assert!(plain.get("statistics").is_none());
        for bad in [
            StatisticsOptions::default().group(["a"]),
            StatisticsOptions::default().group(["a", "a"]),
            StatisticsOptions::default().group(["a", ""]),
            StatisticsOptions::default().target("a", 0),
            StatisticsOptions::default().target("a", 10_001),
        ] {
            assert!(
                matches!(bad.validate(), Err(Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }

    /// A table of key format 2 is format 3, which a build that would misread its keys (one
    /// that knows catalog formats up to 2) refuses; a definition without `keys` is format 1.
    #[test]
    fn compact_keys_are_written_as_format_3_and_old_definitions_read_as_key_format_1() {
        let d = def();
        let stored: serde_json::Value = serde_json::from_slice(&d.encode().unwrap()).unwrap();
        assert_eq!(stored["format"], 3);
        assert_eq!(stored["keys"], 2);
        assert_eq!(
            TableDef::decode(&d.encode().unwrap()).unwrap().key_format(),
            KeyFormat::Compact
        );
        let old = br#"{"format":1,"id":3,"name":"t","primary_key":["id"],"indexes":[]}"#;
        let read = TableDef::decode(old).unwrap();
        assert_eq!((read.keys, read.key_format()), (1, KeyFormat::F64));
        let unknown =
            br#"{"format":3,"id":3,"name":"t","primary_key":["id"],"indexes":[],"keys":7}"#;
        assert!(matches!(
            TableDef::decode(unknown),
            Err(CatalogCorruption::Definition(DefinitionFault::Invalid))
        ));
    }

    #[test]
    fn definitions_without_shard_fields_read_as_one_shard_local_sync() {
        let json = br#"{"format":1,"id":3,"name":"t","primary_key":["id"],
            "indexes":[{"name":"by_x","fields":["x"],"projection":"KeysOnly","state":"Ready"}]}"#;
        let d = TableDef::decode(json).unwrap();
        assert_eq!(d.shards, 1);
        assert_eq!(d.indexes[0].scope, Scope::Local);
        assert_eq!(d.indexes[0].maintenance, Maintenance::Sync);
    }
}
