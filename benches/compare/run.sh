#!/usr/bin/env bash
# Runs the side-by-side KV benchmark (Strata, RocksDB, fjall) with one command:
#   bash benches/compare/run.sh [--keys N] [--synced N] [--engines strata,rocksdb,fjall] [--dir DIR]
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
exec ./target/release/strata-compare "$@"
