#!/usr/bin/env bash
# Runs the side-by-side benchmarks with one command:
#   bash benches/compare/run.sh [--keys N] [--synced N] [--engines strata,rocksdb,fjall] [--rounds N] [--dir DIR]
#     the key-value workloads against RocksDB and fjall (src/main.rs);
#   bash benches/compare/run.sh tables [--rows N] [--tpch SF] [--rounds N] [--scale X] [--dir DIR]
#     tables against SQLite given the same memory (and again with its defaults): customers and
#     TPC-H's lineitem and orders, CSV import, 34 query shapes through Db::query, planning
#     time, `strata query` as a process, and bytes on disk per table (src/bin/tables/).
# The first run compiles RocksDB's C++ through the `rocksdb` crate: about 13 minutes on two
# cores, once. That build needs clang and libclang, installed here from the system's packages
# when missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1; then
    echo "installing clang and libclang-dev (needed to build RocksDB) ..." >&2
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    $SUDO apt-get install -y libclang-dev clang
fi
cargo build --release --locked
if [ "${1:-}" = tables ]; then
    shift
    # The `strata` command, timed as a whole process.
    (cd ../.. && cargo build --release --locked -p strata-cli)
    exec ./target/release/tables --strata-bin ../../target/release/strata "$@"
fi
exec ./target/release/strata-compare "$@"
