// SPDX-License-Identifier: GPL-2.0
//! Row selection shared by the commands: by module, file, function, regular expressions on the
//! tag text, and minimum size.

use regex::Regex;

use crate::profile::{Row, RowRef, Site, TagRef};

/// Which rows a command looks at; an empty filter selects every row.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Exact module name; `vmlinux` selects built-in sites.
    pub module: Option<String>,
    /// Substring of the source file path.
    pub file: Option<String>,
    /// Substring of the function name.
    pub function: Option<String>,
    /// When not empty, the tag text must match one of these.
    pub focus: Vec<Regex>,
    /// The tag text must match none of these.
    pub exclude: Vec<Regex>,
    /// Rows with fewer bytes are dropped.
    pub min_size: Option<i64>,
}

impl Filter {
    /// Whether `site` passes the module, file and function tests (size is not looked at).
    pub fn matches_site(&self, site: &Site) -> bool {
        self.matches_names(site.module_or_vmlinux(), &site.file, &site.function, || {
            site.tag_text()
        })
    }

    /// As [`Filter::matches_site`], on a tag as parsed.
    pub fn matches_tag(&self, tag: &TagRef<'_>) -> bool {
        self.matches_names(tag.module_or_vmlinux(), tag.file, tag.function, || {
            let mut text = String::new();
            tag.push_site_text(&mut text);
            text
        })
    }

    /// The tests of [`Filter::matches_site`] on a site's names; `text` gives its tag text, only
    /// asked for when there are patterns.
    fn matches_names(
        &self,
        module: &str,
        file: &str,
        function: &str,
        text: impl FnOnce() -> String,
    ) -> bool {
        self.module.as_deref().is_none_or(|m| module == m)
            && self.file.as_deref().is_none_or(|f| file.contains(f))
            && self
                .function
                .as_deref()
                .is_none_or(|f| function.contains(f))
            && self.matches_patterns(text)
    }

    fn matches_patterns(&self, text: impl FnOnce() -> String) -> bool {
        if self.focus.is_empty() && self.exclude.is_empty() {
            return true;
        }
        let text = text();
        (self.focus.is_empty() || self.focus.iter().any(|r| r.is_match(&text)))
            && !self.exclude.iter().any(|r| r.is_match(&text))
    }

    /// As [`Filter::matches`], on a row as parsed.
    pub fn matches_ref(&self, row: &RowRef<'_>) -> bool {
        self.matches_tag(&row.tag) && self.min_size.is_none_or(|min| row.bytes >= min)
    }

    /// Whether `row` passes every test, including the minimum size.
    pub fn matches(&self, row: &Row) -> bool {
        self.matches_site(&row.site) && self.min_size.is_none_or(|min| row.bytes >= min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bytes: i64, file: &str, module: Option<&str>, function: &str) -> Row {
        Row {
            bytes,
            calls: 1,
            site: Site {
                file: file.into(),
                line: 1,
                module: module.map(Into::into),
                function: function.into(),
            },
            fields: vec![],
        }
    }

    #[test]
    fn each_test() {
        let builtin = row(4096, "mm/slub.c", None, "alloc_slab_page");
        let xfs = row(10, "fs/xfs/xfs_buf.c", Some("xfs"), "xfs_buf_alloc");
        let f = Filter::default();
        assert!(f.matches(&builtin) && f.matches(&xfs));
        let f = Filter {
            module: Some("vmlinux".into()),
            ..Filter::default()
        };
        assert!(f.matches(&builtin) && !f.matches(&xfs));
        let f = Filter {
            module: Some("xfs".into()),
            file: Some("fs/".into()),
            function: Some("buf".into()),
            ..Filter::default()
        };
        assert!(!f.matches(&builtin) && f.matches(&xfs));
        let f = Filter {
            min_size: Some(100),
            ..Filter::default()
        };
        assert!(f.matches(&builtin) && !f.matches(&xfs) && f.matches_site(&xfs.site));
    }

    #[test]
    fn focus_and_exclude_on_the_tag_text() -> Result<(), regex::Error> {
        let slab = row(4096, "mm/slub.c", None, "alloc_slab_page");
        let xfs = row(10, "fs/xfs/xfs_buf.c", Some("xfs"), "xfs_buf_alloc");
        let ext4 = row(10, "fs/ext4/super.c", Some("ext4"), "ext4_fill_super");
        let f = Filter {
            focus: vec![Regex::new(r"^fs/")?],
            exclude: vec![Regex::new(r"\[xfs\]")?],
            ..Filter::default()
        };
        assert_eq!(
            [f.matches(&slab), f.matches(&xfs), f.matches(&ext4)],
            [false, false, true]
        );
        let f = Filter {
            exclude: vec![Regex::new("func:alloc_")?, Regex::new(":1 ")?],
            ..Filter::default()
        };
        assert_eq!(
            [f.matches(&slab), f.matches(&xfs), f.matches(&ext4)],
            [false, false, false]
        );
        Ok(())
    }
}
