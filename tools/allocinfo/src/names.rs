// SPDX-License-Identifier: GPL-2.0
//! Interned names: each file, module and function name of a read kept once, a site as numbers.
//!
//! A million-row file has a few thousand files and modules and some hundred thousand functions;
//! kept as numbers, a site is 16 bytes instead of three strings, and comparing two is comparing
//! integers.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::profile::{Site, TagRef};

/// The number of a name in a [`Names`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(u32);

impl NameId {
    /// The number as an index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Every name seen, each once, numbered in the order first seen.
///
/// # Invariants
///
/// `ids[names[i]] == i` for every `i`, and `names[0]` is the empty name (a built-in site's
/// module).
#[derive(Debug)]
pub struct Names {
    ids: HashMap<Box<str>, NameId>,
    names: Vec<Box<str>>,
    /// The last name asked for in each slot (file, module, function), and a copy of its text
    /// at hand: rows of one file and function follow each other, so most rows need no hash
    /// lookup.
    last: [NameId; 3],
    last_text: [String; 3],
}

impl Default for Names {
    fn default() -> Self {
        Self::new()
    }
}

/// A site as numbers: the fields of [`Site`], names interned in one [`Names`]. Its derived
/// order is a fixed order of the numbers, not the order of the names ([`Names::cmp_sites`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteKey {
    pub file: NameId,
    pub line: u32,
    /// The empty name for built-in code.
    pub module: NameId,
    pub function: NameId,
}

impl SiteKey {
    /// The key as one number, in the key's own order: sorting by it is sorting by the key, with
    /// one comparison instead of four.
    pub fn packed(&self) -> u128 {
        (u128::from(self.file.0) << 96)
            | (u128::from(self.line) << 64)
            | (u128::from(self.module.0) << 32)
            | u128::from(self.function.0)
    }
}

impl SiteKey {
    /// The key with its names numbered as `map` ([`Names::renumbering`]) says.
    pub fn renumbered(&self, map: &[NameId]) -> SiteKey {
        let id = |n: NameId| map.get(n.0 as usize).copied().unwrap_or_default();
        SiteKey {
            file: id(self.file),
            line: self.line,
            module: id(self.module),
            function: id(self.function),
        }
    }
}

impl Names {
    pub fn new() -> Self {
        let empty: Box<str> = "".into();
        // INVARIANT: the empty name is number 0, in both maps.
        Names {
            ids: HashMap::from([(empty.clone(), NameId(0))]),
            names: vec![empty],
            last: [NameId(0); 3],
            last_text: Default::default(),
        }
    }

    /// The number of `name` in `slot` (0 file, 1 module, 2 function), adding the name if new;
    /// None once 2^32 names are kept.
    fn intern(&mut self, slot: usize, name: &str) -> Option<NameId> {
        if self.last_text[slot] == name {
            return Some(self.last[slot]);
        }
        let id = self.id(name)?;
        self.last[slot] = id;
        self.last_text[slot].clear();
        self.last_text[slot].push_str(name);
        Some(id)
    }

    /// The number of `name`, adding it if new; None once 2^32 names are kept.
    fn id(&mut self, name: &str) -> Option<NameId> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = NameId(u32::try_from(self.names.len()).ok()?);
        let name: Box<str> = name.into();
        // INVARIANT: pushed at its number, and mapped to it.
        self.names.push(name.clone());
        self.ids.insert(name, id);
        Some(id)
    }

    /// The numbers in `into` of each of our names, by our number (names new to `into` are
    /// added to it): to move keys made with us over to `into` ([`SiteKey::renumbered`]). None
    /// once `into` holds 2^32 names.
    pub fn renumbering(&self, into: &mut Names) -> Option<Vec<NameId>> {
        self.names.iter().map(|n| into.id(n)).collect()
    }

    /// The site of `tag` as numbers; None once 2^32 names are kept.
    pub fn key(&mut self, tag: &TagRef<'_>) -> Option<SiteKey> {
        Some(SiteKey {
            file: self.intern(0, tag.file)?,
            line: tag.line,
            module: self.intern(1, tag.module.unwrap_or(""))?,
            function: self.intern(2, tag.function)?,
        })
    }

    /// The name numbered `id`.
    pub fn name(&self, id: NameId) -> &str {
        // By the invariant every NameId handed out indexes `names`; "" is a safe answer for one
        // from another Names.
        self.names.get(id.0 as usize).map_or("", |n| n)
    }

    fn module(&self, key: &SiteKey) -> Option<&str> {
        Some(self.name(key.module)).filter(|m| !m.is_empty())
    }

    /// The site, owning its names.
    pub fn site(&self, key: &SiteKey) -> Site {
        Site {
            file: self.name(key.file).to_string(),
            line: key.line,
            module: self.module(key).map(str::to_string),
            function: self.name(key.function).to_string(),
        }
    }

    /// The order of the [`Site`]s the keys stand for (file, line, module, function).
    pub fn cmp_sites(&self, a: &SiteKey, b: &SiteKey) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        self.name(a.file)
            .cmp(self.name(b.file))
            .then(a.line.cmp(&b.line))
            .then_with(|| self.module(a).cmp(&self.module(b)))
            .then_with(|| self.name(a.function).cmp(self.name(b.function)))
    }

    /// The numbers of every name kept, in the order of the names (the empty name first).
    pub fn sorted(&self) -> Vec<NameId> {
        let mut ids: Vec<NameId> = (0..self.names.len() as u32).map(NameId).collect();
        ids.sort_unstable_by_key(|id| &self.names[id.index()]);
        ids
    }

    /// Names kept, the empty one included.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Never: the empty name is always kept.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag<'a>(file: &'a str, line: u32, module: Option<&'a str>, function: &'a str) -> TagRef<'a> {
        TagRef {
            file,
            line,
            module,
            function,
            fields: "",
        }
    }

    #[test]
    fn each_name_once_and_back() {
        let mut names = Names::new();
        let tags = [
            tag("mm/slub.c", 2450, None, "alloc_slab_page"),
            tag("mm/slub.c", 2451, None, "alloc_slab_page"),
            tag("fs/xfs/xfs_buf.c", 390, Some("xfs"), "xfs_buf_alloc"),
            tag("mm/slub.c", 2450, None, "alloc_slab_page"),
            // A module named as a file is one name.
            tag("xfs", 1, Some("mm/slub.c"), "xfs"),
        ];
        let keys: Vec<SiteKey> = tags.iter().map(|t| names.key(t).unwrap()).collect();
        assert_eq!(keys[0], keys[3]);
        assert_ne!(keys[0], keys[1]);
        assert_eq!(keys[0].function, keys[1].function);
        assert_eq!(keys[4].file, keys[2].module);
        assert_eq!(keys[4].module, keys[0].file);
        // "", mm/slub.c, alloc_slab_page, fs/xfs/xfs_buf.c, xfs, xfs_buf_alloc
        assert_eq!(names.len(), 6);
        for (t, k) in tags.iter().zip(&keys) {
            assert_eq!(names.site(k), t.site());
        }
        // Keys made apart and moved over name the same sites.
        let mut other = Names::new();
        let apart: Vec<SiteKey> = tags.iter().rev().map(|t| other.key(t).unwrap()).collect();
        let map = other.renumbering(&mut names).unwrap();
        let moved: Vec<SiteKey> = apart.iter().rev().map(|k| k.renumbered(&map)).collect();
        assert_eq!(moved, keys);
        assert_eq!(names.len(), 6);
        let mut by_number = keys.clone();
        by_number.sort();
        let mut packed = keys.clone();
        packed.sort_by_key(SiteKey::packed);
        assert_eq!(packed, by_number);
        let mut sorted = keys.clone();
        sorted.sort_by(|a, b| names.cmp_sites(a, b));
        let want: Vec<Site> = {
            let mut s: Vec<Site> = tags.iter().map(TagRef::site).collect();
            s.sort();
            s
        };
        let got: Vec<Site> = sorted.iter().map(|k| names.site(k)).collect();
        assert_eq!(got, want);
    }
}
