// SPDX-License-Identifier: GPL-2.0
//! Row selection shared by the commands: by module, file, function and minimum size.

use crate::profile::{Row, Site};

/// Which rows a command looks at; an empty filter selects every row.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Exact module name; `vmlinux` selects built-in sites.
    pub module: Option<String>,
    /// Substring of the source file path.
    pub file: Option<String>,
    /// Substring of the function name.
    pub function: Option<String>,
    /// Rows with fewer bytes are dropped.
    pub min_size: Option<i64>,
}

impl Filter {
    /// Whether `site` passes the module, file and function tests (size is not looked at).
    pub fn matches_site(&self, site: &Site) -> bool {
        self.module
            .as_deref()
            .is_none_or(|m| site.module_or_vmlinux() == m)
            && self.file.as_deref().is_none_or(|f| site.file.contains(f))
            && self
                .function
                .as_deref()
                .is_none_or(|f| site.function.contains(f))
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
}
