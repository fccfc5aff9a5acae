// SPDX-License-Identifier: GPL-2.0

//! The function name of a Rust symbol (v0 mangling), for the rows of Rust
//! call sites.
//!
//! Kernel Rust is built with `-Csymbol-mangling-version=v0`, so kallsyms
//! holds names such as `_RNvCs1234_9my_module8do_alloc`. A row wants what
//! C's `__func__` gives: the function's own name, `do_alloc`. This reads the
//! path of a v0 symbol just far enough to find its last component and
//! whether that sits inside closures (`do_alloc::{closure}`). Generic
//! arguments, impl types and backreferences are parsed only to be skipped.
//!
//! Nothing here depends on the kernel, so the host tests exercise it
//! directly (`tools/testing/alloc_tag_parse`).

/// The function name of a symbol: its last path identifier and the number
/// of closures it is nested in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FnName<'a> {
    /// The identifier, as written in the source (bytes of the symbol).
    pub ident: &'a [u8],
    /// How many `::{closure}` follow it.
    pub closures: u32,
}

/// How deep nested paths and types may go before the symbol is refused.
const MAX_DEPTH: u32 = 64;

/// What a path says: the function it names, the crate and top-level
/// module it is defined in, and whether it is a crate root.
#[derive(Clone, Copy)]
struct PathInfo<'a> {
    name: Option<FnName<'a>>,
    krate: &'a [u8],
    module: Option<&'a [u8]>,
    root: bool,
}

impl<'a> PathInfo<'a> {
    /// An impl block or trait at this path: items in it are defined here.
    fn item(self) -> PathInfo<'a> {
        PathInfo {
            name: None,
            root: false,
            module: if self.root { None } else { self.module },
            ..self
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: u32,
}

/// A symbol the parser gives up on: malformed, or nested deeper than it
/// follows. Callers only need to know that no name came out.
#[derive(Debug)]
struct Invalid;

type Res<T> = Result<T, Invalid>;

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn next(&mut self) -> Res<u8> {
        let c = self.peek().ok_or(Invalid)?;
        self.pos += 1;
        Ok(c)
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(Invalid)
        } else {
            Ok(())
        }
    }

    /// `{0-9a-zA-Z} "_"`.
    fn base62(&mut self) -> Res<u64> {
        if self.eat(b'_') {
            return Ok(0);
        }
        let mut x: u64 = 0;
        loop {
            let c = self.next()?;
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'z' => c - b'a' + 10,
                b'A'..=b'Z' => c - b'A' + 36,
                b'_' => return x.checked_add(1).ok_or(Invalid),
                _ => return Err(Invalid),
            };
            x = x
                .checked_mul(62)
                .ok_or(Invalid)?
                .checked_add(d as u64)
                .ok_or(Invalid)?;
        }
    }

    /// `"0" | [1-9] {0-9}`.
    fn decimal(&mut self) -> Res<usize> {
        match self.next()? {
            b'0' => Ok(0),
            c @ b'1'..=b'9' => {
                let mut n = (c - b'0') as usize;
                while let Some(c @ b'0'..=b'9') = self.peek() {
                    n = n
                        .checked_mul(10)
                        .ok_or(Invalid)?
                        .checked_add((c - b'0') as usize)
                        .ok_or(Invalid)?;
                    self.pos += 1;
                }
                Ok(n)
            }
            _ => Err(Invalid),
        }
    }

    fn disambiguator(&mut self) -> Res<()> {
        if self.eat(b's') {
            self.base62()?;
        }
        Ok(())
    }

    /// `["u"] decimal ["_"] bytes`.
    fn undisambiguated_ident(&mut self) -> Res<&'a [u8]> {
        self.eat(b'u');
        let len = self.decimal()?;
        self.eat(b'_');
        let end = self.pos.checked_add(len).ok_or(Invalid)?;
        let id = self.s.get(self.pos..end).ok_or(Invalid)?;
        self.pos = end;
        Ok(id)
    }

    fn ident(&mut self) -> Res<&'a [u8]> {
        self.disambiguator()?;
        self.undisambiguated_ident()
    }

    /// A backreference: its target, parsed as `what` from there.
    fn backref<T>(&mut self, what: fn(&mut Self) -> Res<T>) -> Res<T> {
        let start = self.pos - 1;
        // The target is two past the value (after `_R`); a value that
        // large points past any symbol anyway.
        let target = usize::try_from(self.base62()?)
            .ok()
            .and_then(|v| v.checked_add(2))
            .ok_or(Invalid)?;
        if target >= start {
            return Err(Invalid);
        }
        let resume = self.pos;
        self.pos = target;
        let r = what(self);
        self.pos = resume;
        r
    }

    /// A path: the function name it ends with, if it ends with one, and
    /// where it is defined.
    fn path(&mut self) -> Res<PathInfo<'a>> {
        self.enter()?;
        let r = match self.next()? {
            b'C' => PathInfo {
                name: None,
                krate: self.ident()?,
                module: None,
                root: true,
            },
            b'M' => {
                self.disambiguator()?;
                let at = self.path()?;
                self.type_()?;
                at.item()
            }
            b'X' => {
                self.disambiguator()?;
                let at = self.path()?;
                self.type_()?;
                self.path()?;
                at.item()
            }
            b'Y' => {
                self.type_()?;
                self.path()?.item()
            }
            b'N' => {
                let ns = self.next()?;
                if !ns.is_ascii_alphabetic() {
                    return Err(Invalid);
                }
                let inner = self.path()?;
                let id = self.ident()?;
                let module = if inner.root { Some(id) } else { inner.module };
                let name = match (ns, inner.name) {
                    (b'C', Some(f)) => Some(FnName {
                        ident: f.ident,
                        closures: f.closures + 1,
                    }),
                    (b'C', None) => None,
                    // Other special namespaces (shims) are the compiler's.
                    (b'A'..=b'Z', _) => inner.name,
                    _ if id.is_empty() => inner.name,
                    _ => Some(FnName {
                        ident: id,
                        closures: 0,
                    }),
                };
                PathInfo {
                    name,
                    krate: inner.krate,
                    module,
                    root: false,
                }
            }
            b'I' => {
                let inner = self.path()?;
                while !self.eat(b'E') {
                    self.generic_arg()?;
                }
                inner
            }
            b'B' => self.backref(Self::path)?,
            _ => return Err(Invalid),
        };
        self.depth -= 1;
        Ok(r)
    }

    fn lifetime(&mut self) -> Res<()> {
        if self.eat(b'L') {
            self.base62()?;
        }
        Ok(())
    }

    fn binder(&mut self) -> Res<()> {
        if self.eat(b'G') {
            self.base62()?;
        }
        Ok(())
    }

    fn generic_arg(&mut self) -> Res<()> {
        if self.eat(b'L') {
            self.base62()?;
            Ok(())
        } else if self.eat(b'K') {
            self.const_()
        } else {
            self.type_()
        }
    }

    fn const_(&mut self) -> Res<()> {
        self.enter()?;
        match self.peek().ok_or(Invalid)? {
            b'p' => self.pos += 1,
            b'B' => {
                self.pos += 1;
                self.backref(Self::const_)?;
            }
            _ => {
                self.type_()?;
                self.eat(b'n');
                while !self.eat(b'_') {
                    if !self.next()?.is_ascii_hexdigit() {
                        return Err(Invalid);
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn type_(&mut self) -> Res<()> {
        self.enter()?;
        match self.peek().ok_or(Invalid)? {
            b'a'..=b'z' => self.pos += 1,
            b'C' | b'M' | b'X' | b'Y' | b'N' | b'I' => {
                self.path()?;
            }
            c => {
                self.pos += 1;
                match c {
                    b'A' => {
                        self.type_()?;
                        self.const_()?;
                    }
                    b'S' | b'P' | b'O' => self.type_()?,
                    b'T' => {
                        while !self.eat(b'E') {
                            self.type_()?;
                        }
                    }
                    b'R' | b'Q' => {
                        self.lifetime()?;
                        self.type_()?;
                    }
                    b'F' => {
                        self.binder()?;
                        self.eat(b'U');
                        if self.eat(b'K') && !self.eat(b'C') {
                            self.undisambiguated_ident()?;
                        }
                        while !self.eat(b'E') {
                            self.type_()?;
                        }
                        self.type_()?;
                    }
                    b'D' => {
                        self.binder()?;
                        while !self.eat(b'E') {
                            self.path()?;
                            while self.eat(b'p') {
                                self.undisambiguated_ident()?;
                                self.type_()?;
                            }
                        }
                        self.lifetime()?;
                    }
                    b'B' => self.backref(Self::type_)?,
                    _ => return Err(Invalid),
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

fn parse(sym: &[u8]) -> Option<PathInfo<'_>> {
    let rest = sym.strip_prefix(b"_R")?;
    let mut p = Parser {
        s: sym,
        pos: 2,
        depth: 0,
    };
    // An optional encoding version, then the path.
    if rest.first().is_some_and(u8::is_ascii_digit) {
        p.decimal().ok()?;
    }
    p.path().ok()
}

/// The function name of the v0 symbol `sym`, `None` if `sym` is not a v0
/// symbol naming a function.
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::testing::fn_name;
///
/// // `my_driver::probe`, a method `<Vec<T, A>>::reserve`, and a closure in
/// // `my_driver::init`.
/// let name = |sym: &'static [u8]| fn_name(sym).map(|f| (f.ident, f.closures));
/// assert_eq!(name(b"_RNvCs1QnFpBW0rcS_9my_driver5probe"), Some((&b"probe"[..], 0)));
/// assert_eq!(
///     name(b"_RNvMs_NtNtCsdkXBs5YyiW6_6kernel5alloc4kvecINtB4_3VecppE7reserve"),
///     Some((&b"reserve"[..], 0))
/// );
/// assert_eq!(name(b"_RNCNvCs1QnFpBW0rcS_9my_driver4init0B3_"), Some((&b"init"[..], 1)));
/// // C symbols and broken ones name nothing.
/// assert!(fn_name(b"kmalloc_trace_noprof").is_none());
/// assert!(fn_name(b"_RNvCs1QnFpBW0rcS_9my_driver5pro").is_none());
/// ```
pub fn fn_name(sym: &[u8]) -> Option<FnName<'_>> {
    parse(sym)?.name
}

/// Whether the v0 symbol `sym` is a function of the kernel crate's
/// allocation machinery (the allocators, the boxes and vectors, `Arc`,
/// in-place initialisation, `CString`, the red-black tree's nodes, `Page`,
/// and this profiler's site lookup): frames to look through when naming the
/// function that asked for an allocation. Decided by the module the
/// function is defined in, so a driver's function generic over a `KVec` is
/// not one; the profiler's other modules allocate for themselves and keep
/// their names.
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::testing::is_alloc_machinery;
///
/// // `kernel::sync::arc::Arc::new` is looked through; a driver's function
/// // and the kernel's `print` module are not.
/// assert!(is_alloc_machinery(b"_RNvNtNtCsdkXBs5YyiW6_6kernel4sync3arc3new"));
/// assert!(!is_alloc_machinery(b"_RNvCs1QnFpBW0rcS_9my_driver5probe"));
/// assert!(!is_alloc_machinery(b"_RNvNtCsdkXBs5YyiW6_6kernel5print11call_printk"));
/// ```
pub fn is_alloc_machinery(sym: &[u8]) -> bool {
    const MODULES: [&[u8]; 6] = [b"alloc", b"sync", b"init", b"str", b"rbtree", b"page"];
    const SITES: &[u8] = b"9alloc_tag10rust_sites";
    match parse(sym) {
        Some(PathInfo {
            krate: b"kernel",
            module: Some(m),
            ..
        }) => {
            MODULES.contains(&m)
                || (m == b"alloc_tag" && sym.windows(SITES.len()).any(|w| w == SITES))
        }
        _ => false,
    }
}
