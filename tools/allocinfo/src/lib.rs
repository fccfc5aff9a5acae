// SPDX-License-Identifier: GPL-2.0
//! Reading, diffing, watching and exporting Linux memory allocation profiles (/proc/allocinfo).

pub mod capture;
pub mod cli;
pub mod cmd;
pub mod error;
pub mod filter;
pub mod format;
pub mod ioctl;
pub mod names;
pub mod nodes;
pub mod parse;
pub mod profile;
pub mod render;
pub mod size;
pub mod source;
pub mod timestamp;

use std::io::Write;

use cli::{CaptureAction, Cli, Command, SourceMode};
use error::{Error, Result};
use ioctl::KernelFilter;
use source::Source;

/// Runs one parsed command line, writing its report to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<()> {
    let source = Source::new(cli.input()).lenient(cli.lenient);
    let live = |module: &Option<String>, min_size: Option<i64>| -> Result<Source> {
        let filter = KernelFilter {
            module: module.clone(),
            min_size,
        };
        Ok(source.clone().mode(cli.source_mode)?.kernel_filter(filter))
    };
    match &cli.command {
        // Per node: only the module filter goes to the kernel, whose --min-size would apply to a
        // tag's total, not to each of its nodes.
        Command::Top(args) if args.by_node => {
            let source = live(&args.filter.module, None)?;
            let profile = source.read_nodes()?;
            cmd::top::run_nodes(&profile, &source.described(), args, cli.json, out)
        }
        Command::Top(args) if cmd::top::live::wanted(cli, args) => {
            let source = live(&args.filter.module, args.min_size)?;
            let mut sampler = source.sampler();
            cmd::top::live::run(&mut || sampler.read(), &|| source.described(), args, out)
        }
        Command::Top(args) => {
            let source = live(&args.filter.module, args.min_size)?;
            cmd::top::run_source(&source, args, cli.json, out)
        }
        Command::Tree(args) if args.by_node => {
            let source = live(&args.filter.module, None)?;
            cmd::tree::run_nodes(&source.read_nodes()?, args, cli.json, out)
        }
        Command::Tree(args) => {
            let source = live(&args.filter.module, None)?;
            cmd::tree::run(&source.read()?, args, cli.json, out)
        }
        Command::Snapshot(args) => {
            let now = timestamp::now_unix_ms();
            // A snapshot keeps the text exactly as the kernel prints it, unless told otherwise.
            let mode = match cli.source_mode {
                SourceMode::Auto => SourceMode::Text,
                other => other,
            };
            let source = source.clone().mode(mode)?;
            let profile = source.read()?;
            let name = source.display();
            let recorded = (name != "<stdin>").then_some(name.as_str());
            cmd::snapshot::run(profile, recorded, now, args, cli.json, out)
        }
        Command::Diff(args) => {
            if cli.input.is_some() {
                return Err(Error::Usage(
                    "diff reads the two files given as A and B; --input does not apply".into(),
                ));
            }
            let a = Source::new(Some(&args.before))
                .lenient(cli.lenient)
                .mode(cli.source_mode)?;
            let b = Source::new(Some(&args.after))
                .lenient(cli.lenient)
                .mode(cli.source_mode)?;
            cmd::diff::run_sources((&a, &a.display()), (&b, &b.display()), args, cli.json, out)
        }
        Command::Watch(args) => {
            if source.is_stdin() {
                return Err(Error::Usage(
                    "watch reads its input once per sample, and standard input (-i -) can be \
                     read only once; give a file"
                        .into(),
                ));
            }
            let source = live(&args.filter.module, None)?;
            let mut sampler = source.sampler();
            cmd::watch::run(&mut || sampler.read(), args, cli.json, out)
        }
        Command::Export(args) => {
            cmd::export::check_args(args, cli.json)?;
            let now = timestamp::now_unix_ms();
            let release = cmd::export::release(args, cmd::export::is_live(cli.input()))?;
            // Per node: only the module filter goes to the kernel, whose --min-size would apply
            // to a tag's total, not to each of its nodes.
            let min_size = if args.by_node { None } else { args.min_size };
            let source = live(&args.filter.module, min_size)?;
            // Sites are selected as they are read; the nodes are read whole first.
            let mut input = if args.by_node {
                cmd::export::Input::of_nodes(&source.read_nodes()?, args)
            } else {
                cmd::export::Input::read(&source, args)?
            };
            let described = source.described();
            let release = release.as_deref();
            cmd::export::run(&mut input, &described, now, release, args, cli.json, out)
        }
        Command::Capture(args) => {
            if cli.source_mode != SourceMode::Auto {
                return Err(Error::Usage(
                    "--source applies to /proc/allocinfo, not to capture".into(),
                ));
            }
            match &args.action {
                CaptureAction::Arm(_) | CaptureAction::Disarm(_) if cli.input.is_some() => {
                    Err(Error::Usage(
                        "capture arm and disarm write the control file (--file); -i does not apply"
                            .into(),
                    ))
                }
                CaptureAction::Arm(a) => cmd::capture::arm(a, cli.json, out),
                CaptureAction::Disarm(a) => cmd::capture::disarm(a, cli.json, out),
                CaptureAction::Show(a) => {
                    let (report, name) = cmd::capture::read_report(cli.input(), cli.lenient)?;
                    cmd::capture::show(&report, &name, a, cli.json, out)
                }
                CaptureAction::Export(a) => {
                    cmd::capture::check_export(cli.json)?;
                    let now = timestamp::now_unix_ms();
                    let (report, name) = cmd::capture::read_report(cli.input(), cli.lenient)?;
                    cmd::capture::export(&report, &name, now, a, cli.json, out)
                }
            }
        }
    }
}
