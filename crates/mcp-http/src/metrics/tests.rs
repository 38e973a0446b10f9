//! The encoder's text, line by line, for the cases the format is strict about.

use super::*;

#[test]
fn a_counter_family_is_written_with_help_type_and_escaped_labels() {
    let mut out = Exposition::new();
    out.family("x_total", Kind::Counter, "what\\it\ncounts")
        .sample("x_total", &[("tool", "a\"b\\c\nd")], 3.0)
        .sample("x_total", &[], 0.5);
    assert_eq!(
        out.into_text(),
        "# HELP x_total what\\\\it\\ncounts\n\
         # TYPE x_total counter\n\
         x_total{tool=\"a\\\"b\\\\c\\nd\"} 3\n\
         x_total 0.5\n"
    );
}

#[test]
fn a_histogram_is_cumulative_and_ends_with_inf_sum_and_count() {
    let mut h = Histogram::new(&[0.1, 1.0]);
    h.observe(0.05);
    h.observe(0.5);
    h.observe(7.0);
    assert_eq!(h.count(), 3);
    let mut out = Exposition::new();
    out.family("d_seconds", Kind::Histogram, "d")
        .histogram("d_seconds", &[("up", "s")], &h);
    let text = out.into_text();
    let samples: Vec<&str> = text.lines().skip(2).collect();
    assert_eq!(
        samples,
        [
            "d_seconds_bucket{up=\"s\",le=\"0.1\"} 1",
            "d_seconds_bucket{up=\"s\",le=\"1\"} 2",
            "d_seconds_bucket{up=\"s\",le=\"+Inf\"} 3",
            "d_seconds_sum{up=\"s\"} 7.55",
            "d_seconds_count{up=\"s\"} 3",
        ]
    );
}

#[test]
fn special_values_have_the_formats_names() {
    assert_eq!(format_value(f64::INFINITY), "+Inf");
    assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
    assert_eq!(format_value(f64::NAN), "NaN");
    assert_eq!(format_value(0.0025), "0.0025");
    assert_eq!(format_value(42.0), "42");
}

#[test]
fn a_full_family_counts_new_series_under_the_overflow_label() {
    let mut family: Family<u64> = Family::new(2);
    *family.series(&["a", "1"]) += 1;
    *family.series(&["b", "1"]) += 1;
    *family.series(&["c", "1"]) += 1;
    *family.series(&["d", "1"]) += 1;
    // A series that exists still counts under its own labels.
    *family.series(&["a", "1"]) += 1;
    let got: Vec<(Vec<String>, u64)> = family.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    assert_eq!(
        got,
        [
            (vec!["_other".to_owned(), "_other".to_owned()], 2),
            (vec!["a".to_owned(), "1".to_owned()], 2),
            (vec!["b".to_owned(), "1".to_owned()], 1),
        ]
    );
}
