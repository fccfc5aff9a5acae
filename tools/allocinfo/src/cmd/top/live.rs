// SPDX-License-Identifier: GPL-2.0
//! The live view of `allocinfo top`: its state, its keys, and the screen laid out as lines.
//!
//! Everything here but [`wanted`] is pure: the terminal itself (raw mode, the alternate screen,
//! the clock and the refresh loop) is in [`terminal`], which feeds keys to [`View::key`] and
//! prints [`Live::layout`].

mod terminal;

use std::collections::HashMap;
use std::io::IsTerminal;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use regex::Regex;

use crate::cli::{Cli, SortKey, TopArgs};
use crate::cmd::{count, show_delta, show_size};
use crate::filter::Filter;
use crate::profile::{Profile, Row, Site};
use crate::render::row_line;

pub use terminal::run;

/// Whether `top` shows the live view: standard output is a terminal and nothing asks for one
/// printout (`--once`, `--json`, `--by-node`, or standard input, which cannot be read again).
pub fn wanted(cli: &Cli, args: &TopArgs) -> bool {
    let stdin = cli.input().is_some_and(|p| p.as_os_str() == "-");
    !(args.once || cli.json || args.by_node || stdin) && std::io::stdout().is_terminal()
}

/// What the rows are ranked by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Bytes held, largest first.
    Size,
    /// Live allocations, most first (then bytes).
    Calls,
    /// Bytes gained since the baseline, most first (then bytes).
    Growth,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Size => "size",
            Order::Calls => "calls",
            Order::Growth => "growth",
        }
    }
}

impl From<SortKey> for Order {
    fn from(key: SortKey) -> Self {
        match key {
            SortKey::Size => Order::Size,
            SortKey::Calls => Order::Calls,
        }
    }
}

/// The rows as they were when growth started counting (the first sample, or the last `r`).
///
/// A row is known by its site (file, line, module, function) and its occurrence among the rows
/// of that site (a macro used twice on one line gives two rows of one site), so that the
/// `accurate:no` field coming or going does not make a site new.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// Each row's site and bytes, in row order.
    rows: Vec<(Site, i64)>,
    /// When it was read, as the head shows it.
    taken: String,
}

/// Numbers each row by its occurrence among the rows of its site (1 for the first).
fn occurrences<'a>(sites: impl Iterator<Item = &'a Site>) -> Vec<(&'a Site, usize)> {
    let mut seen: HashMap<&Site, usize> = HashMap::new();
    sites
        .map(|site| {
            let n = seen.entry(site).or_insert(0);
            *n += 1;
            (site, *n)
        })
        .collect()
}

impl Baseline {
    /// The baseline of `profile`, read at `taken`.
    pub fn of(profile: &Profile, taken: &str) -> Self {
        Baseline {
            rows: profile
                .rows
                .iter()
                .map(|r| (r.site.clone(), r.bytes))
                .collect(),
            taken: taken.to_string(),
        }
    }

    /// Each row's growth in bytes, in row order: its bytes less those of the baseline, or all
    /// its bytes for a row the baseline does not have.
    pub fn growth(&self, profile: &Profile) -> Vec<i128> {
        let rows = &profile.rows;
        // The kernel lists its tags in one order from read to read: then rows pair up by place.
        let same_sites = rows.len() == self.rows.len()
            && rows
                .iter()
                .zip(&self.rows)
                .all(|(r, (site, _))| r.site == *site);
        if same_sites {
            return rows
                .iter()
                .zip(&self.rows)
                .map(|(r, (_, before))| i128::from(r.bytes) - i128::from(*before))
                .collect();
        }
        let before: HashMap<(&Site, usize), i64> =
            occurrences(self.rows.iter().map(|(site, _)| site))
                .into_iter()
                .zip(self.rows.iter().map(|(_, bytes)| *bytes))
                .collect();
        occurrences(rows.iter().map(|r| &r.site))
            .into_iter()
            .zip(rows)
            .map(|(key, row)| {
                let was = before.get(&key).copied().unwrap_or(0);
                i128::from(row.bytes) - i128::from(was)
            })
            .collect()
    }
}

/// What a key asks the terminal loop to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing changed.
    Nothing,
    /// The view changed: draw it again.
    Redraw,
    /// Read the input again now.
    Refresh,
    /// Count growth from the current sample on.
    RestartGrowth,
    /// Leave the live view.
    Quit,
}

/// Longest filter one can type, in characters.
const MAX_FILTER: usize = 1000;

/// What the user chose with keys: the order, the typed filter, and the line being typed.
#[derive(Clone, Debug)]
pub struct View {
    pub order: Order,
    /// Plain byte counts instead of IEC sizes (`--bytes`).
    pub plain: bool,
    /// The filter typed after `/`: the tag text must match it.
    filter: Option<Regex>,
    /// The filter being typed, from `/` to Enter or Esc.
    typing: Option<String>,
    /// Said on the status line until the next key (a filter that is not a regular expression).
    note: Option<String>,
}

impl View {
    pub fn new(order: Order, plain: bool) -> Self {
        View {
            order,
            plain,
            filter: None,
            typing: None,
            note: None,
        }
    }

    /// Applies one key press.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        self.note = None;
        if let Some(text) = self.typing.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let text = std::mem::take(text);
                    self.typing = None;
                    self.set_filter(&text);
                }
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char('u') if ctrl => text.clear(),
                KeyCode::Char(c) if !ctrl && text.chars().count() < MAX_FILTER => text.push(c),
                _ => return Action::Nothing,
            }
            return Action::Redraw;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
            KeyCode::Char('s') => self.sort(Order::Size),
            KeyCode::Char('c') => self.sort(Order::Calls),
            KeyCode::Char('g') => self.sort(Order::Growth),
            KeyCode::Char('/') => {
                self.typing = Some(self.filter_text().to_string());
                Action::Redraw
            }
            KeyCode::Char('r') => Action::RestartGrowth,
            KeyCode::Char(' ') => Action::Refresh,
            _ => Action::Redraw,
        }
    }

    fn sort(&mut self, order: Order) -> Action {
        self.order = order;
        Action::Redraw
    }

    /// Sets the filter typed; an empty one clears it, a bad one is refused with a note.
    fn set_filter(&mut self, text: &str) {
        if text.is_empty() {
            self.filter = None;
            return;
        }
        match Regex::new(text) {
            Ok(re) => self.filter = Some(re),
            // regex's messages span lines (the pattern, a caret); the last says what is wrong.
            Err(e) => {
                let why = e.to_string();
                let why = why
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                self.note = Some(format!(
                    "not a regular expression: {}",
                    why.trim().trim_start_matches("error: ")
                ));
            }
        }
    }

    fn filter_text(&self) -> &str {
        self.filter.as_ref().map_or("", Regex::as_str)
    }

    fn matches(&self, row: &Row) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|re| re.is_match(&row.site.tag_text()))
    }
}

/// Everything the screen shows.
#[derive(Debug)]
pub struct Live {
    /// The input, as the head names it.
    pub source: String,
    /// Seconds between refreshes.
    pub interval: f64,
    /// The command line's filters (and --min-size).
    filter: Filter,
    /// The last sample read, and when (`HH:MM:SS UTC`).
    profile: Profile,
    clock: String,
    baseline: Baseline,
    /// Each row's growth since the baseline, in row order.
    growth: Vec<i128>,
    /// The rows passing the filters in rank order, for the sort and filter it was made for:
    /// ranking a large profile takes a while, and most redraws (a key typed, a resize) keep it.
    ranked: Option<Ranked>,
    /// Why the last read failed, until one succeeds.
    pub read_error: Option<String>,
    pub view: View,
}

/// The rows passing the filters, ranked.
#[derive(Debug)]
struct Ranked {
    /// The order and typed filter they were ranked for.
    order: Order,
    filter: String,
    /// Indices into the profile's rows, with the rows' growth: the first `kept` in rank order
    /// (and any that tie with the last of them), or all.
    rows: Vec<(usize, i128)>,
    /// Whether rows that passed the filters were left out, ranked below those kept.
    cut: bool,
    totals: Totals,
}

/// Sums over the rows passing the filters.
#[derive(Debug, Default, PartialEq, Eq)]
struct Totals {
    matched: usize,
    bytes: i128,
    calls: i128,
    /// Rows whose call count wrapped, left out of `calls`.
    wrapped: usize,
    growth: i128,
    /// Rows marked `accurate:no`, and their bytes.
    inaccurate: usize,
    inaccurate_bytes: i128,
}

/// Ranks rows (indices into `rows`, with their growth) and keeps the first `keep` of them and
/// any that tie with the last: a screen shows no more, and selecting them before sorting
/// keeps a large profile quick. Ties are broken on the rows' text as `top` breaks them
/// (`sort -g | tail`), so the live view sorted by size starts with the rows `top` prints. The
/// text is made only for rows that tie on the order and on bytes. Returns whether rows were
/// left out.
fn rank(rows: &[Row], ranked: &mut Vec<(usize, i128)>, order: Order, keep: usize) -> bool {
    let by_key = |(a, ga): &(usize, i128), (b, gb): &(usize, i128)| {
        let (a, b) = (&rows[*a], &rows[*b]);
        let primary = match order {
            Order::Size => b.bytes.cmp(&a.bytes),
            Order::Calls => b.live_calls().cmp(&a.live_calls()),
            Order::Growth => gb.cmp(ga),
        };
        primary.then(b.bytes.cmp(&a.bytes))
    };
    let total = ranked.len();
    if keep > 0 && total > keep {
        let (_, &mut last, _) = ranked.select_nth_unstable_by(keep - 1, by_key);
        ranked.retain(|r| by_key(r, &last).is_le());
    }
    let cut = ranked.len() < total;
    ranked.sort_by(by_key);
    let mut start = 0;
    while start < ranked.len() {
        let first = ranked[start];
        let end = start
            + ranked[start..]
                .iter()
                .take_while(|r| by_key(r, &first).is_eq())
                .count();
        if end - start > 1 {
            let run = &mut ranked[start..end];
            let mut keyed: Vec<(String, (usize, i128))> =
                run.iter().map(|r| (row_line(&rows[r.0]), *r)).collect();
            keyed.sort_by(|(la, _), (lb, _)| lb.cmp(la));
            for (slot, (_, r)) in run.iter_mut().zip(keyed) {
                *slot = r;
            }
        }
        start = end;
    }
    cut
}

/// The column heading, and the width of the columns before SITE.
const HEADING: &str = "        SIZE      CALLS      GROWTH  SITE";

/// Makes text safe to print on one line: control characters would move the cursor.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

impl Live {
    /// A view of `profile`, read at `clock`, counting growth from it.
    pub fn new(source: String, args: &TopArgs, profile: Profile, clock: String) -> Self {
        Live {
            source,
            interval: args.interval,
            filter: args.filter.to_filter(args.min_size),
            baseline: Baseline::of(&profile, &clock),
            growth: vec![0; profile.rows.len()],
            profile,
            clock,
            ranked: None,
            read_error: None,
            view: View::new(args.sort.into(), args.bytes),
        }
    }

    /// Takes a new sample, read at `clock`.
    pub fn update(&mut self, profile: Profile, clock: String) {
        self.growth = self.baseline.growth(&profile);
        self.profile = profile;
        self.clock = clock;
        self.ranked = None;
        self.read_error = None;
    }

    /// When the sample shown was read.
    pub fn clock(&self) -> &str {
        &self.clock
    }

    /// Counts growth from the current sample on.
    pub fn restart_growth(&mut self) {
        self.baseline = Baseline::of(&self.profile, &self.clock);
        self.growth = vec![0; self.profile.rows.len()];
        self.ranked = None;
    }

    /// Ranks the rows passing the filters for the view's order and filter, at least `need` of
    /// them, unless they are ranked so already (the sample and the baseline clear the ranking
    /// when they change).
    fn rank_if_stale(&mut self, need: usize) {
        let order = self.view.order;
        let stale = self.ranked.as_ref().is_none_or(|r| {
            r.order != order
                || r.filter != self.view.filter_text()
                || (r.cut && r.rows.len() < need)
        });
        if stale {
            let rows = &self.profile.rows;
            let mut ranked: Vec<(usize, i128)> = self
                .growth
                .iter()
                .enumerate()
                .filter(|(i, _)| self.filter.matches(&rows[*i]) && self.view.matches(&rows[*i]))
                .map(|(i, g)| (i, *g))
                .collect();
            let mut totals = Totals {
                matched: ranked.len(),
                ..Totals::default()
            };
            for &(i, growth) in &ranked {
                let row = &rows[i];
                totals.bytes += i128::from(row.bytes);
                totals.calls += row.countable_calls();
                totals.wrapped += usize::from(row.calls_wrapped());
                totals.growth += growth;
                if !row.accurate() {
                    totals.inaccurate += 1;
                    totals.inaccurate_bytes += i128::from(row.bytes);
                }
            }
            let cut = rank(rows, &mut ranked, order, need);
            self.ranked = Some(Ranked {
                order,
                filter: self.view.filter_text().to_string(),
                rows: ranked,
                cut,
                totals,
            });
        }
    }

    /// The screen as lines of at most `width` characters, at most `height` of them: the head,
    /// then as many rows as fit.
    pub fn layout(&mut self, width: u16, height: u16) -> Vec<String> {
        let height = usize::from(height);
        // No screen shows more rows than lines.
        self.rank_if_stale(height);
        let Some(ranked) = self.ranked.as_ref() else {
            return Vec::new();
        };
        let mut lines = self.head(&ranked.totals, height);
        let room = height.saturating_sub(lines.len());
        let plain = self.view.plain;
        for &(i, growth) in ranked.rows.iter().take(room) {
            let row = &self.profile.rows[i];
            lines.push(format!(
                "{:>12} {:>10} {:>11}  {}{}",
                show_size(i128::from(row.bytes), plain),
                row.live_calls(),
                show_delta(growth, plain),
                printable(&row.tag_text()),
                if row.calls_wrapped() {
                    " (calls wrapped)"
                } else {
                    ""
                }
            ));
        }
        let width = usize::from(width);
        lines
            .into_iter()
            .take(height)
            .map(|l| l.chars().take(width).collect())
            .collect()
    }

    /// The head: title, totals, growth, accuracy, keys, status line and column heading.
    fn head(&self, t: &Totals, height: usize) -> Vec<String> {
        let plain = self.view.plain;
        let sites = self.profile.rows.len();
        let at = if t.matched == sites {
            count(sites, "site")
        } else {
            format!("{} of {}", t.matched, count(sites, "site"))
        };
        let shown = t.matched.min(height.saturating_sub(7));
        let allocations = if t.calls == 1 {
            "allocation"
        } else {
            "allocations"
        };
        let wrapped = match t.wrapped {
            0 => String::new(),
            n => format!("; {} with a wrapped call count left out", count(n, "site")),
        };
        let accuracy = if !self.profile.version.has_fields() {
            format!(
                "not reported by format {} (2.0 marks sites accurate:no)",
                self.profile.version.as_str()
            )
        } else if t.inaccurate == 0 {
            "no site marked accurate:no".to_string()
        } else {
            format!(
                "{} of {} marked accurate:no (some allocations not counted), holding {}",
                t.inaccurate,
                count(t.matched, "site"),
                show_size(t.inaccurate_bytes, plain)
            )
        };
        let filter = match self.view.filter_text() {
            "" => "none".to_string(),
            text => printable(text),
        };
        let status = if let Some(text) = &self.view.typing {
            format!(
                "Filter (regex on file:line [module] func:name; Enter applies, Esc cancels): {}_",
                printable(text)
            )
        } else if let Some(note) = self.view.note.as_ref().or(self.read_error.as_ref()) {
            printable(note)
        } else {
            String::new()
        };
        vec![
            format!(
                "allocinfo top - {} - every {} s - {}",
                printable(&self.source),
                self.interval,
                self.clock
            ),
            format!(
                "Total: {} in {} live {allocations} at {at} ({shown} shown){wrapped}",
                show_size(t.bytes, plain),
                t.calls,
            ),
            format!(
                "Growth: {} since {} (r restarts it)",
                show_delta(t.growth, plain),
                self.baseline.taken
            ),
            format!("Accuracy: {accuracy}"),
            format!(
                "Sort: {}  Filter: {filter}  Keys: s size, c calls, g growth, / filter, \
                 space refresh, q quit",
                self.view.order.name()
            ),
            status,
            HEADING.to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::sample;
    use crate::parse::parse;
    use crossterm::event::KeyEventKind;

    crate::cmd::testdata::subcommand_args!(Top, TopArgs, "top");

    fn press(view: &mut View, keys: &str) -> Vec<Action> {
        keys.chars()
            .map(|c| {
                let code = match c {
                    '\n' => KeyCode::Enter,
                    '\x1b' => KeyCode::Esc,
                    '\x08' => KeyCode::Backspace,
                    c => KeyCode::Char(c),
                };
                view.key(KeyEvent::new_with_kind(
                    code,
                    KeyModifiers::NONE,
                    KeyEventKind::Press,
                ))
            })
            .collect()
    }

    fn v2(rows: &str) -> Profile {
        parse(&format!(
            "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n{rows}"
        ))
        .unwrap()
    }

    #[test]
    fn first_screen_of_the_sample() {
        let mut live = Live::new(
            "t.txt".into(),
            &args(&["--interval", "1"]),
            sample(),
            "10:00:00 UTC".into(),
        );
        assert_eq!(
            live.layout(100, 12),
            [
                "allocinfo top - t.txt - every 1 s - 10:00:00 UTC",
                "Total: 5.3 MiB in 2000 live allocations at 7 sites (5 shown)",
                "Growth: 0 B since 10:00:00 UTC (r restarts it)",
                "Accuracy: not reported by format 1.0 (2.0 marks sites accurate:no)",
                "Sort: size  Filter: none  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
                "",
                "        SIZE      CALLS      GROWTH  SITE",
                "     4.0 MiB       1024         0 B  mm/slub.c:2450 func:alloc_slab_page",
                "     1.0 MiB          8         0 B  fs/ext4/super.c:100 [ext4] func:ext4_fill_super",
                "   256.0 KiB         64         0 B  mm/page_alloc.c:4800 func:__alloc_pages",
                "    16.0 KiB          4         0 B  fs/ext4/inode.c:55 [ext4] func:ext4_iget",
                "     4.0 KiB        900         0 B  kernel/fork.c:77 func:dup_task_struct",
            ]
        );
    }

    #[test]
    fn cut_to_the_screen() {
        let mut live = Live::new("t.txt".into(), &args(&[]), sample(), "10:00:00 UTC".into());
        assert_eq!(
            live.layout(20, 9),
            [
                "allocinfo top - t.tx",
                "Total: 5.3 MiB in 20",
                "Growth: 0 B since 10",
                "Accuracy: not report",
                "Sort: size  Filter: ",
                "",
                "        SIZE      CA",
                "     4.0 MiB       1",
                "     1.0 MiB        ",
            ]
        );
        assert_eq!(live.layout(80, 3).len(), 3);
        assert!(live.layout(0, 5).iter().all(String::is_empty));
        assert!(live.layout(80, 0).is_empty());
    }

    #[test]
    fn a_taller_screen_after_a_short_one_shows_every_row_it_has_room_for() {
        let p = || parse(include_str!("../../../tests/fixtures/vm-6.12.118-rust.txt")).unwrap();
        let mut fresh = Live::new("t".into(), &args(&[]), p(), "10:00:00 UTC".into());
        let mut resized = Live::new("t".into(), &args(&[]), p(), "10:00:00 UTC".into());
        assert_eq!(resized.layout(200, 10).len(), 10);
        let tall = fresh.layout(200, 60);
        assert_eq!(tall.len(), 60);
        assert_eq!(resized.layout(200, 60), tall);
    }

    #[test]
    fn growth_since_the_baseline_and_its_order() {
        let before = v2("        4096        1 a.c:1 func:f \n\
                         \x20       8192        2 b.c:2 func:g \n\
                         \x20         64        1 d.c:4 func:k \n\
                         \x20         64        1 d.c:4 func:k \n");
        let after = v2("        4096        1 a.c:1 func:f \n\
                        \x20       4096        1 b.c:2 func:g \n\
                        \x20         64        1 d.c:4 func:k accurate:no \n\
                        \x20       1088        3 d.c:4 func:k \n\
                        \x20        512        8 c.c:3 [m] func:h \n");
        assert_eq!(
            Baseline::of(&before, "t").growth(&after),
            [0, -4096, 0, 1024, 512]
        );
        // The same sites in the same order (paired by place), and in another order (by site).
        let same = v2("        4096        1 a.c:1 func:f \n\
                       \x20      12288        3 b.c:2 func:g \n\
                       \x20         64        1 d.c:4 func:k accurate:no \n\
                       \x20          0        0 d.c:4 func:k \n");
        assert_eq!(Baseline::of(&before, "t").growth(&same), [0, 4096, 0, -64]);
        let moved = v2("          64        1 d.c:4 func:k \n\
                        \x20          0        0 d.c:4 func:k \n\
                        \x20      12288        3 b.c:2 func:g \n\
                        \x20       4096        1 a.c:1 func:f \n");
        assert_eq!(Baseline::of(&before, "t").growth(&moved), [0, -64, 4096, 0]);
        let mut live = Live::new("f".into(), &args(&[]), before, "10:00:00 UTC".into());
        assert_eq!(
            live.layout(100, 30)[7],
            "     8.0 KiB          2         0 B  b.c:2 func:g"
        );
        live.update(after, "10:00:03 UTC".into());
        assert_eq!(press(&mut live.view, "g"), [Action::Redraw]);
        assert_eq!(
            live.layout(100, 30),
            [
                "allocinfo top - f - every 3 s - 10:00:03 UTC",
                "Total: 9.6 KiB in 14 live allocations at 5 sites (5 shown)",
                "Growth: -2.5 KiB since 10:00:00 UTC (r restarts it)",
                "Accuracy: 1 of 5 sites marked accurate:no (some allocations not counted), holding 64 B",
                "Sort: growth  Filter: none  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
                "",
                "        SIZE      CALLS      GROWTH  SITE",
                "     1.1 KiB          3    +1.0 KiB  d.c:4 func:k",
                "       512 B          8      +512 B  c.c:3 [m] func:h",
                "     4.0 KiB          1         0 B  a.c:1 func:f",
                "        64 B          1         0 B  d.c:4 func:k accurate:no",
                "     4.0 KiB          1    -4.0 KiB  b.c:2 func:g",
            ]
        );
        assert_eq!(press(&mut live.view, "c"), [Action::Redraw]);
        let firsts: Vec<String> = live.layout(100, 30)[7..]
            .iter()
            .map(|l| l[37..].to_string())
            .collect();
        assert_eq!(
            firsts,
            [
                "c.c:3 [m] func:h",
                "d.c:4 func:k",
                "b.c:2 func:g",
                "a.c:1 func:f",
                "d.c:4 func:k accurate:no"
            ]
        );
        live.restart_growth();
        assert_eq!(
            live.layout(100, 30)[2],
            "Growth: 0 B since 10:00:03 UTC (r restarts it)"
        );
    }

    #[test]
    fn ties_broken_as_top_breaks_them() {
        let p = parse(include_str!("../../../tests/fixtures/vm-6.12.118-rust.txt")).unwrap();
        for (key, order) in [(SortKey::Size, Order::Size), (SortKey::Calls, Order::Calls)] {
            let mut ranked: Vec<(usize, i128)> = (0..p.rows.len()).map(|i| (i, 0)).collect();
            assert!(!rank(&p.rows, &mut ranked, order, 0));
            let live: Vec<&Row> = ranked.iter().map(|&(i, _)| &p.rows[i]).collect();
            let top = crate::cmd::top::rank(p.rows.iter(), key);
            assert!(
                live.iter().zip(&top).all(|(a, b)| std::ptr::eq(*a, *b)),
                "{order:?}"
            );
            assert_eq!(live.len(), top.len());
        }
    }

    #[test]
    fn kept_rows_are_the_first_of_the_whole_ranking() {
        let p = parse(include_str!("../../../tests/fixtures/vm-6.12.118-rust.txt")).unwrap();
        let growth = |i: usize| (i as i128 % 7) * 4096;
        let all: Vec<(usize, i128)> = (0..p.rows.len()).map(|i| (i, growth(i))).collect();
        for order in [Order::Size, Order::Calls, Order::Growth] {
            let mut full = all.clone();
            assert!(!rank(&p.rows, &mut full, order, 0));
            for keep in [1, 2, 10, 30, 200, p.rows.len() - 1] {
                let mut kept = all.clone();
                let cut = rank(&p.rows, &mut kept, order, keep);
                // Rows tied with the last kept one stay: the ranking's first rows, no fewer.
                assert!(kept.len() >= keep, "{order:?} {keep}");
                assert_eq!(cut, kept.len() < full.len(), "{order:?} {keep}");
                assert_eq!(kept[..], full[..kept.len()], "{order:?} {keep}");
                assert!(cut || keep == p.rows.len() - 1, "{order:?} {keep}");
            }
            let mut kept = all.clone();
            assert!(!rank(&p.rows, &mut kept, order, p.rows.len()));
            assert_eq!(kept, full);
        }
        // Zero-byte rows tie in the size order: keeping one of them keeps them all.
        let positive = p.rows.iter().filter(|r| r.bytes > 0).count();
        let zero = p.rows.iter().filter(|r| r.bytes == 0).count();
        let mut kept = all.clone();
        rank(&p.rows, &mut kept, Order::Size, positive + 1);
        assert!(zero > 1);
        assert_eq!(kept.len(), positive + zero);
    }

    #[test]
    fn typed_filter_and_command_line_filters() {
        let mut live = Live::new(
            "t.txt".into(),
            &args(&["--module", "ext4", "--bytes"]),
            sample(),
            "10:00:00 UTC".into(),
        );
        assert_eq!(press(&mut live.view, "/inode"), vec![Action::Redraw; 6]);
        assert_eq!(
            live.layout(120, 30)[5],
            "Filter (regex on file:line [module] func:name; Enter applies, Esc cancels): inode_"
        );
        assert_eq!(live.layout(120, 30).len(), 9, "not applied while typed");
        press(&mut live.view, "\n");
        let screen = live.layout(120, 30);
        assert_eq!(
            screen[1..],
            [
                "Total: 16384 in 4 live allocations at 1 of 7 sites (1 shown)",
                "Growth: 0 since 10:00:00 UTC (r restarts it)",
                "Accuracy: not reported by format 1.0 (2.0 marks sites accurate:no)",
                "Sort: size  Filter: inode  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
                "",
                "        SIZE      CALLS      GROWTH  SITE",
                "       16384          4           0  fs/ext4/inode.c:55 [ext4] func:ext4_iget",
            ]
        );
        // `/` starts from the filter in place; Backspace, Esc and a bad pattern keep it.
        press(&mut live.view, "/\x08\x08\x08\x08\x08(\n");
        let screen = live.layout(120, 30);
        assert_eq!(
            screen[4..6],
            [
                "Sort: size  Filter: inode  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
                "not a regular expression: unclosed group",
            ]
        );
        press(&mut live.view, "/x\x1b");
        assert_eq!(live.view.filter_text(), "inode");
        press(&mut live.view, "/\x08\x08\x08\x08\x08\n");
        assert_eq!(
            live.layout(120, 30)[1],
            "Total: 1064960 in 12 live allocations at 2 of 7 sites (2 shown)"
        );
    }

    #[test]
    fn keys() {
        let mut view = View::new(Order::Size, false);
        assert_eq!(
            press(&mut view, "q r x"),
            [
                Action::Quit,
                Action::Refresh,
                Action::RestartGrowth,
                Action::Refresh,
                Action::Redraw
            ]
        );
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(view.key(ctrl_c), Action::Quit);
        press(&mut view, "/abc");
        assert_eq!(view.key(ctrl_c), Action::Quit, "also while typing");
        assert_eq!(press(&mut view, "q"), [Action::Redraw], "q is typed");
        assert_eq!(press(&mut view, "\x1b\x1b"), [Action::Redraw, Action::Quit]);
    }

    #[test]
    fn wrapped_calls_and_control_characters() {
        let p = v2("        4096 18446744073709551615 a.c:1 func:f \n\
                    \x20         64        1 b\x07.c:1 func:g accurate:no \n");
        let mut live = Live::new("a\x1b[2J".into(), &args(&[]), p, "10:00:00 UTC".into());
        assert_eq!(
            live.layout(100, 9),
            [
                "allocinfo top - a?[2J - every 3 s - 10:00:00 UTC",
                "Total: 4.1 KiB in 1 live allocation at 2 sites (2 shown); 1 site with a wrapped call count left out",
                "Growth: 0 B since 10:00:00 UTC (r restarts it)",
                "Accuracy: 1 of 2 sites marked accurate:no (some allocations not counted), holding 64 B",
                "Sort: size  Filter: none  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
                "",
                "        SIZE      CALLS      GROWTH  SITE",
                "     4.0 KiB         -1         0 B  a.c:1 func:f (calls wrapped)",
                "        64 B          1         0 B  b?.c:1 func:g accurate:no",
            ]
        );
    }
}
