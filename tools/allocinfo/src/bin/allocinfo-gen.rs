// SPDX-License-Identifier: GPL-2.0
//! Packaging helper: allocinfo's man pages and shell completions, from the clap definitions
//! that also make `--help`, so the three never disagree.
//!
//! Built only with the `gen` feature (the installed binary carries neither generator) and run
//! at package build time by `tools/allocinfo/debian/rules`:
//!
//! ```text
//! allocinfo-gen man DIR          allocinfo.1 and one allocinfo-COMMAND.1 per subcommand
//! allocinfo-gen completions DIR  bash/allocinfo, zsh/_allocinfo, fish/allocinfo.fish
//! ```
//!
//! The pages' date is `SOURCE_DATE_EPOCH` (dpkg-buildpackage sets it from debian/changelog),
//! so a rebuild of the same source makes the same pages.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use allocinfo::cli::Cli;
use allocinfo::timestamp::utc_rfc3339;

const USAGE: &str = "usage: allocinfo-gen man DIR | allocinfo-gen completions DIR";

/// What the top-level page says beyond `--help`: the files it reads and where the others are.
const EXTRA_SECTIONS: &str = r#".SH FILES
.TP
\fI/proc/allocinfo\fR
The kernel's allocation profile (CONFIG_MEM_ALLOC_PROFILING), readable by root only.
.TP
\fI/var/lib/prometheus/node\-exporter/allocinfo.prom\fR
Written by \fBallocinfo\-textfile.service\fR (started by \fBallocinfo\-textfile.timer\fR) with
\fBallocinfo export \-o\fR, replaced atomically, for the textfile collector of
\fBprometheus\-node\-exporter\fR(1).
.TP
\fI/usr/share/doc/allocinfo/README.gz\fR
The full guide: formats, examples, and how to change the timer's interval and the export's
options with \fBsystemctl edit\fR.
"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [what, dir] if what == "man" => man_pages(Path::new(dir)),
        [what, dir] if what == "completions" => completions(Path::new(dir)),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("allocinfo-gen: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The date of the pages: `SOURCE_DATE_EPOCH` when set (reproducible builds), else today.
fn page_date() -> io::Result<String> {
    let ms = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|secs| secs.checked_mul(1000))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("SOURCE_DATE_EPOCH is not a number of seconds: {s:?}"),
                )
            })?,
        Err(_) => allocinfo::timestamp::now_unix_ms(),
    };
    Ok(utc_rfc3339(ms).chars().take(10).collect())
}

/// Writes one page per command, the top-level page with [`EXTRA_SECTIONS`].
fn man_pages(dir: &Path) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    let date = page_date()?;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut files = Vec::new();
    let mut todo = vec![(cmd, true)];
    while let Some((cmd, top)) = todo.pop() {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            todo.push((sub.clone(), false));
        }
        let man = Man::new(cmd)
            .date(date.clone())
            .source(concat!("allocinfo ", env!("CARGO_PKG_VERSION")))
            .manual("allocinfo manual");
        let path = dir.join(man.get_filename());
        let mut w = BufWriter::new(File::create(&path)?);
        man.render(&mut w)?;
        if top {
            w.write_all(EXTRA_SECTIONS.as_bytes())?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        files.push(path);
    }
    files.sort();
    Ok(files)
}

/// Writes the completion scripts under the names each shell's vendor directory expects.
fn completions(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (shell, sub, name) in [
        (Shell::Bash, "bash", "allocinfo"),
        (Shell::Zsh, "zsh", "_allocinfo"),
        (Shell::Fish, "fish", "allocinfo.fish"),
    ] {
        let d = dir.join(sub);
        fs::create_dir_all(&d)?;
        let path = d.join(name);
        let mut w = BufWriter::new(File::create(&path)?);
        clap_complete::generate(shell, &mut Cli::command(), "allocinfo", &mut w);
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        files.push(path);
    }
    Ok(files)
}
