//! What a reader does when it meets damage. See `docs/formats/wal.md` for a longer discussion.

/// The policy a [`crate::LogReader`] applies to damaged regions.
///
/// *Damage* is anything the writer would not have produced: a checksum mismatch, a truncated
/// fragment, zero-filled space, stale fragments of another log, an incomplete record. The
/// *durable point* is the largest offset known to have been on stable storage: the largest one
/// attested by an intact sync marker anywhere in the log, or the `known_durable` length the
/// caller supplies, whichever is larger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RecoveryMode {
    /// Damage at or after the durable point is a torn tail: the log ends there quietly, and the
    /// dropped bytes are reported as one skipped region. Damage before it is
    /// [`crate::Error::Corruption`].
    ///
    /// Pick it for a store's own log after a crash: a process or power failure leaves a tail of
    /// writes that were never acknowledged as durable, and dropping them breaks no promise,
    /// while damage to acknowledged data means the disk or something else is broken, and the
    /// store should refuse to open rather than silently forget committed writes.
    #[default]
    TolerateTornTail,
    /// Any damage, anywhere, is [`crate::Error::Corruption`].
    ///
    /// Pick it for a log that is known to have been closed cleanly (after an orderly shutdown,
    /// a log shipped whole to a replica, a test), or when any loss must stop the system for a
    /// person to look at.
    AbsoluteConsistency,
    /// Stop at the first damage and keep the records before it, whatever the durable point;
    /// never an error. The dropped bytes are reported as one skipped region.
    ///
    /// Pick it when a consistent prefix matters more than every acknowledged write: a replica
    /// that will catch up from its leader, a cache, a store whose data also lives elsewhere.
    PointInTime,
    /// Skip each damaged region, report it, and go on reading; never an error.
    ///
    /// Pick it to salvage what can be read: disaster recovery, forensic tools. Records after a
    /// hole may depend on records lost in it, so the result is not a consistent point in time.
    SkipCorrupted,
}
