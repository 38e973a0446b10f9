//! Metrics in the Prometheus text exposition format, version 0.0.4, for `GET /metrics`: a
//! small encoder ([`Exposition`]) and the two kinds of series an application keeps itself, a
//! [`Histogram`] with fixed buckets and a [`Family`] of series by label values, bounded in
//! how many it holds.
//!
//! Written here rather than taken from the `prometheus` crate: the server needs counters,
//! gauges and histograms written as text, which is a few hundred lines, and that crate (with
//! its protobuf and its global registry) would cost more to compile than the whole of this
//! crate's server half. The format's rules that matter for safety are kept: label values are
//! escaped (`\\`, `\"`, `\n`), help text is escaped (`\\`, `\n`), and metric and label names
//! are the caller's constants, never a peer's text.
//!
//! The server half serves the exposition with the application's families appended
//! ([`Observer`](crate::Observer)); nothing here does I/O.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The `Content-Type` of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a metric family is, as its `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A value that only goes up (its name ends in `_total`).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Observations counted in cumulative buckets, with their sum and count.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// A metrics page being written: families one after another, each its `# HELP` and `# TYPE`
/// lines and then its samples.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a family: its name (a constant of the caller's, `[a-zA-Z_:][a-zA-Z0-9_:]*`), what
    /// it is, and what it means.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {}", kind.as_str());
        self
    }

    /// One sample of a counter or gauge family started with [`family`](Self::family).
    /// Label names are the caller's constants; label values may be anything and are escaped.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.text.push_str(name);
        self.labels(labels, None);
        self.text.push(' ');
        self.value(value);
        self.text.push('\n');
        self
    }

    /// The samples of one histogram series (`_bucket` for each bound and `+Inf`, `_sum`,
    /// `_count`) of a family started with [`family`](Self::family).
    pub fn histogram(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        histogram: &Histogram,
    ) -> &mut Self {
        let mut cumulative = 0u64;
        for (bound, count) in histogram.bounds.iter().zip(&histogram.counts) {
            cumulative += count;
            let le = format_value(*bound);
            let _ = write!(self.text, "{name}_bucket");
            self.labels(labels, Some(&le));
            let _ = writeln!(self.text, " {cumulative}");
        }
        let _ = write!(self.text, "{name}_bucket");
        self.labels(labels, Some("+Inf"));
        let _ = writeln!(self.text, " {}", histogram.count);
        let _ = write!(self.text, "{name}_sum");
        self.labels(labels, None);
        self.text.push(' ');
        self.value(histogram.sum);
        self.text.push('\n');
        let _ = write!(self.text, "{name}_count");
        self.labels(labels, None);
        let _ = writeln!(self.text, " {}", histogram.count);
        self
    }

    /// The page as text.
    pub fn into_text(self) -> String {
        self.text
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<&str>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.text.push('{');
        let mut first = true;
        for (name, value) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
            if !first {
                self.text.push(',');
            }
            first = false;
            self.text.push_str(name);
            self.text.push_str("=\"");
            escape_label_value(&mut self.text, value);
            self.text.push('"');
        }
        self.text.push('}');
    }

    fn value(&mut self, value: f64) {
        self.text.push_str(&format_value(value));
    }
}

/// A sample value as the format writes it: `+Inf`, `-Inf` and `NaN` by those names, whole
/// numbers without a fraction.
fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        // Rust's `Display` for f64 is the shortest text that reads back as the same number,
        // without an exponent; both are valid Go `ParseFloat` input.
        format!("{value}")
    }
}

/// A label value: `\` as `\\`, `"` as `\"`, a line feed as `\n`; everything else as it is
/// (the format is UTF-8).
fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Help text: `\` as `\\` and a line feed as `\n`.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The bucket bounds of a call's duration, in seconds: from a millisecond (a cached answer) to
/// five minutes (a long tool), roughly doubling.
pub const DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// Observations counted in fixed buckets, with their sum and count.
#[derive(Debug, Clone)]
pub struct Histogram {
    bounds: &'static [f64],
    /// How many observations fell in each bucket (not cumulative): at most its bound and
    /// above the previous one.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (increasing; `+Inf` is implied).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation.
    pub fn observe(&mut self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|&b| value <= b) {
            self.counts[i] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    /// How many observations were counted.
    pub fn count(&self) -> u64 {
        self.count
    }
}

impl Default for Histogram {
    /// Over [`DURATION_BUCKETS`].
    fn default() -> Self {
        Self::new(DURATION_BUCKETS)
    }
}

/// The label values every series past a [`Family`]'s limit is counted under.
pub const OVERFLOW_LABEL: &str = "_other";

/// Series of one metric by their label values, at most `limit` of them: past it, a new
/// combination is counted under [`OVERFLOW_LABEL`] in every label, so that a peer who picks
/// label values (tool names, say) cannot make the page, or the memory, grow without bound.
#[derive(Debug, Clone)]
pub struct Family<V> {
    series: BTreeMap<Vec<String>, V>,
    limit: usize,
}

impl<V: Default> Family<V> {
    /// An empty family of at most `limit` series (plus the overflow series).
    pub fn new(limit: usize) -> Self {
        Self {
            series: BTreeMap::new(),
            limit,
        }
    }

    /// The series of `labels` (values in the order of the family's label names), made if
    /// missing, or the overflow series when the family is full.
    pub fn series(&mut self, labels: &[&str]) -> &mut V {
        let key: Vec<String> = labels.iter().map(|&l| l.to_owned()).collect();
        let key = if self.series.contains_key(&key) || self.series.len() < self.limit {
            key
        } else {
            vec![OVERFLOW_LABEL.to_owned(); labels.len()]
        };
        self.series.entry(key).or_default()
    }
}

impl<V> Family<V> {
    /// Every series, by label values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[String], &V)> {
        self.series.iter().map(|(k, v)| (k.as_slice(), v))
    }
}

/// Writes the series of `family` under `name` with `label_names`, each as [`Exposition::sample`]
/// does with the value `value` gives.
pub fn write_family<V>(
    out: &mut Exposition,
    name: &str,
    label_names: &[&str],
    family: &Family<V>,
    value: impl Fn(&V) -> f64,
) {
    for (values, v) in family.iter() {
        let labels: Vec<(&str, &str)> = label_names
            .iter()
            .copied()
            .zip(values.iter().map(String::as_str))
            .collect();
        out.sample(name, &labels, value(v));
    }
}

#[cfg(test)]
mod tests;
