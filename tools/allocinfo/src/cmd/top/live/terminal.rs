// SPDX-License-Identifier: GPL-2.0
//! The live view on the terminal: raw mode and the alternate screen, keys, refreshes, and the
//! terminal given back as it was however the view ends.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind};
use crossterm::terminal::{
    self, Clear, ClearType, DisableLineWrap, EnableLineWrap, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{cursor, queue};

use super::{Action, Live};
use crate::cli::TopArgs;
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::timestamp::{now_unix_ms, utc_rfc3339};

/// How long to wait for a key at most before looking at the clock and the signals again.
const TICK: Duration = Duration::from_millis(100);

fn terminal_error(e: io::Error) -> Error {
    Error::io("the terminal", e)
}

/// `HH:MM:SS UTC` now.
fn clock() -> String {
    let stamp = utc_rfc3339(now_unix_ms());
    format!("{} UTC", stamp.get(11..19).unwrap_or("??:??:??"))
}

/// The terminal in raw mode on the alternate screen, without the cursor or line wrapping
/// (a line wider than the screen is cut by the terminal, whatever its characters' widths).
///
/// # Invariants
///
/// While `active`, the terminal is in that state; [`Screen::leave`], or dropping the screen (on
/// an error, or a panic unwinding), gives it back.
struct Screen<'a> {
    out: &'a mut dyn Write,
    active: bool,
}

impl<'a> Screen<'a> {
    fn enter(out: &'a mut dyn Write) -> Result<Self> {
        terminal::enable_raw_mode().map_err(terminal_error)?;
        // INVARIANT: raw mode is on; whatever follows fails, drop turns it off again.
        let mut screen = Screen { out, active: true };
        queue!(
            &mut screen.out,
            EnterAlternateScreen,
            cursor::Hide,
            DisableLineWrap,
            Clear(ClearType::All)
        )
        .and_then(|()| screen.out.flush())
        .map_err(terminal_error)?;
        Ok(screen)
    }

    /// Draws `lines` from the top left of a screen `height` rows high, clearing what is left of
    /// the old screen.
    fn draw(&mut self, lines: &[String], height: u16) -> io::Result<()> {
        for (y, line) in (0u16..).zip(lines) {
            // Cleared before, not after: with wrapping off, the cursor stays on the last column
            // after a line as wide as the screen, and clearing to the end would erase it.
            queue!(
                &mut self.out,
                cursor::MoveTo(0, y),
                Clear(ClearType::CurrentLine)
            )?;
            self.out.write_all(line.as_bytes())?;
        }
        // Below the lines, if the screen has rows left (a move past the bottom would stop on the
        // last row, and clear it).
        let below = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        if below < height {
            queue!(
                &mut self.out,
                cursor::MoveTo(0, below),
                Clear(ClearType::FromCursorDown)
            )?;
        }
        self.out.flush()
    }

    fn restore(&mut self) -> io::Result<()> {
        // Every step is tried, so one failure does not leave the others undone.
        self.active = false;
        let screen = queue!(
            &mut self.out,
            EnableLineWrap,
            cursor::Show,
            LeaveAlternateScreen
        )
        .and_then(|()| self.out.flush());
        let raw = terminal::disable_raw_mode();
        screen.and(raw)
    }

    /// Gives the terminal back, saying whether that worked.
    fn leave(mut self) -> Result<()> {
        self.restore().map_err(terminal_error)
    }
}

impl Drop for Screen<'_> {
    fn drop(&mut self) {
        if self.active {
            let _ = self.restore();
        }
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP end the view through the same exit as `q`, so the terminal
/// is given back (in raw mode Ctrl-C is a key, but `kill` still sends signals).
fn catch_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Error::io("installing a signal handler", e))?;
    }
    Ok(stop)
}

/// Runs the live view until `q`, Ctrl-C or a signal (then `Ok`) or until the terminal fails.
///
/// `read` takes a sample; `source` names the input as the head shows it. The first read comes
/// before the screen, so an unreadable input fails as the printed `top` does; a later failed
/// read is shown on the status line and the last sample stays until a read succeeds.
pub fn run(
    read: &mut dyn FnMut() -> Result<Profile>,
    source: &dyn Fn() -> String,
    args: &TopArgs,
    out: &mut dyn Write,
) -> Result<()> {
    let first = read()?;
    let stop = catch_signals()?;
    let mut live = Live::new(source(), args, first, clock());
    let mut screen = Screen::enter(out)?;
    let result = show(&mut live, &mut screen, read, source, &stop, args.interval);
    let left = screen.leave();
    result.and(left)
}

fn show(
    live: &mut Live,
    screen: &mut Screen<'_>,
    read: &mut dyn FnMut() -> Result<Profile>,
    source: &dyn Fn() -> String,
    stop: &AtomicBool,
    interval: f64,
) -> Result<()> {
    let interval = Duration::from_secs_f64(interval);
    let mut due = Instant::now() + interval;
    let mut redraw = true;
    while !stop.load(Ordering::Relaxed) {
        if redraw {
            let (width, height) = terminal::size().map_err(terminal_error)?;
            screen
                .draw(&live.layout(width, height), height)
                .map_err(terminal_error)?;
            redraw = false;
        }
        let now = Instant::now();
        if now >= due {
            match read() {
                Ok(profile) => {
                    live.update(profile, clock());
                    live.source = source();
                }
                Err(e) => {
                    live.read_error = Some(format!(
                        "{}: {e} (showing the sample of {})",
                        clock(),
                        live.clock()
                    ))
                }
            }
            // The next sample is due an interval after this one was, unless reading took
            // longer than that.
            due = (due + interval).max(Instant::now());
            redraw = true;
            continue;
        }
        // An interrupted wait (a signal) is no error: the loop looks at the flag again.
        let ready = match event::poll(TICK.min(due - now)) {
            Ok(ready) => ready,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
            Err(e) => return Err(terminal_error(e)),
        };
        if !ready {
            continue;
        }
        match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => match live.view.key(key) {
                Action::Nothing => {}
                Action::Redraw => redraw = true,
                Action::Refresh => due = Instant::now(),
                Action::RestartGrowth => {
                    live.restart_growth();
                    redraw = true;
                }
                Action::Quit => return Ok(()),
            },
            Ok(Event::Resize(..)) => redraw = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(terminal_error(e)),
        }
    }
    Ok(())
}
