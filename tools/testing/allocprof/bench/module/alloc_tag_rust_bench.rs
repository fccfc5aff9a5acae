// SPDX-License-Identifier: GPL-2.0

//! Rust allocation fast-path benchmark: loops of allocate+free pairs
//! through `KBox` and `KVec`, timed with the kernel clock, printed in the
//! format of alloc_tag_bench.ko:
//!
//! `alloc_tag_rust_bench: loop=<name> round=<r> pairs=<n> ns_per_pair=<x.y>`
//!
//! On the Rust core each allocation is charged to this file's line (the
//! site lookup of `kernel::alloc_tag::rust_sites`); on upstream 6.12 to the
//! one line of `rust/helpers/slab.c` every Rust allocation goes through.
//! All of it runs at load; unload it afterwards.

use kernel::prelude::*;
use kernel::time::Ktime;

module! {
    type: AllocTagRustBench,
    name: "alloc_tag_rust_bench",
    author: "allocprof developers",
    description: "Rust allocation fast-path benchmark for allocation profiling",
    license: "GPL",
}

const PAIRS: u32 = 200_000;
const ROUNDS: u32 = 3;

/// `n` pairs of `KBox::new()` of 64 bytes and its drop.
#[inline(never)]
fn kbox(n: u32) -> Result<i64> {
    let t0 = Ktime::ktime_get();
    for i in 0..n {
        drop(core::hint::black_box(KBox::new([i as u8; 64], GFP_KERNEL)?));
    }
    Ok((Ktime::ktime_get() - t0).to_ns())
}

/// `n` pairs of `KVec::with_capacity()` of 16 `u64`s and its drop.
#[inline(never)]
fn kvec(n: u32) -> Result<i64> {
    let t0 = Ktime::ktime_get();
    for _ in 0..n {
        drop(core::hint::black_box(KVec::<u64>::with_capacity(
            16, GFP_KERNEL,
        )?));
    }
    Ok((Ktime::ktime_get() - t0).to_ns())
}

struct AllocTagRustBench;

impl kernel::Module for AllocTagRustBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let loops: [(&str, fn(u32) -> Result<i64>); 2] = [("rust_kbox", kbox), ("rust_kvec", kvec)];
        for (name, run) in loops {
            // Warm the caches, the per-CPU lists and the site tags.
            run(PAIRS / 10 + 1)?;
            for r in 1..=ROUNDS {
                let x10 = run(PAIRS)? * 10 / i64::from(PAIRS);
                pr_info!(
                    "loop={} round={} pairs={} ns_per_pair={}.{}\n",
                    name,
                    r,
                    PAIRS,
                    x10 / 10,
                    x10 % 10
                );
            }
        }
        pr_info!("done\n");
        Ok(AllocTagRustBench)
    }
}
