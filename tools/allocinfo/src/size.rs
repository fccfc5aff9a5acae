// SPDX-License-Identifier: GPL-2.0
//! IEC byte sizes: printing them as `1.5 MiB` and reading them from the command line.

use crate::parse::quote;

const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `512 B`, `1.5 MiB`, `-4.0 KiB`: one decimal above 1 KiB.
pub fn iec(bytes: i128) -> String {
    let sign = if bytes < 0 { "-" } else { "" };
    let abs = bytes.unsigned_abs();
    if abs < 1024 {
        return format!("{sign}{abs} B");
    }
    // Precision loss in the float is far below the one printed decimal.
    let mut value = abs as f64 / 1024.0;
    let mut unit = 0;
    // 1023.96 KiB would print as 1024.0 KiB; move it up a unit instead.
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{sign}{value:.1} {}", UNITS[unit])
}

/// Like [`iec`] but always signed, for deltas: `+1.5 MiB`, `-512 B`, `0 B`.
pub fn iec_delta(bytes: i128) -> String {
    if bytes > 0 {
        format!("+{}", iec(bytes))
    } else {
        iec(bytes)
    }
}

/// A signed integer with an explicit `+` for positive deltas.
pub fn signed(n: i128) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

/// Reads `4096`, `64K`, `1.5MiB`, `2 GiB`, `64KB`: always binary multiples, so `K`, `KB` and
/// `KiB` all mean 1024 (as in /proc/meminfo's `kB`).
pub fn parse_size(text: &str) -> Result<i64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "size {} is negative; sizes are 0 or more",
            quote(text)
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let shift = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "unknown size unit in {} (use B, K, M, G or T, optionally followed by B or iB)",
                quote(text)
            ))
        }
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
        return Err(format!("{} is not a size", quote(text)));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{} is not a size", quote(text)))?;
    let bytes = (value * 2f64.powi(shift)).round();
    if !(0.0..9.0e18).contains(&bytes) {
        return Err(format!("size {} is out of range", quote(text)));
    }
    // In range by the check above.
    Ok(bytes as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(iec(0), "0 B");
        assert_eq!(iec(1023), "1023 B");
        assert_eq!(iec(1024), "1.0 KiB");
        assert_eq!(iec(1536 * 1024), "1.5 MiB");
        assert_eq!(iec(-4096), "-4.0 KiB");
        assert_eq!(iec(1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(iec(i128::from(i64::MAX)), "8.0 EiB");
        assert_eq!(iec_delta(2048), "+2.0 KiB");
        assert_eq!(iec_delta(-10), "-10 B");
        assert_eq!(signed(3), "+3");
    }

    #[test]
    fn parses() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1.5MiB"), Ok(1_572_864));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert!(parse_size("1.5 furlongs").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(parse_size("64KB"), Ok(65536));
        assert_eq!(parse_size("1 mb"), Ok(1 << 20));
        assert_eq!(
            parse_size("-1"),
            Err("size '-1' is negative; sizes are 0 or more".to_string())
        );
        assert!(parse_size("1e30").is_err());
    }
}
