// SPDX-License-Identifier: GPL-2.0
//! The command line: global options, one subcommand per report, and argument validation.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use regex::Regex;

use crate::filter::Filter;
use crate::size::parse_size;

/// Read, diff, watch and export Linux memory allocation profiles (/proc/allocinfo).
#[derive(Debug, Parser)]
#[command(
    name = "allocinfo",
    version,
    after_help = "Exit status: 0 success, 1 runtime error (unreadable or malformed input, \
                  failed write), 2 usage error.\n\
                  Input defaults to /proc/allocinfo (root only); -i - reads standard input."
)]
pub struct Cli {
    /// Read this file (raw allocinfo text or a snapshot) instead of /proc/allocinfo
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Print JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,

    /// Read copies damaged in transit (serial console, mail): CRLF line ends, rows without their
    /// trailing space, blank lines
    #[arg(long, global = true)]
    pub lenient: bool,

    /// How to read the live /proc/allocinfo: auto uses its ioctls when the kernel has them (module
    /// and --min-size filters then run in the kernel; snapshot always saves the text), else the
    /// text; --json output names the source used ("/proc/allocinfo (ioctl)")
    #[arg(
        long = "source",
        value_enum,
        value_name = "HOW",
        global = true,
        default_value_t = SourceMode::Auto
    )]
    pub source_mode: SourceMode,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The input named by `-i`, given before the command or after it (after wins).
    pub fn input(&self) -> Option<&Path> {
        let after = match &self.command {
            Command::Top(a) => &a.input.input,
            Command::Tree(a) => &a.input.input,
            Command::Snapshot(a) => &a.input.input,
            Command::Watch(a) => &a.input.input,
            Command::Export(a) => &a.input.input,
            Command::Capture(CaptureArgs {
                action: CaptureAction::Show(a),
            }) => &a.input,
            Command::Capture(CaptureArgs {
                action: CaptureAction::Export(a),
            }) => &a.input,
            Command::Diff(_) | Command::Capture(_) => &None,
        };
        after.as_deref().or(self.input.as_deref())
    }
}

/// `-i FILE` after a command. Not global: `diff` takes its two inputs as arguments.
#[derive(Clone, Debug, Default, Args)]
pub struct InputArg {
    /// Read this file (raw allocinfo text or a snapshot) instead of /proc/allocinfo; - for stdin
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,
}

/// The reports the tool can produce.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the call sites holding the most memory
    Top(TopArgs),
    /// Sum memory by source path prefix or by module
    Tree(TreeArgs),
    /// Save the current profile with a timestamp, for a later diff
    Snapshot(SnapshotArgs),
    /// Show per-site change between two profiles, largest either way first
    Diff(DiffArgs),
    /// Sample repeatedly and flag sites whose bytes trend upwards as leak suspects
    ///
    /// Each site is judged from the first sample it appears in (so a module loaded during the
    /// watch counts). A site is a suspect once it has been seen over at least 2 intervals, grew in
    /// more than half of them, and its net growth is larger than the sum of its drops. Ctrl-C
    /// (SIGINT) or SIGTERM ends the watch with the verdict so far, exit status 0.
    Watch(WatchArgs),
    /// Export every site for other tools: Prometheus or OpenMetrics (node_exporter textfile
    /// collector), CSV, folded stacks (flame graphs) or pprof's profile.proto
    Export(ExportArgs),
    /// Context capture: arm a call site, then see which stacks hold its live memory
    /// (/sys/kernel/debug/allocinfo_capture, root only)
    Capture(CaptureArgs),
}

/// What to rank rows by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Bytes currently allocated
    #[default]
    Size,
    /// Live allocations
    Calls,
}

/// How live data is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SourceMode {
    /// The ioctls when the kernel has them and every name fits them, else the text
    #[default]
    Auto,
    /// The ioctls only (an error on kernels without them; a name longer than 63 bytes shows as
    /// its last 63)
    Ioctl,
    /// The text only
    Text,
}

/// What `diff` ranks by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DiffSort {
    /// Largest byte change either way first (as pprof -diff_base)
    #[default]
    Abs,
    /// Largest byte growth first, largest shrinkage last
    Size,
    /// Largest growth in live allocations first
    Calls,
}

/// Row selection options shared by several commands.
#[derive(Clone, Debug, Default, Args)]
pub struct FilterArgs {
    /// Only sites in this module (`vmlinux` for built-in code)
    #[arg(long, value_name = "NAME")]
    pub module: Option<String>,
    /// Only sites whose file path contains this text
    #[arg(long, value_name = "TEXT")]
    pub file: Option<String>,
    /// Only sites whose function name contains this text
    #[arg(long, value_name = "TEXT")]
    pub function: Option<String>,
    /// Only sites whose tag text (`file:line [module] func:name`) matches this regular
    /// expression (repeatable: any of them), as pprof's --focus
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub focus: Vec<Regex>,
    /// Leave out sites whose tag text matches this regular expression (repeatable), as pprof's
    /// --ignore
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub exclude: Vec<Regex>,
}

impl FilterArgs {
    /// The filter these options describe, with an optional minimum size.
    pub fn to_filter(&self, min_size: Option<i64>) -> Filter {
        Filter {
            module: self.module.clone(),
            file: self.file.clone(),
            function: self.function.clone(),
            focus: self.focus.clone(),
            exclude: self.exclude.clone(),
            min_size,
        }
    }
}

/// Options of `top`.
#[derive(Clone, Debug, Args)]
pub struct TopArgs {
    #[command(flatten)]
    pub input: InputArg,
    /// Number of rows to show (0 for all)
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10)]
    pub lines: usize,
    /// Rank by bytes or by live allocations
    #[arg(long, value_enum, default_value_t = SortKey::Size)]
    pub sort: SortKey,
    /// Hide sites holding less than this (e.g. 4096, 64K, 1.5MiB)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_size: Option<i64>,
    /// Print plain byte counts instead of IEC sizes
    #[arg(long)]
    pub bytes: bool,
    /// One row per site and NUMA node holding something, with a NODE column (N0, N1, ...):
    /// live through the ioctl (ALLOCINFO_BATCH_NODES), else /sys/kernel/debug/allocinfo_nodes;
    /// -i reads a copy of allocinfo_nodes. --min-size applies to each row
    #[arg(long)]
    pub by_node: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// How `tree` groups sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum TreeBy {
    /// Source path prefixes (mm/, mm/slub.c, ...)
    #[default]
    Path,
    /// Module first (vmlinux for built-in), then path prefixes down to --depth
    Module,
}

/// Options of `tree`.
#[derive(Clone, Debug, Args)]
pub struct TreeArgs {
    #[command(flatten)]
    pub input: InputArg,
    /// Group by path prefix or by module
    #[arg(long, value_enum, default_value_t = TreeBy::Path)]
    pub by: TreeBy,
    /// Path components to descend (default 2 by path, 0 by module)
    #[arg(short = 'd', long, value_name = "N")]
    pub depth: Option<usize>,
    /// Order siblings by bytes or by live allocations
    #[arg(long, value_enum, default_value_t = SortKey::Size)]
    pub sort: SortKey,
    /// Hide groups holding less than this
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_size: Option<i64>,
    /// Also show groups holding nothing (0 bytes in 0 live allocations), hidden by default
    #[arg(long)]
    pub all: bool,
    /// Print plain byte counts instead of IEC sizes
    #[arg(long)]
    pub bytes: bool,
    /// One tree per NUMA node: the nodes (N0, N1, ... in node order, each with its total) under
    /// (all), and the --by grouping under each node. Read as top --by-node reads
    #[arg(long)]
    pub by_node: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Options of `snapshot`.
#[derive(Clone, Debug, Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub input: InputArg,
    /// Write the snapshot here instead of to standard output (a regular file is replaced
    /// atomically; a symlink, fifo or device is written through)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Options of `diff`.
#[derive(Clone, Debug, Args)]
pub struct DiffArgs {
    /// The earlier profile (snapshot or raw allocinfo text)
    #[arg(value_name = "A")]
    pub before: PathBuf,
    /// The later profile
    #[arg(value_name = "B")]
    pub after: PathBuf,
    /// Number of sites to list (0 for all)
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 20)]
    pub lines: usize,
    /// Rank by the largest byte change either way (abs), by byte growth (size), or by growth in
    /// live allocations (calls)
    #[arg(long, value_enum, default_value_t = DiffSort::Abs)]
    pub sort: DiffSort,
    /// Sum the changes per module or per path prefix instead of listing sites
    #[arg(long, value_enum, value_name = "path|module")]
    pub by: Option<TreeBy>,
    /// Path components for --by (default 2 by path, 0 by module)
    #[arg(short = 'd', long, value_name = "N", requires = "by")]
    pub depth: Option<usize>,
    /// Hide sites (or groups) whose bytes changed by less than this either way
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_delta: Option<i64>,
    /// Also list sites that did not change
    #[arg(long)]
    pub all: bool,
    /// Print plain byte counts instead of IEC sizes
    #[arg(long)]
    pub bytes: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Options of `watch`.
#[derive(Clone, Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub input: InputArg,
    /// Seconds between samples (fractions allowed)
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_interval)]
    pub interval: f64,
    /// Stop after this many samples (default: run until interrupted)
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Growing sites to list per sample
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 5)]
    pub lines: usize,
    /// Print plain byte counts instead of IEC sizes
    #[arg(long)]
    pub bytes: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Exposition formats of `export`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Prometheus text format 0.0.4 (what the node_exporter textfile collector reads)
    #[default]
    Prometheus,
    /// OpenMetrics 1.0 text (with UNIT lines and the # EOF terminator)
    Openmetrics,
    /// CSV with a header line: file,line,module,function,bytes,calls,calls_wrapped,inaccurate
    Csv,
    /// Folded stacks for flame graphs: module;dir;file;function bytes (sites holding > 0 bytes)
    Folded,
    /// pprof's profile.proto (uncompressed): one sample per site, values inuse_objects and
    /// inuse_space, the site as location and function, its module as a label
    Pprof,
}

/// Options of `export`.
#[derive(Clone, Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub input: InputArg,
    /// Exposition format
    #[arg(short = 'f', long, value_enum, default_value_t = ExportFormat::Prometheus)]
    pub format: ExportFormat,
    /// Write here (e.g. a textfile collector's *.prom) instead of standard output (a regular
    /// file is replaced atomically; a symlink, fifo or device is written through)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Leave out sites holding less than this, in every format (before the series of a function
    /// are summed): the knob that bounds the number of series
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_size: Option<i64>,
    /// Add the source line as the label `line` (prometheus, openmetrics): one series per site,
    /// which moves with every kernel build. Without it, the sites of one function, file and
    /// module are summed into one series
    #[arg(long)]
    pub line_label: bool,
    /// The label `release` (prometheus, openmetrics; a sample label in pprof): the kernel release.
    /// Default: `uname -r` when reading the live /proc/allocinfo, no label for a file
    #[arg(long, value_name = "STR", value_parser = parse_release)]
    pub release: Option<String>,
    /// One sample per site and NUMA node: a node label ("1") in prometheus, openmetrics and
    /// pprof, a node column in csv (not for folded). --min-size applies to each sample. Read as
    /// top --by-node reads
    #[arg(long)]
    pub by_node: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// A `--release` value: not empty (an empty label is no label), no control characters.
fn parse_release(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("the kernel release cannot be empty".into())
    } else if s.chars().any(char::is_control) {
        Err("the kernel release cannot hold control characters".into())
    } else {
        Ok(s.to_string())
    }
}

/// Options of `capture`: one action.
#[derive(Clone, Debug, Args)]
pub struct CaptureArgs {
    #[command(subcommand)]
    pub action: CaptureAction,
}

/// What `capture` does.
#[derive(Clone, Debug, Subcommand)]
pub enum CaptureAction {
    /// Arm sites: each new slab or per-CPU allocation charged to them records its stack
    ///
    /// SPEC is FILE:LINE or function:NAME as /proc/allocinfo spells them, optionally followed by
    /// module:NAME for that spec alone. One command is written per SPEC, in order; the first
    /// the kernel refuses stops the rest.
    Arm(CaptureArmArgs),
    /// Disarm sites (their records are freed, their totals stay), or all of them with --all
    Disarm(CaptureDisarmArgs),
    /// Per armed site: its totals and the stacks holding its live memory, largest first
    Show(CaptureShowArgs),
    /// The captured stacks as pprof's profile.proto or as folded stacks for flame graphs
    Export(CaptureExportArgs),
}

/// The capture control file, overridable for tests.
#[derive(Clone, Debug, Args)]
pub struct CaptureFileArg {
    /// The control file to write the commands to
    #[arg(long = "file", value_name = "PATH", default_value = crate::capture::CAPTURE_FILE)]
    pub file: PathBuf,
}

/// Options of `capture arm`.
#[derive(Clone, Debug, Args)]
pub struct CaptureArmArgs {
    /// FILE:LINE or function:NAME, each optionally followed by module:NAME
    #[arg(value_name = "SPEC", required = true)]
    pub specs: Vec<String>,
    /// Only sites of this module, for every SPEC without its own module:NAME
    #[arg(long, value_name = "NAME")]
    pub module: Option<String>,
    #[command(flatten)]
    pub file: CaptureFileArg,
}

/// Options of `capture disarm`.
#[derive(Clone, Debug, Args)]
pub struct CaptureDisarmArgs {
    /// FILE:LINE or function:NAME, each optionally followed by module:NAME
    #[arg(
        value_name = "SPEC",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub specs: Vec<String>,
    /// Disarm every armed site
    #[arg(long)]
    pub all: bool,
    /// Only sites of this module, for every SPEC without its own module:NAME
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub module: Option<String>,
    #[command(flatten)]
    pub file: CaptureFileArg,
}

/// Options of `capture show`.
#[derive(Clone, Debug, Args)]
pub struct CaptureShowArgs {
    /// Read this saved report instead of /sys/kernel/debug/allocinfo_capture; - for stdin
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Stacks to show per site, largest first (0 for all)
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10)]
    pub lines: usize,
    /// Print plain byte counts instead of IEC sizes
    #[arg(long)]
    pub bytes: bool,
}

/// Formats of `capture export`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CaptureFormat {
    /// pprof's profile.proto (uncompressed): one sample per stack, its frames as locations
    #[default]
    Pprof,
    /// Folded stacks for flame graphs: outermost;...;innermost bytes
    Folded,
}

/// Options of `capture export`.
#[derive(Clone, Debug, Args)]
pub struct CaptureExportArgs {
    /// Read this saved report instead of /sys/kernel/debug/allocinfo_capture; - for stdin
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Output format
    #[arg(short = 'f', long, value_enum, default_value_t = CaptureFormat::Pprof)]
    pub format: CaptureFormat,
    /// Write here instead of standard output (a regular file is replaced atomically)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn parse_regex(text: &str) -> Result<Regex, String> {
    Regex::new(text).map_err(|e| format!("not a regular expression: {e}"))
}

fn parse_interval(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(secs)
    } else {
        Err(format!(
            "interval '{text}' must be above 0 and at most 86400 seconds"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_go_anywhere() {
        let cli = Cli::try_parse_from(["allocinfo", "top", "--json", "-i", "f"]).unwrap();
        assert!(cli.json);
        assert_eq!(cli.input(), Some(Path::new("f")));
        let cli = Cli::try_parse_from(["allocinfo", "--json", "top", "-n", "3"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Top(TopArgs { lines: 3, .. })
        ));
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for args in [
            &["allocinfo", "watch", "--interval", "0"][..],
            &["allocinfo", "watch", "--count", "0"],
            &["allocinfo", "top", "--min-size", "lots"],
            &["allocinfo", "top", "--sort", "name"],
            &["allocinfo", "diff", "a"],
            &["allocinfo"],
        ] {
            let e = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
    }
}
