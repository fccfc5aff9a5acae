// SPDX-License-Identifier: GPL-2.0
//! Functions of every shape the kernel's Rust has, compiled with v0
//! mangling by tests/demangle.rs so that their real symbols can be read.
#![crate_type = "lib"]
#![allow(dead_code)]

pub struct Holder<T, const N: usize>([T; N]);
pub trait Grow {
    fn grow(&mut self) -> usize;
    fn twice(&mut self) -> usize {
        self.grow() + self.grow()
    }
}

impl<T: Copy + Default, const N: usize> Holder<T, N> {
    #[inline(never)]
    pub fn new_in(v: T) -> Self {
        Holder([v; N])
    }
}

impl<T, const N: usize> Grow for Holder<T, N> {
    #[inline(never)]
    fn grow(&mut self) -> usize {
        N
    }
}

pub mod nested {
    pub mod deeper {
        #[inline(never)]
        pub fn alloc_site(x: &mut [u8]) -> usize {
            let f = |y: &u8| (*y as usize) + 1;
            let g = || x.iter().map(f).map(|z| z * 2).sum::<usize>();
            g()
        }
        #[inline(never)]
        pub fn takes_dyn(f: &dyn Fn(&u32) -> u32, p: *const (u8, i64), q: fn(u8) -> bool) -> u32 {
            let _ = (p, q);
            f(&3)
        }
    }
}

#[inline(never)]
pub fn generic_over<A: Grow>(a: &mut A, s: &[&str]) -> usize {
    a.twice() + s.len()
}

/// Stands for the kernel crate's allocation module (the sample is built as
/// crate `kernel`).
pub mod alloc {
    pub struct KVec<T>(pub Option<T>, pub usize);
    impl<T> KVec<T> {
        #[inline(never)]
        pub fn reserve(&mut self, n: usize) {
            self.1 += n;
        }
    }
}

/// A function outside the allocation module, generic over one of its types.
#[inline(never)]
pub fn fill<T>(v: &mut alloc::KVec<T>) {
    v.reserve(1);
}

#[no_mangle]
pub fn instantiate() -> usize {
    let mut kv = alloc::KVec(Some(1u32), 0);
    fill(&mut kv);
    let mut h = Holder::<u16, 4>::new_in(7);
    let mut h2 = Holder::<(u8, bool), 2>::new_in((1, true));
    let mut v = [1u8, 2, 3];
    nested::deeper::alloc_site(&mut v)
        + generic_over(&mut h, &["a"])
        + generic_over(&mut h2, &[])
        + nested::deeper::takes_dyn(&|x| x + 1, core::ptr::null(), |b| b > 2) as usize
        + h.twice()
}
