// SPDX-License-Identifier: GPL-2.0
//! The `allocinfo` command: parses arguments, runs the command, maps errors to exit codes.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;

use allocinfo::cli::Cli;
use allocinfo::error::{Error, EXIT_USAGE};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap says 0 for --help/--version and 2 for usage errors.
            let code = u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE);
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = allocinfo::run(&cli, &mut out)
        .and_then(|()| out.flush().map_err(|e| Error::io("writing output", e)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`| head`) got what it wanted.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("allocinfo: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
