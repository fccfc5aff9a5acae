// SPDX-License-Identifier: GPL-2.0
//! `allocinfo watch`: samples at an interval and flags sites whose bytes trend upwards.
//!
//! Each site is followed from the first sample it appears in (a module loaded after the watch
//! began is judged from its load on). A site is a leak suspect when, over at least
//! [`MIN_INTERVALS`] intervals of its own, its bytes rose in more than half of them and its net
//! growth is larger than everything it gave back in the intervals where it shrank: one quiet or
//! falling interval does not clear a leak, and a site that swings up and down does not look like
//! one.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::WatchArgs;
use crate::cmd::{count, output_error, show_delta, show_size};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::profile::{Profile, Site, SiteTotals};
use crate::timestamp::utc_rfc3339;

/// Fewest intervals a site must have been seen over before it is called a suspect.
pub const MIN_INTERVALS: usize = 2;

/// One site's growth over the last interval.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Growth {
    #[serde(flatten)]
    pub site: Site,
    pub bytes: i128,
    pub delta_bytes: i128,
}

/// What one sample showed; each is one JSON line with `--json`.
#[derive(Debug, Serialize)]
pub struct SampleReport {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub sample: usize,
    pub count: Option<u64>,
    pub unix_ms: i64,
    pub time: String,
    pub sites: usize,
    pub total_bytes: i128,
    /// None for the first sample.
    pub delta_bytes: Option<i128>,
    /// Sites whose bytes rose since the previous sample.
    pub grew: usize,
    /// Sites that are leak suspects as of this sample.
    pub suspects: usize,
    pub top: Vec<Growth>,
}

/// A site whose bytes trend upwards.
#[derive(Debug, Serialize, PartialEq)]
pub struct Suspect {
    #[serde(flatten)]
    pub site: Site,
    /// The 1-based sample the site was first seen in.
    pub first_sample: usize,
    /// Intervals the site was seen over, and how many of them it grew in.
    pub intervals: usize,
    pub grew_in: usize,
    pub first_bytes: i128,
    pub last_bytes: i128,
    pub growth_bytes: i128,
    pub bytes_per_second: Option<f64>,
}

/// The verdict at the end of a watch; the last JSON line with `--json`.
#[derive(Debug, Serialize)]
pub struct WatchSummary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub samples: usize,
    pub intervals: usize,
    pub duration_ms: i64,
    /// False when there were too few intervals to judge.
    pub judged: bool,
    /// True when the watch was stopped by SIGINT or SIGTERM rather than by --count.
    pub interrupted: bool,
    pub suspects: Vec<Suspect>,
}

type SiteMap = BTreeMap<Site, SiteTotals>;

/// One site's history since the first sample it appeared in.
#[derive(Clone, Debug)]
struct Trend {
    first_sample: usize,
    first_ms: i64,
    first_bytes: i128,
    last_ms: i64,
    last_bytes: i128,
    intervals: usize,
    rises: usize,
    /// Sum of the drops over the intervals where the site shrank.
    given_back: i128,
}

impl Trend {
    fn is_suspect(&self) -> bool {
        self.intervals >= MIN_INTERVALS
            && 2 * self.rises > self.intervals
            && self.last_bytes - self.first_bytes > self.given_back
    }
}

/// Follows per-site counters across samples.
pub struct LeakTracker {
    filter: Filter,
    top_n: usize,
    first_ms: Option<i64>,
    last: Option<(i64, SiteMap)>,
    /// Sites present in the latest sample, with their history.
    trends: BTreeMap<Site, Trend>,
    samples: usize,
}

impl LeakTracker {
    /// A tracker looking at sites that pass `filter`, listing `top_n` growers per sample.
    pub fn new(filter: Filter, top_n: usize) -> Self {
        LeakTracker {
            filter,
            top_n,
            first_ms: None,
            last: None,
            trends: BTreeMap::new(),
            samples: 0,
        }
    }

    fn intervals(&self) -> usize {
        self.samples.saturating_sub(1)
    }

    /// Takes in one sample read at `unix_ms`.
    pub fn observe(&mut self, profile: &Profile, unix_ms: i64, count: Option<u64>) -> SampleReport {
        let current: SiteMap = profile
            .by_site()
            .into_iter()
            .filter(|(s, _)| self.filter.matches_site(s))
            .map(|(s, t)| (s.clone(), t))
            .collect();
        self.samples += 1;
        let sample = self.samples;
        let total_bytes = current.values().map(|t| t.bytes).sum();
        let mut top = Vec::new();
        let mut delta_bytes = None;
        if let Some((_, prev)) = &self.last {
            let prev_total: i128 = prev.values().map(|t| t.bytes).sum();
            delta_bytes = Some(total_bytes - prev_total);
            for (site, now) in &current {
                let before = prev.get(site).map_or(0, |t| t.bytes);
                if now.bytes > before {
                    top.push(Growth {
                        site: site.clone(),
                        bytes: now.bytes,
                        delta_bytes: now.bytes - before,
                    });
                }
            }
        }
        // A site that left (its module was unloaded) starts afresh if it comes back.
        self.trends.retain(|s, _| current.contains_key(s));
        for (site, now) in &current {
            let t = self.trends.entry(site.clone()).or_insert(Trend {
                first_sample: sample,
                first_ms: unix_ms,
                first_bytes: now.bytes,
                last_ms: unix_ms,
                last_bytes: now.bytes,
                intervals: 0,
                rises: 0,
                given_back: 0,
            });
            if t.first_sample == sample {
                continue;
            }
            let step = now.bytes - t.last_bytes;
            t.intervals += 1;
            if step > 0 {
                t.rises += 1;
            } else {
                t.given_back -= step;
            }
            t.last_bytes = now.bytes;
            t.last_ms = unix_ms;
        }
        let grew = top.len();
        top.sort_by(|a, b| {
            b.delta_bytes
                .cmp(&a.delta_bytes)
                .then_with(|| a.site.cmp(&b.site))
        });
        top.truncate(self.top_n);
        let report = SampleReport {
            kind: "sample",
            sample,
            count,
            unix_ms,
            time: utc_rfc3339(unix_ms),
            sites: current.len(),
            total_bytes,
            delta_bytes,
            grew,
            suspects: self.trends.values().filter(|t| t.is_suspect()).count(),
            top,
        };
        self.first_ms.get_or_insert(unix_ms);
        self.last = Some((unix_ms, current));
        report
    }

    /// The suspects so far, largest growth first.
    pub fn summary(&self, interrupted: bool) -> WatchSummary {
        let judged = self.intervals() >= MIN_INTERVALS;
        let duration_ms = match (self.first_ms, &self.last) {
            (Some(t0), Some((t1, _))) => t1 - t0,
            _ => 0,
        };
        let mut suspects: Vec<Suspect> = self
            .trends
            .iter()
            .filter(|(_, t)| t.is_suspect())
            .map(|(site, t)| {
                let growth = t.last_bytes - t.first_bytes;
                let ms = t.last_ms - t.first_ms;
                Suspect {
                    site: site.clone(),
                    first_sample: t.first_sample,
                    intervals: t.intervals,
                    grew_in: t.rises,
                    first_bytes: t.first_bytes,
                    last_bytes: t.last_bytes,
                    growth_bytes: growth,
                    bytes_per_second: (ms > 0).then(|| growth as f64 * 1000.0 / ms as f64),
                }
            })
            .collect();
        suspects.sort_by(|a, b| {
            b.growth_bytes
                .cmp(&a.growth_bytes)
                .then_with(|| a.site.cmp(&b.site))
        });
        WatchSummary {
            kind: "summary",
            samples: self.samples,
            intervals: self.intervals(),
            duration_ms,
            judged,
            interrupted,
            suspects,
        }
    }
}

fn write_sample(r: &SampleReport, plain: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let of = r.count.map_or(String::new(), |c| format!("/{c}"));
    write!(
        out,
        "sample {}{of} {}: {} at {}",
        r.sample,
        r.time,
        show_size(r.total_bytes, plain),
        count(r.sites, "site")
    )?;
    match r.delta_bytes {
        None => writeln!(out, " (baseline)")?,
        Some(d) => writeln!(
            out,
            " ({}), {} grew, {} trending up",
            show_delta(d, plain),
            r.grew,
            r.suspects
        )?,
    }
    for g in &r.top {
        writeln!(
            out,
            "  {:>12}  {}",
            show_delta(g.delta_bytes, plain),
            g.site.tag_text()
        )?;
    }
    Ok(())
}

fn write_summary(s: &WatchSummary, plain: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if !s.judged {
        return writeln!(
            out,
            "leak suspects: not judged, {} samples taken and at least {} are needed",
            s.samples,
            MIN_INTERVALS + 1
        );
    }
    let secs = s.duration_ms as f64 / 1000.0;
    if s.suspects.is_empty() {
        return writeln!(
            out,
            "leak suspects: none (no site trending up over {} intervals, {secs:.1} s)",
            s.intervals
        );
    }
    writeln!(
        out,
        "leak suspects: {} trending up over {} intervals, {secs:.1} s \
         (grew in most intervals seen, net growth above what was given back)",
        count(s.suspects.len(), "site"),
        s.intervals
    )?;
    for x in &s.suspects {
        let rate = x.bytes_per_second.map_or(String::new(), |r| {
            // Rates are shown with the same units as sizes; sub-byte precision is noise.
            format!("{}/s", show_delta(r.round() as i128, plain))
        });
        let since = if x.first_sample > 1 {
            format!(" (from sample {})", x.first_sample)
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {:>12} {:>14}  {}{since}",
            show_delta(x.growth_bytes, plain),
            rate,
            x.site.tag_text()
        )?;
    }
    Ok(())
}

fn write_line(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| Error::io("writing JSON", std::io::Error::from(e)))?;
    writeln!(out).map_err(output_error)
}

/// The watch loop with its inputs injected: `sample` reads a profile, `clock` gives wall time in
/// ms, `pace(k)` waits until sample `k` (0-based) is due and returns false if the watch was
/// interrupted meanwhile, which ends it with the verdict so far.
pub fn watch(
    sample: &mut dyn FnMut() -> Result<Profile>,
    clock: &mut dyn FnMut() -> i64,
    pace: &mut dyn FnMut(u64) -> bool,
    args: &WatchArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut tracker = LeakTracker::new(args.filter.to_filter(None), args.lines);
    let mut k = 0u64;
    let mut interrupted = false;
    while args.count.is_none_or(|c| k < c) {
        if !pace(k) {
            interrupted = true;
            break;
        }
        let profile = sample()?;
        let report = tracker.observe(&profile, clock(), args.count);
        if json {
            write_line(out, &report)?;
        } else {
            write_sample(&report, args.bytes, out).map_err(output_error)?;
        }
        // Someone may be tailing a pipe: each sample must show up when it is taken.
        out.flush().map_err(output_error)?;
        k += 1;
    }
    let summary = tracker.summary(interrupted);
    if json {
        write_line(out, &summary)
    } else {
        write_summary(&summary, args.bytes, out).map_err(output_error)
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_interrupt(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Makes SIGINT (Ctrl-C) and SIGTERM end the watch with its verdict instead of killing it.
fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` is zeroed plain data that is then filled in; the handler only
        // stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_interrupt as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Runs `watch` against the real clock, sleeping between samples.
pub fn run(
    sample: &mut dyn FnMut() -> Result<Profile>,
    args: &WatchArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let start = Instant::now();
    let interval = Duration::from_secs_f64(args.interval);
    // Sample k is due at start + k * interval, so slow reads do not make the schedule drift.
    catch_interrupts();
    let mut pace = |k: u64| {
        let due = interval.saturating_mul(u32::try_from(k).unwrap_or(u32::MAX));
        // Short naps, so that an interrupt is seen within a tenth of a second.
        while let Some(wait) = due.checked_sub(start.elapsed()).filter(|w| !w.is_zero()) {
            if INTERRUPTED.load(Ordering::Relaxed) {
                break;
            }
            thread::sleep(wait.min(Duration::from_millis(100)));
        }
        !INTERRUPTED.load(Ordering::Relaxed)
    };
    watch(
        sample,
        &mut crate::timestamp::now_unix_ms,
        &mut pace,
        args,
        json,
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::capture;
    use crate::parse::parse;

    crate::cmd::testdata::subcommand_args!(Watch, WatchArgs, "watch");

    /// A profile where the leaky site holds `leak` bytes and the noisy one `noise`.
    fn profile(leak: i64, noise: i64) -> Profile {
        parse(&format!(
            "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n\
             {leak:12} {:8} drivers/leak.c:10 [leaky] func:leak_alloc \n\
             {noise:12} {:8} mm/slub.c:2450 func:alloc_slab_page \n\
             {:12} {:8} lib/idr.c:12 func:idr_alloc \n",
            leak / 64,
            noise / 4096,
            4096,
            1
        ))
        .unwrap()
    }

    fn run_samples(samples: Vec<Profile>, argv: &[&str], json: bool) -> String {
        let mut it = samples.into_iter();
        let mut sample = move || {
            it.next()
                .ok_or_else(|| Error::Usage("out of samples".into()))
        };
        let mut t = 0;
        let mut clock = move || {
            t += 1000;
            t
        };
        let mut paced = Vec::new();
        let out = capture(|out| {
            watch(
                &mut sample,
                &mut clock,
                &mut |k| {
                    paced.push(k);
                    true
                },
                &args(argv),
                json,
                out,
            )
        });
        assert_eq!(paced, (0..paced.len() as u64).collect::<Vec<_>>());
        out
    }

    #[test]
    fn flags_only_steady_growth() {
        let mut tracker = LeakTracker::new(Filter::default(), 5);
        let seq = [(64, 8192), (128, 16384), (192, 8192), (256, 12288)];
        for (i, (leak, noise)) in seq.iter().enumerate() {
            let r = tracker.observe(&profile(*leak, *noise), i as i64 * 1000, Some(4));
            if i == 1 {
                assert_eq!((r.grew, r.suspects), (2, 0));
            }
        }
        let s = tracker.summary(false);
        assert!(s.judged);
        assert_eq!(s.intervals, 3);
        assert_eq!(s.suspects.len(), 1);
        assert_eq!(s.suspects[0].site.function, "leak_alloc");
        assert_eq!(s.suspects[0].growth_bytes, 192);
        assert_eq!(s.suspects[0].bytes_per_second, Some(64.0));
    }

    #[test]
    fn terminates_after_count_with_text_summary() {
        let samples = (1..=3).map(|i| profile(64 * i, 8192 * i)).collect();
        let text = run_samples(samples, &["--count", "3", "-n", "1"], false);
        assert_eq!(
            text,
            "sample 1/3 1970-01-01T00:00:01.000Z: 12.1 KiB at 3 sites (baseline)\n\
             sample 2/3 1970-01-01T00:00:02.000Z: 20.1 KiB at 3 sites (+8.1 KiB), 2 grew, 0 trending up\n\
             \x20     +8.0 KiB  mm/slub.c:2450 func:alloc_slab_page\n\
             sample 3/3 1970-01-01T00:00:03.000Z: 28.2 KiB at 3 sites (+8.1 KiB), 2 grew, 2 trending up\n\
             \x20     +8.0 KiB  mm/slub.c:2450 func:alloc_slab_page\n\
             leak suspects: 2 sites trending up over 2 intervals, 2.0 s \
             (grew in most intervals seen, net growth above what was given back)\n\
             \x20    +16.0 KiB     +8.0 KiB/s  mm/slub.c:2450 func:alloc_slab_page\n\
             \x20       +128 B        +64 B/s  drivers/leak.c:10 [leaky] func:leak_alloc\n"
        );
    }

    #[test]
    fn too_few_samples_and_json_lines() {
        let samples = vec![profile(64, 8192), profile(128, 8192)];
        let text = run_samples(
            samples.clone(),
            &["--count", "2", "--module", "leaky"],
            false,
        );
        assert!(text
            .ends_with("leak suspects: not judged, 2 samples taken and at least 3 are needed\n"));
        let json = run_samples(samples, &["--count", "2"], true);
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["type"], "sample");
        assert_eq!(lines[1]["delta_bytes"], 64);
        assert_eq!(lines[2]["type"], "summary");
        assert_eq!(lines[2]["judged"], false);
    }

    /// A profile from (bytes, site) pairs, in the order given.
    fn rows(sites: &[(i64, &str)]) -> Profile {
        let mut text = String::from("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n");
        for (bytes, site) in sites {
            text.push_str(&format!("{bytes:12} {:8} {site} \n", 1));
        }
        parse(&text).unwrap()
    }

    fn suspects(samples: &[Profile]) -> Vec<String> {
        let mut tracker = LeakTracker::new(Filter::default(), 5);
        for (i, p) in samples.iter().enumerate() {
            tracker.observe(p, i as i64 * 1000, None);
        }
        tracker
            .summary(false)
            .suspects
            .iter()
            .map(|s| s.site.tag_text())
            .collect()
    }

    #[test]
    fn a_site_that_appears_late_is_judged_from_its_first_sample() {
        let slow = "mm/slow.c:1 func:slow";
        let late = "drivers/late.c:7 [late] func:late_alloc";
        let mut samples = vec![rows(&[(64, slow)])];
        for k in 1..5 {
            samples.push(rows(&[(64 * (k + 1), slow), (4096 * k, late)]));
        }
        assert_eq!(
            suspects(&samples),
            [
                "drivers/late.c:7 [late] func:late_alloc",
                "mm/slow.c:1 func:slow"
            ]
        );
        // Two samples of its own are one interval: too few to call the late site.
        assert_eq!(suspects(&samples[..3]), ["mm/slow.c:1 func:slow"]);
    }

    #[test]
    fn one_quiet_interval_does_not_clear_a_trend() {
        let leak = "drivers/leak.c:10 func:leak";
        let noise = "mm/slub.c:1 func:noise";
        let seq = [
            (100, 800),
            (200, 1600),
            (200, 800),
            (300, 1300),
            (400, 1400),
        ];
        let samples: Vec<_> = seq
            .iter()
            .map(|&(l, n)| rows(&[(l, leak), (n, noise)]))
            .collect();
        // leak: rose in 3 of 4 intervals and gave nothing back; noise rose in 3 of 4 too, but
        // its net growth (600) is not above the 800 it gave back.
        assert_eq!(suspects(&samples), ["drivers/leak.c:10 func:leak"]);
    }

    #[test]
    fn read_errors_stop_the_watch() {
        let mut sample = || Err(Error::Usage("boom".into()));
        let r = watch(
            &mut sample,
            &mut || 0,
            &mut |_| true,
            &args(&["--count", "2"]),
            false,
            &mut Vec::new(),
        );
        assert!(r.is_err());
    }
}
