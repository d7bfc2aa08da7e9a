//! The open database's writes to its catalog (`docs/formats/catalog.md`): definitions
//! (`write_catalog`, each one synced write), table ids, statistics, the cost model, and the
//! row layouts a row's encoding adds before the row is written. The catalog is read once, at
//! open (the `open` room).

use strata_planner::{CostModel, TableStats};

use crate::error::{CatalogCorruption, Encoded, Error, Result};
use crate::lsm::{WriteBatch, WriteOptions};
use crate::table::codec::format::{CATALOG_COST_MODEL, CATALOG_NEXT_ID, CATALOG_STATS_PREFIX};
use crate::table::codec::record::Record;
use crate::table::db::{Shared, Table, catalog_corrupt, layout_key, lock};

impl Shared {
    /// The stored form of `record`, a row of `t`: version 3, by its layout, the layout added
    /// to the catalog (a synced write, before the row's) if the table does not have it yet.
    pub(crate) fn encode_row(&self, t: &Table, record: &Record) -> Result<Vec<u8>> {
        t.layouts.encode(record, |number, section| {
            self.persist_layout(t, number, section)
        })
    }

    /// The head of `record`'s stored form as a row of `t` ([`Shared::encode_row`]): version
    /// and layout number, or version and names where the table's layouts are full.
    pub(crate) fn row_head(&self, t: &Table, record: &Record) -> Result<Vec<u8>> {
        let head = t.layouts.head_for(record, |number, section| {
            self.persist_layout(t, number, section)
        })?;
        Ok(head.unwrap_or_else(|| record.head()))
    }

    /// Makes layout `number` of table `t` durable in the catalog.
    fn persist_layout(&self, t: &Table, number: u32, section: &[u8]) -> Result<()> {
        self.write_catalog(&[(layout_key(t.def.id, number), section.to_vec())], &[])
    }

    /// Writes catalog changes, synced.
    pub(crate) fn write_catalog(
        &self,
        puts: &[(String, Vec<u8>)],
        deletes: &[String],
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        for (k, v) in puts {
            batch.put(&self.catalog, k.as_bytes(), v)?;
        }
        for k in deletes {
            batch.delete(&self.catalog, k.as_bytes())?;
        }
        self.main.store.write(batch, WriteOptions::synced())?;
        Ok(())
    }

    /// The next table or index id.
    pub(crate) fn next_id(&self) -> Result<u64> {
        let stored = match self
            .main
            .store
            .get(&self.catalog, CATALOG_NEXT_ID.as_bytes())?
        {
            Some(v) => std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| {
                    catalog_corrupt(CATALOG_NEXT_ID.as_bytes(), CatalogCorruption::NextId)
                })?,
            None => 1,
        };
        let used = self
            .read_tables()
            .values()
            .flat_map(|t| std::iter::once(t.def.id).chain(t.def.indexes.iter().map(|ix| ix.id)))
            .max()
            .map_or(1, |m| m + 1);
        Ok(stored.max(used))
    }

    /// Stores `model` in the catalog and plans with it from now on; returns it as stored
    /// (as the catalog reads it back, so the constants are the same after reopen to the bit).
    pub(crate) fn store_cost_model(&self, model: CostModel) -> Result<CostModel> {
        let _ddl = lock(&self.ddl);
        let bad = |e: serde_json::Error| Error::InvalidArgument(format!("cost constants: {e}"));
        let bytes = serde_json::to_vec(&model).map_err(bad)?;
        let stored: CostModel = serde_json::from_slice(&bytes).map_err(bad)?;
        self.write_catalog(&[(CATALOG_COST_MODEL.to_owned(), bytes)], &[])?;
        *self.cost_model.write().unwrap_or_else(|p| p.into_inner()) = stored;
        Ok(stored)
    }

    /// Stores `stats`, of the analysis holding `ticket` (its [`AnalysisOrder`] ticket), as
    /// `table`'s statistics and plans with them from now on, and returns them; if an analysis
    /// of a later ticket, which read newer rows, has stored its own, stores nothing and
    /// returns those.
    ///
    /// [`AnalysisOrder`]: crate::table::stats::order::AnalysisOrder
    pub(crate) fn put_stats(
        &self,
        table: &str,
        id: u64,
        stats: TableStats,
        ticket: u64,
    ) -> Result<TableStats> {
        let _ddl = lock(&self.ddl);
        let current = self.handle(table)?;
        if current.def.id != id {
            return Err(Error::NotFound(format!(
                "table {table:?} (dropped while analysed)"
            )));
        }
        if current.analyses.superseded(ticket)
            && let Some(newer) = &current.stats
        {
            return Ok(newer.clone());
        }
        self.write_catalog(
            &[(
                format!("{CATALOG_STATS_PREFIX}{table}"),
                stats.encode().map_err(|e| Error::Encode {
                    what: Encoded::Statistics,
                    reason: match e {
                        strata_planner::StatsError::Encode(fault) => fault,
                        // `encode` fails only as above; any other kind reads as its data.
                        _ => strata_planner::JsonFault {
                            kind: strata_planner::JsonFaultKind::Data,
                            line: 0,
                            column: 0,
                        },
                    },
                })?,
            )],
            &[],
        )?;
        let mut table = current.with(current.def.clone(), None);
        table.stats = Some(stats.clone());
        self.publish(table);
        current.analyses.stored(ticket);
        Ok(stats)
    }
}
