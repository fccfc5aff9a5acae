// SPDX-License-Identifier: GPL-2.0
//! The live view of `top` on a real terminal: tmux runs it in a detached session of known size,
//! send-keys presses the keys, capture-pane reads the screen back.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{fixture, BIN};
use regex::Regex;

/// How long a screen may take to show what a test waits for (a debug build on a loaded machine).
const PATIENCE: Duration = Duration::from_secs(20);

/// A tmux server of its own (its own socket, no configuration) with one shell in a pane, and a
/// scratch directory; both go away with it.
struct Tmux {
    socket: String,
    dir: PathBuf,
}

impl Tmux {
    fn start(name: &str, width: u16, height: u16) -> Tmux {
        let socket = format!("allocinfo-live-{}-{name}", std::process::id());
        let dir = std::env::temp_dir().join(&socket);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let t = Tmux { socket, dir };
        t.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "sh",
        ]);
        t.tmux(&["set-option", "-g", "status", "off"]);
        assert_eq!(
            t.display("#{pane_width}x#{pane_height}"),
            format!("{width}x{height}")
        );
        t.wait_for("the shell's prompt", |s| is_prompt(&s[0]));
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run tmux ({e}): install it (tools/testing/allocprof/setup.sh does)")
            });
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn display(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", "0", format])
            .trim_end()
            .to_string()
    }

    /// Presses keys by their tmux names (`q`, `Enter`, `C-c`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types text as it is.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    /// The screen, one string per row, trailing blanks removed.
    fn screen(&self) -> Vec<String> {
        self.tmux(&["capture-pane", "-p", "-t", "0"])
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// The screen once `ready` holds for it; fails with the last screen after [`PATIENCE`].
    fn wait_for(&self, what: &str, ready: impl Fn(&[String]) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if !screen.is_empty() && ready(&screen) {
                return screen;
            }
            if start.elapsed() > PATIENCE {
                panic!(
                    "no {what} after {PATIENCE:?}; the screen:\n{}",
                    screen.join("\n")
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clears the screen and waits for the prompt, so that what is typed next comes after it.
    fn clear(&self) {
        self.keys(&["clear", "Enter"]);
        self.wait_for("cleared screen", |s| {
            is_prompt(&s[0]) && s[1..].iter().all(String::is_empty)
        });
    }

    /// Runs `top ARGS` from a script that says how it ended: `exit=N`, and whether the
    /// terminal's modes are those from before (`tty-restored`).
    fn run_top(&self, args: &str) {
        let script = self.dir.join("run.sh");
        fs::write(
            &script,
            format!(
                "s=$(stty -g)\n\
                 '{BIN}' top {args}\n\
                 echo \"exit=$?\"\n\
                 if [ \"$(stty -g)\" = \"$s\" ]; then echo tty-restored; else echo tty-changed; fi\n"
            ),
        )
        .unwrap();
        self.type_text(&format!("sh {}", script.display()));
        self.keys(&["Enter"]);
    }

    /// Waits for the script of [`Tmux::run_top`] to end, and checks that top exited 0 and gave
    /// the terminal back: modes, main screen, cursor.
    fn assert_left_cleanly(&self) {
        // Found anywhere on a row: with raw mode left on, output lines do not start at column 0.
        let screen = self.wait_for("end of the run", |s| s.iter().any(|l| l.contains("tty-")));
        assert!(screen.contains(&"exit=0".to_string()), "{screen:#?}");
        assert!(screen.contains(&"tty-restored".to_string()), "{screen:#?}");
        assert!(
            !screen.iter().any(|l| l.contains("SIZE      CALLS")),
            "the view is still on the screen: {screen:#?}"
        );
        assert_eq!(self.display("#{alternate_on} #{cursor_flag}"), "0 1");
    }

    /// Replaces a file in one step, so the view never reads half of it.
    fn replace(&self, path: &Path, text: &str) {
        let tmp = self.dir.join("replacement.tmp");
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, path).unwrap();
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .env_remove("TMUX")
            .output();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Whether a row is sh's prompt alone (`#` as root).
fn is_prompt(row: &str) -> bool {
    row == "$" || row == "#"
}

/// The screen with the clock times made fixed.
fn masked(screen: &[String]) -> Vec<String> {
    let time = Regex::new(r"\b\d\d:\d\d:\d\d UTC\b").unwrap();
    screen
        .iter()
        .map(|l| time.replace_all(l, "HH:MM:SS UTC").into_owned())
        .collect()
}

fn is_view(s: &[String]) -> bool {
    s[0].starts_with("allocinfo top - ") && s.len() > 7 && s[6].contains("SIZE      CALLS")
}

#[test]
fn sorts_by_growth_filters_and_quits() {
    let t = Tmux::start("main", 100, 30);
    let file = t.dir.join("allocinfo.txt");
    let text = fs::read_to_string(fixture("v2-accurate.txt")).unwrap();
    fs::write(&file, &text).unwrap();
    t.run_top(&format!("-i '{}' --interval 1", file.display()));
    let head = format!(
        "allocinfo top - {} - every 1 s - HH:MM:SS UTC",
        file.display()
    );
    let mut want = vec![
        head.as_str(),
        "Total: 146.9 MiB in 24607 live allocations at 11 sites (11 shown)",
        "Growth: 0 B since HH:MM:SS UTC (r restarts it)",
        "Accuracy: 4 of 11 sites marked accurate:no (some allocations not counted), holding 8.5 MiB",
        "Sort: size  Filter: none  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
        "",
        "        SIZE      CALLS      GROWTH  SITE",
        "    80.6 MiB       2134         0 B  mm/slub.c:2412 func:alloc_slab_page",
        "    37.4 MiB       9566         0 B  mm/memory.c:1122 func:folio_prealloc",
        "    12.0 MiB       3072         0 B  mm/filemap.c:1971 func:__filemap_get_folio",
        "     7.2 MiB       7352         0 B  fs/inode.c:262 func:alloc_inode accurate:no future_key:some_val",
        "     4.5 MiB       1152         0 B  fs/ext4/super.c:5355 [ext4] func:ext4_fill_super",
        "     3.1 MiB        800         0 B  mm/percpu-vm.c:95 func:pcpu_alloc_pages",
        "     1.2 MiB        320         0 B  fs/dcache.c:1674 func:__d_alloc accurate:no",
        "   768.0 KiB        192         0 B  lib/xarray.c:378 func:xas_alloc",
        "    64.0 KiB         16         0 B  drivers/net/virtio_net.c:4902 [virtio_net] func:virtnet_alloc_q",
        "       192 B          3         0 B  mm/percpu.c:1744 func:pcpu_alloc_noprof accurate:no",
        "         0 B          0         0 B  lib/maple_tree.c:180 func:mt_alloc_bulk",
    ];
    want.resize(30, "");
    // Waiting for the whole screen, not for its first line: a capture may catch a redraw
    // half-way, and the rows are written after the head.
    t.wait_for("the first screen", |s| masked(s) == want);

    // xas_alloc gains 2 MiB in 512 allocations: still sorted by size, it moves up one place.
    let grown = text.replace(
        "      786432      192 lib/xarray.c:378 func:xas_alloc ",
        "     2883584      704 lib/xarray.c:378 func:xas_alloc ",
    );
    assert_ne!(grown, text);
    t.replace(&file, &grown);
    let xas = "     2.8 MiB        704    +2.0 MiB  lib/xarray.c:378 func:xas_alloc";
    let screen = t.wait_for("growth", |s| s[13] == xas);
    assert!(
        screen[2].starts_with("Growth: +2.0 MiB since "),
        "{screen:#?}"
    );
    assert_eq!(
        screen[11..=13],
        [
            "     4.5 MiB       1152         0 B  fs/ext4/super.c:5355 [ext4] func:ext4_fill_super",
            "     3.1 MiB        800         0 B  mm/percpu-vm.c:95 func:pcpu_alloc_pages",
            "     2.8 MiB        704    +2.0 MiB  lib/xarray.c:378 func:xas_alloc",
        ]
    );
    t.keys(&["g"]);
    let slub = "    80.6 MiB       2134         0 B  mm/slub.c:2412 func:alloc_slab_page";
    let screen = masked(&t.wait_for("sort by growth", |s| s[8] == slub));
    assert_eq!(
        screen[1..=7],
        [
            "Total: 148.9 MiB in 25119 live allocations at 11 sites (11 shown)",
            "Growth: +2.0 MiB since HH:MM:SS UTC (r restarts it)",
            "Accuracy: 4 of 11 sites marked accurate:no (some allocations not counted), holding 8.5 MiB",
            "Sort: growth  Filter: none  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
            "",
            "        SIZE      CALLS      GROWTH  SITE",
            "     2.8 MiB        704    +2.0 MiB  lib/xarray.c:378 func:xas_alloc",
        ]
    );

    // r: growth counts from the sample on the screen.
    t.keys(&["r"]);
    let xas_now = "     2.8 MiB        704         0 B  lib/xarray.c:378 func:xas_alloc";
    let screen = t.wait_for("growth restarted", |s| s[13] == xas_now);
    assert!(screen[2].starts_with("Growth: 0 B since "), "{screen:#?}");
    assert!(
        screen[7..18].iter().all(|l| &l[24..35] == "        0 B"),
        "{screen:#?}"
    );

    // A filter typed after /, shown as typed, applied on Enter.
    t.keys(&["/"]);
    t.type_text("ext4|virtio");
    t.wait_for("filter being typed", |s| s[5].ends_with(": ext4|virtio_"));
    t.keys(&["Enter"]);
    let mut want = vec![
        "Total: 4.6 MiB in 1168 live allocations at 2 of 11 sites (2 shown)",
        "Growth: 0 B since HH:MM:SS UTC (r restarts it)",
        "Accuracy: 1 of 2 sites marked accurate:no (some allocations not counted), holding 64.0 KiB",
        "Sort: growth  Filter: ext4|virtio  Keys: s size, c calls, g growth, / filter, space refresh, q quit",
        "",
        "        SIZE      CALLS      GROWTH  SITE",
        "     4.5 MiB       1152         0 B  fs/ext4/super.c:5355 [ext4] func:ext4_fill_super",
        "    64.0 KiB         16         0 B  drivers/net/virtio_net.c:4902 [virtio_net] func:virtnet_alloc_q",
    ];
    want.resize(29, "");
    t.wait_for("filtered rows", |s| masked(s)[1..] == want);

    t.keys(&["q"]);
    t.assert_left_cleanly();
}

/// The pid of the process running `exe` under `parent`, searched through /proc's children lists.
fn descendant_running(parent: u32, exe: &str) -> Option<u32> {
    let children = fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find_map(|pid| {
            let running = fs::read_link(format!("/proc/{pid}/exe"))
                .is_ok_and(|p| p.to_string_lossy().trim_end_matches(" (deleted)") == exe);
            if running {
                Some(pid)
            } else {
                descendant_running(pid, exe)
            }
        })
}

#[test]
fn resize_read_errors_ctrl_c_sigterm_and_once() {
    let t = Tmux::start("more", 100, 30);
    let file = t.dir.join("allocinfo.txt");
    let text = fs::read_to_string(fixture("vm-6.12.118-rust.txt")).unwrap();
    fs::write(&file, &text).unwrap();
    t.run_top(&format!("-i '{}' -d 1", file.display()));
    // The last row is written last.
    let screen = t.wait_for("live view", |s| is_view(s) && !s[29].is_empty());
    println!(
        "the live view of vm-6.12.118-rust.txt at 100x30:\n{}",
        screen.join("\n")
    );
    let first_rows = screen[7..].to_vec();

    // Smaller: the same rows, cut to the width, as many as fit.
    let cut = |l: &String| {
        l.chars()
            .take(60)
            .collect::<String>()
            .trim_end()
            .to_string()
    };
    let cut_rows: Vec<String> = first_rows[..5].iter().map(cut).collect();
    t.tmux(&["resize-window", "-t", "0", "-x", "60", "-y", "12"]);
    let screen = t.wait_for("redraw at 60x12", |s| s.len() == 12 && s[11] == cut_rows[4]);
    assert!(
        screen.iter().all(|l| l.chars().count() <= 60),
        "{screen:#?}"
    );
    assert_eq!(screen[7..], cut_rows);
    assert_eq!(
        screen[1],
        "Total: 19.8 MiB in 19088 live allocations at 861 sites (5 sh"
    );
    assert_eq!(screen[6], "        SIZE      CALLS      GROWTH  SITE");
    t.tmux(&["resize-window", "-t", "0", "-x", "100", "-y", "30"]);
    t.wait_for("redraw at 100x30", |s| {
        s.len() == 30 && s[29] == first_rows[22]
    });

    // A file that stops parsing: the last sample stays, the status line says why.
    t.replace(&file, "not allocinfo\n");
    let screen = t.wait_for("read error", |s| s[5].contains("line 1"));
    assert_eq!(screen[7..], first_rows);
    t.replace(&file, &text);
    t.wait_for("read error cleared", |s| s[5].is_empty());

    t.keys(&["C-c"]);
    t.assert_left_cleanly();

    // SIGTERM (kill) ends the view as q does.
    t.clear();
    t.run_top(&format!("-i '{}'", file.display()));
    t.wait_for("live view", is_view);
    let shell: u32 = t.display("#{pane_pid}").parse().unwrap();
    let exe = fs::canonicalize(BIN).unwrap();
    let pid =
        descendant_running(shell, &exe.to_string_lossy()).expect("top runs under the pane's shell");
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    t.assert_left_cleanly();

    // --once on the terminal prints what a pipe gets.
    t.clear();
    let piped = common::ok(&["top", "-i", &file.to_string_lossy(), "-n", "5"]);
    t.run_top(&format!("-i '{}' -n 5 --once", file.display()));
    let screen = t.wait_for("printout", |s| s.iter().any(|l| l.starts_with("tty-")));
    let printed: Vec<&str> = piped.lines().collect();
    assert_eq!(screen[1..=printed.len()], printed);
    assert_eq!(
        screen[printed.len() + 1..=printed.len() + 2],
        ["exit=0", "tty-restored"]
    );
}
